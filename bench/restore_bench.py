"""Memory of a scan after a search restore: the bench catalog's table read against empty indices.

    python bench/scan_bench.py --n 100000 --store postgres --search elasticsearch   # seed once
    python bench/restore_bench.py --store postgres --search elasticsearch [-t dataset]

A search cluster restored from an old snapshot, or rebuilt empty, leaves every entity of the
table without its documents: the join finds an entity document, a system-metadata document per
aspect and an edge per relationship missing, about 13 findings an entity on this catalog, and
every one of them is re-observed, judged and counted. This bench makes empty copies of the
`bench` prefix's indices (same mappings) under `benchrestored`, then runs the command line's
`auditor scan -f json` three times, each in a fresh process with a state file of its own: against
the consistent `bench` indices (nothing found: the scan's own memory), then twice against the
empty ones (the first sight, and the second, which reads every finding's history back as a
scheduled scan does). It prints each run's findings, wall time and peak RSS (wait4's: the
largest of the scan's process and the reader processes it waited for, not their sum; and the
peak of their sum, sampled every 0.1 s, which is what a pod's memory limit counts), and the
memory the findings add: (restored peak - consistent peak) per 100,000 findings. The empty indices
and the state file are removed at the end. Kafka is left out (no offsets: time-only evidence): no
setting is inherited from the shell.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox.endpoints import Endpoints  # noqa: E402

# another catalog beside the default one, as bench/scan_bench.py seeds it: BENCH_PREFIX, BENCH_TABLE
PREFIX = os.environ.get("BENCH_PREFIX") or "bench"
EMPTY = f"{PREFIX}restored"
TABLE = os.environ.get("BENCH_TABLE") or "metadata_aspect_v2_bench"


def empty_copies(search: str) -> list[str]:
    """Empty indices named as the bench prefix's, with their mappings."""
    from sandbox.search import connect

    client = connect(search)
    made = []
    for index in client.list_indices(f"{PREFIX}_*"):
        copy = EMPTY + index[len(PREFIX) :]
        client.delete_index(copy)
        client.ensure_index(copy, client.mappings(index))
        made.append(copy)
    if not made:
        raise SystemExit(f"no {PREFIX}_* indices: seed the catalog with bench/scan_bench.py first")
    return made


def scan(
    store: str, search: str, prefix: str, types: list[str], state: Path, repair: bool = False
) -> dict[str, Any]:
    """`auditor scan` in a fresh process: its findings, wall time and peak RSS (wait4's); with
    `repair`, `auditor rebuild after-restore --mode reindex --apply` instead (its scan, the window's
    reindex, its final scan)."""
    from auditor import platforms
    from auditor.settings import env_names

    endpoints = Endpoints.from_env()
    # nothing the settings would read is inherited (a Kafka or a config file of the shell's):
    # every setting's variables, the auditor's and each platform's, and their _FILE forms
    read = {"AUDITOR_CONFIG"}
    for names in env_names(platforms.environments()).values():
        read.update(names)
        read.update(f"{name}_FILE" for name in names)
    env = {
        **{k: v for k, v in os.environ.items() if k not in read},
        "AUDITOR_STORE_URL": endpoints.store_url(store),
        "AUDITOR_SEARCH_URL": endpoints.search_url(search),
        "AUDITOR_STORE_TABLE": TABLE,
        "AUDITOR_INDEX_PREFIX": prefix,
        "AUDITOR_STATE_FILE": str(state),
    }
    with tempfile.NamedTemporaryFile(suffix=".json") as out, tempfile.TemporaryFile() as err:
        command = [sys.executable, "-m", "auditor.cli", "scan", "-f", "json", "-o", out.name]
        for entity_type in types:
            command += ["-t", entity_type]
        if repair:
            evidence = Path(out.name).with_suffix("")
            command = [sys.executable, "-m", "auditor.cli", "rebuild", "after-restore", "--mode", "reindex",
                       "--apply", "--evidence", str(evidence)]  # fmt: skip
        started = time.monotonic()
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=err)
        sampler = TreeRss(child.pid)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the bench's
        sampler.stop()
        seconds = time.monotonic() - started
        code = child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        if code not in (0, 1):
            err.seek(0)
            raise SystemExit(f"{command[3]} exited {code}: {err.read().decode(errors='replace')[-2000:]}")
        if repair:
            done = json.loads(evidence.with_suffix(".json").read_text())
            behind = sum((done.get("behind") or {}).values())
            final = done.get("final_counts")
            print(f"after-restore: behind {behind:,}, since {done.get('since')}, final {final}")
            report = {"counts": [{"count": behind}], "entities": {"": 0}}
        else:
            report = json.loads(Path(out.name).read_text())  # the report replaces the file: read by name
    findings = sum(row["count"] for row in report["counts"])
    return {
        "prefix": prefix,
        "exit": code,
        "entities": sum(report["entities"].values()),
        "findings": findings,
        "seconds": round(seconds, 2),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "pod_peak_mib": round(sampler.peak / 1024 / 1024, 1),
    }


