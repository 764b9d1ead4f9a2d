"""Console benchmark: `auditor serve`'s triage on the bench catalog, the same 50 urns of 9 states
as bench/triage_bench.py, against the cold CLI and the import floor, in one run.

    python bench/scan_bench.py --n 100000 --store postgres --search elasticsearch   # seeds once
    python bench/serve_bench.py --store postgres --search elasticsearch

Rounds: (1) one user, each urn asked of `/api/triage` in turn (p50/p95/p99; target p95 < 200 ms);
(2) `--users` (20) users at once, each asking every urn in its own order (p50/p95/p99, errors;
target p95 < 1 s, no error); (3) the cold CLI: `auditor triage URN --format json`, a fresh
process per urn (median; target under 1 s), beside the import floor (the interpreter and the
libraries a triage needs, timed here). Every verdict is checked against the state made (a
malformed urn: refused, HTTP 400 / exit 2). Every change is put back afterwards. Not a timed
test: the figures go to stdout, one JSON line last.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from triage_bench import (  # noqa: E402
    EXPECTED,
    Breakage,
    _env,
    asked,
    cli_verdict,
    floor_imports,
    pick,
    triage,
)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(round(p * len(ordered))) - 1)]


def figures(times: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(1000 * statistics.median(times), 1),
        "p95_ms": round(1000 * pct(times, 0.95), 1),
        "p99_ms": round(1000 * pct(times, 0.99), 1),
        "max_ms": round(1000 * max(times), 1),
    }


class Client:
    """One user: a kept-alive HTTP connection to the console."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def ask(self, text: str) -> tuple[float, int, dict[str, Any]]:
        path = "/api/triage?" + urlencode({"q": text}, quote_via=quote)
        began = time.monotonic()
        try:
            self.conn.request("GET", path)
            answer = self.conn.getresponse()
            body = answer.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            return time.monotonic() - began, 0, {}
        return time.monotonic() - began, answer.status, json.loads(body)


def verdict_of(status: int, out: dict[str, Any]) -> str | None:
    if status == 400:
        return "refused"
    return out.get("verdict") if status == 200 else f"HTTP {status}"


def one_user(port: int, work: list[tuple[str, str]], pid: int) -> dict[str, Any]:
    import psutil

    client = Client(port)
    times, walks, wrong = [], [], []
    cpu_before = sum(psutil.Process(pid).cpu_times()[:2])
    for state, text in work:
        took, status, out = client.ask(text)
        times.append(took)
        if status == 200:
            walks.append(out["seconds"])
        if verdict_of(status, out) != EXPECTED[state]:
            wrong.append((state, text, status, verdict_of(status, out)))
    cpu = sum(psutil.Process(pid).cpu_times()[:2]) - cpu_before
    result = {
        "round": "one user",
        "requests": len(times),
        **figures(times),
        "walk_p50_ms": round(1000 * statistics.median(walks), 1),  # the triage itself, no HTTP
        "console_cpu_ms_per_request": round(1000 * cpu / len(times), 1),
        "wrong_verdicts": wrong,
    }
    print(
        f"one user: p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms, p99 {result['p99_ms']} ms "
        f"(the walk alone p50 {result['walk_p50_ms']} ms; the console's CPU "
        f"{result['console_cpu_ms_per_request']} ms a request)"
    )
    return result


def many_users(port: int, work: list[tuple[str, str]], users: int) -> dict[str, Any]:
    times: list[float] = []
    errors: list[Any] = []
    lock = threading.Lock()

    def user(i: int) -> None:
        mine = list(work)
        random.Random(i).shuffle(mine)
        client = Client(port)
        for state, text in mine:
            took, status, out = client.ask(text)
            with lock:
                times.append(took)
                if verdict_of(status, out) != EXPECTED[state]:
                    errors.append((state, status, verdict_of(status, out)))

    began = time.monotonic()
    threads = [threading.Thread(target=user, args=(i,)) for i in range(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - began
    result = {
        "round": f"{users} users at once",
        "requests": len(times),
        "per_second": round(len(times) / wall, 1),
        **figures(times),
        "errors": errors[:20],
        "error_count": len(errors),
    }
    print(
        f"{users} users: p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms, p99 {result['p99_ms']} ms, "
        f"{result['per_second']}/s, {len(errors)} errors"
    )
    return result


def cpu_of(fn: Any) -> tuple[Any, float]:
    """fn()'s result and the CPU seconds (user + system) its child processes used: on a loaded
    machine the wall time swings with the neighbours, the CPU time much less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = fn()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def floor_cpu(env: dict[str, str], store: str, search: str, runs: int = 5) -> tuple[float, float]:
    """What any triage process pays before its own code runs: the interpreter and the libraries
    it needs with this store and search cluster (triage_bench.floor_imports); wall and CPU
    medians."""
    imports = floor_imports(store, search)
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = cpu_of(lambda: _timed(env, imports))
        walls.append(wall)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus)


def _timed(env: dict[str, str], code: str) -> float:
    began = time.monotonic()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    return time.monotonic() - began


def cold_cli(env: dict[str, str], work: list[tuple[str, str]]) -> dict[str, Any]:
    times, cpus, wrong = [], [], []
    for state, text in work:
        (took, code, out, err), cpu = cpu_of(lambda text=text: triage(env, text))
        times.append(took)
        cpus.append(cpu)
        verdict = cli_verdict(code, out)  # the refusal's error object on stdout counts as refused
        if verdict != EXPECTED[state]:
            wrong.append((state, text, code, verdict, err.strip()[:200]))
    result = {
        "round": "cold CLI (a process per urn)",
        "requests": len(times),
        "median_s": round(statistics.median(times), 3),
        "p95_s": round(pct(times, 0.95), 3),
        "median_cpu_s": round(statistics.median(cpus), 3),
        "wrong_verdicts": wrong,
    }
    print(
        f"cold CLI: median {result['median_s']:.2f} s (CPU {result['median_cpu_s']:.2f} s), "
        f"p95 {result['p95_s']:.2f} s"
    )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="postgres", choices=["mariadb", "postgres"])
    parser.add_argument("--search", default="elasticsearch", choices=["opensearch", "elasticsearch"])
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=8, help="the console's --sessions")
    parser.add_argument("--no-cli", action="store_true", help="skip the cold CLI round")
    args = parser.parse_args()
    breakage = Breakage(args.store, args.search)
    urns = pick(breakage.engine)
    work = [(state, asked(state, urn)) for state, members in urns.items() for urn in members]
    breakage.apply(urns)
    load_before = os.getloadavg()[0]
    results: list[dict[str, Any]] = []
    try:
        run(args, urns, work, results)
    finally:
        breakage.undo()
    load = {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}
    print(f"load average (1 min): {load['before']} before, {load['after']} after")
    print(
        json.dumps(
            {"bench": "serve", "store": args.store, "search": args.search, "load": load, "rounds": results}
        )
    )
    bad = any(r.get("wrong_verdicts") or r.get("error_count") for r in results)
    return 1 if bad else 0


def run(
    args: Any, urns: dict[str, list[str]], work: list[tuple[str, str]], results: list[dict[str, Any]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = _env(args.store, args.search, None)
        sys.path.insert(0, str(ROOT / "tests" / "scenarios"))
        from serving import Served

        served = Served(env, Path(tmp) / "serve.log", "--sessions", str(args.sessions), "--no-access-log")
        try:
            deadline = time.monotonic() + 60
            while served.json("/readyz")[0] != 200 and time.monotonic() < deadline:
                time.sleep(0.2)
            for _state, text in work:  # each urn once first: what a warm console has seen
                Client(served.port).ask(text)
            results.append(one_user(served.port, work, served.proc.pid))
            results.append(many_users(served.port, work, args.users))
        finally:
            code = served.stop()
            said = "\n".join(line for line in served.said().splitlines() if "auditor serve: http" not in line)
            if code != 0 or said:
                print(f"the console exited {code}: {said[:2000]}")
        if not args.no_cli:
            triage(env, urns["consistent"][0])  # the bytecode, written once
            floor, floor_cpu_s = floor_cpu(env, args.store, args.search)
            print(
                f"import floor (interpreter + the libraries this triage needs): {floor:.2f} s, "
                f"CPU {floor_cpu_s:.2f} s"
            )
            cli = cold_cli(env, work)
            cli["import_floor_s"] = round(floor, 3)
            cli["import_floor_cpu_s"] = round(floor_cpu_s, 3)
            cli["median_over_floor"] = round(cli["median_s"] / floor, 2)
            cli["cpu_over_floor"] = round(cli["median_cpu_s"] / floor_cpu_s, 2)
            print(
                f"cold CLI: median {cli['median_s']:.2f} s = {cli['median_over_floor']:.2f}x the floor "
                f"(CPU {cli['cpu_over_floor']:.2f}x)"
            )
            results.append(cli)


if __name__ == "__main__":
    sys.exit(main())