class TreeRss:
    """The peak of the summed RSS of a process and its descendants (the scan and its reader
    processes), sampled every 0.1 s: what a pod's or a cgroup's memory limit counts."""

    def __init__(self, pid: int) -> None:
        import threading

        self.pid, self.peak, self._done = pid, 0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, sum(_rss(p) for p in _tree(self.pid)))
            self._done.wait(0.1)

    def stop(self) -> None:
        self._done.set()
        self.thread.join()


def _tree(pid: int) -> list[int]:
    """The process and its descendants, by /proc's children lists."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
        except OSError:
            continue
    return out


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default="postgres", choices=("postgres", "mariadb"))
    parser.add_argument("--search", default="elasticsearch", choices=("opensearch", "elasticsearch"))
    parser.add_argument("-t", "--entity-type", action="append", default=[], help="only these types")
    parser.add_argument(
        "--after-restore",
        action="store_true",
        help="then run `rebuild after-restore --mode reindex --apply` on the empty copies (measured alike)",
    )
    args = parser.parse_args()
    made = empty_copies(args.search)
    states = tempfile.TemporaryDirectory()
    try:
        clean = scan(args.store, args.search, PREFIX, args.entity_type, Path(states.name) / "clean.sqlite")
        state = Path(states.name) / "restored.sqlite"
        first = scan(args.store, args.search, EMPTY, args.entity_type, state)
        second = scan(args.store, args.search, EMPTY, args.entity_type, state)
        repaired = (
            scan(args.store, args.search, EMPTY, [], state, repair=True) if args.after_restore else None
        )
    finally:
        states.cleanup()
        from sandbox.search import connect

        client = connect(args.search)
        for index in made:
            client.delete_index(index)
    per: dict[str, float] = {}
    runs = [("consistent", clean), ("restored, first sight", first), ("restored, second", second)]
    runs += [("after-restore --apply", repaired)] if repaired else []
    for name, run in runs:
        added = run["peak_rss_mib"] - clean["peak_rss_mib"]
        per[name] = round(added / run["findings"] * 100_000, 1) if run["findings"] else 0.0
        print(
            f"{name:>22}: {run['entities']:,} entities, {run['findings']:,} findings, "
            f"{run['seconds']:.1f} s, peak RSS {run['peak_rss_mib']:.0f} MiB, with its readers (a pod's "
            f"count) {run['pod_peak_mib']:.0f} MiB (exit {run['exit']})"
            + (f", {per[name]:.1f} MiB per 100,000 findings more" if run["findings"] else "")
        )
    print(json.dumps({"clean": clean, "first": first, "second": second, "after_restore": repaired,
                      "mib_per_100k_findings": per}))  # fmt: skip


if __name__ == "__main__":
    main()
