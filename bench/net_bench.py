"""Distance benchmark: the auditor 0, 1 and 5 ms from its database and search cluster.

    python bench/net_bench.py                              # both platforms, direct + 0, 1, 5 ms
    python bench/net_bench.py --rtt 5 --runs 3 --only openmetadata
    python bench/net_bench.py --rtt direct,5 --runs 5 --only openmetadata --scan-only

A delaying TCP proxy of the bench's own (bench/delay_proxy.py) stands in front of the store and
the search cluster; only the auditor's connections go through it, the seeding goes straight.
Kafka and the schema registry stay local: a Kafka client connects to the address the broker
advertises, not to the one it was given, so a proxy in front of the bootstrap address would
delay only the first request. DataHub's change log is a busy one of the bench's own (`BusyLog`:
topics and a MAE group that consumes and commits another entity's event every 0.1 s on each
partition), the case where a triage's visibility wait can cost the most. The proxy's added
delay is measured first (a trivial request through it against straight, per server) and
printed. Levels: `direct` (no proxy: loopback), then each round-trip time through the proxy
(0 ms: the proxy's own cost, and its round-trip count).

Measured at each level, each `--runs` times, with the round trips (turns of the conversation:
the client speaking after the server answered) and connections the proxies saw:

- triage, cold (a fresh process per run, as on call), both platforms: by id, by name, and of
  an orphan document. DataHub has no name look-up: its "by name" is the urn pasted as a
  DataHub URL (decoded by the triage);
- a scan of the catalog (DataHub: bench/scan_bench.py's catalog, `--dh-n` entities, under a
  prefix of its own; OpenMetadata: bench/om_scan_bench.py's, `--om-entities`, in a scratch
  database), entities per second;
- the console: `auditor serve`, one `/api/triage` request of a DataHub urn, warm;
- a targeted repair: `rebuild reindex --urn URN --apply` of a document edited behind
  DataHub's back (edited again before each run).

Not a timed test: a table on stdout, one JSON line last. The OpenMetadata database and indices
are dropped after; the DataHub catalog is kept for the next run (`--drop` drops it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
# the DataHub catalog under names of its own, so bench/scan_bench.py's stays as it is (set
# before scan_bench is imported: its seeding's child processes read them too)
os.environ.setdefault("BENCH_PREFIX", "netbench")
os.environ.setdefault("BENCH_TABLE", "metadata_aspect_v2_netbench")

import scan_bench  # noqa: E402
from delay_proxy import DelayProxy, added_delay_ms  # noqa: E402
from sqlalchemy import text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402
from triage_bench import import_floor  # noqa: E402

from sandbox.endpoints import Endpoints  # noqa: E402

SEARCH_VAR = {"opensearch": "SANDBOX_OPENSEARCH", "opensearch3": "SANDBOX_OPENSEARCH3",
              "elasticsearch": "SANDBOX_ELASTICSEARCH"}  # fmt: skip
STORE_VAR = {"postgres": "SANDBOX_PG_URL", "mariadb": "SANDBOX_MYSQL_URL"}
HOUR = 3_600_000
ORPHAN = "urn:li:dataset:(urn:li:dataPlatform:hive,netbench.orphan_left_behind,PROD)"


class Net:
    """A store and a search cluster behind delaying proxies, at one level at a time."""

    def __init__(self, store_url: str, search_url: str) -> None:
        url = make_url(store_url)
        split = urlsplit(search_url)
        self.store_url, self.search_url = store_url, search_url
        self.store = DelayProxy(url.host or "127.0.0.1", int(url.port or 5432), name="store").start()
        self.search = DelayProxy(
            split.hostname or "127.0.0.1", int(split.port or 9200), name="search"
        ).start()
        self.level: str | float = "direct"

    def close(self) -> None:
        self.store.stop()
        self.search.stop()

    def at(self, level: str | float) -> None:
        self.level = level
        for proxy in (self.store, self.search):
            proxy.set_rtt(0.0 if level == "direct" else float(level))

    def urls(self) -> tuple[str, str]:
        """The store's and the search cluster's URL at this level (the proxies' unless direct)."""
        if self.level == "direct":
            return self.store_url, self.search_url
        store = make_url(self.store_url).set(host="127.0.0.1", port=self.store.port)
        split = urlsplit(self.search_url)
        search = urlunsplit(split._replace(netloc=f"127.0.0.1:{self.search.port}"))
        return store.render_as_string(hide_password=False), search

    def counts(self) -> dict[str, int]:
        a, b = self.store.counts(), self.search.counts()
        return {
            "round_trips": a["round_trips"] + b["round_trips"],
            "store_round_trips": a["round_trips"],
            "search_round_trips": b["round_trips"],
            "connections": a["connections"] + b["connections"],
        }


def counted(net: Net, fn: Callable[[], Any]) -> tuple[float, dict[str, int], Any]:
    """fn's wall time, what the proxies saw meanwhile (nothing at `direct`), fn's result."""
    before = net.counts()
    began = time.perf_counter()
    out = fn()
    took = time.perf_counter() - began
    after = net.counts()
    seen = {k: after[k] - before[k] for k in after} if net.level != "direct" else {}
    return took, seen, out


def delay_check(net: Net) -> dict[str, Any]:
    """What each proxy adds to a trivial request at the current level (measured, not assumed):
    `SELECT 1` on a kept connection, `GET /` on a kept-alive one; through against straight."""
    import http.client

    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    conns: dict[int, Any] = {}

    def http_probe(port: int) -> None:
        if port not in conns:
            conns[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conns[port].request("GET", "/")
        conns[port].getresponse().read()

    def sql_probe(port: int) -> None:
        if port not in conns:
            url = make_url(net.store_url).set(host="127.0.0.1", port=port)
            conns[port] = create_engine(url, poolclass=NullPool).connect()
        conns[port].execute(text("SELECT 1")).scalar()

    try:
        return {
            "store": added_delay_ms(net.store, sql_probe),
            "search": added_delay_ms(net.search, http_probe),
        }
    finally:
        for conn in conns.values():
            conn.close()


def summary(times: list[float], seen: list[dict[str, int]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "runs": len(times),
        "median_ms": round(1000 * statistics.median(times), 1),
        "min_ms": round(1000 * min(times), 1),
        "max_ms": round(1000 * max(times), 1),
    }
    if seen and seen[0]:
        for key in seen[0]:
            out[key] = int(statistics.median(s[key] for s in seen))
    return out


def repeat(net: Net, runs: int, fn: Callable[[], Any], check: Callable[[Any], str | None]) -> dict[str, Any]:
    """fn `runs` times, each timed and counted; check(result) says what was wrong, if anything."""
    times, seen, wrong = [], [], []
    for _ in range(runs):
        took, counts, result = counted(net, fn)
        times.append(took)
        seen.append(counts)
        said = check(result)
        if said:
            wrong.append(said)
    return {**summary(times, seen), "wrong": wrong[:3]}


def cli(args: list[str], env: dict[str, str]) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run(
        [sys.executable, "-m", "auditor.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        out = json.loads(done.stdout) if done.stdout.strip() else {}
    except json.JSONDecodeError:
        out = {}
    return done.returncode, out, done.stderr


def verdict_is(expected: str) -> Callable[[tuple[int, dict[str, Any], str]], str | None]:
    def check(result: tuple[int, dict[str, Any], str]) -> str | None:
        code, out, err = result
        got = out.get("verdict")
        return None if got == expected else f"exit {code}, verdict {got}: {err.strip()[-300:]}"

    return check


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed tool has its bytecode
    return env


# -- DataHub -----------------------------------------------------------------------------------


class BusyLog:
    """DataHub's change log as a busy deployment has it: topics and a MAE group of the bench's own
    (the stack's default ones are shared with the tests, whose consumers decided whether the
    group had moved lately), an event of some other entity every 0.1 s on each partition,
    consumed and committed as it comes. A triage's visibility wait rests on what the group
    consumed lately, so this is the case where it can cost the most."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.topics = ("netbench-MCL_Versioned", "netbench-MCL_Timeseries")
        self.group = "netbench-mae"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="busy-log", daemon=True)

    def env(self) -> dict[str, str]:
        return {
            "AUDITOR_MCL_VERSIONED_TOPIC": self.topics[0],
            "AUDITOR_MCL_TIMESERIES_TOPIC": self.topics[1],
            "AUDITOR_MAE_CONSUMER_GROUP": self.group,
        }

    def __enter__(self) -> BusyLog:
        from sandbox.topics import ensure_topics

        ensure_topics(self.bootstrap, {self.topics[0]: 4, self.topics[1]: 2})
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        from sandbox.topics import admin_client

        self.stop.set()
        self.thread.join(30)
        admin = admin_client(self.bootstrap)
        admin.delete_consumer_groups([self.group])
        admin.delete_topics(list(self.topics), operation_timeout=30)

    def _run(self) -> None:
        from confluent_kafka import Consumer, Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0})
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                             "enable.auto.commit": False, "auto.offset.reset": "latest"})  # fmt: skip
        consumer.subscribe([self.topics[0]])
        i = 0
        try:
            while not self.stop.is_set():
                for p in range(4):
                    key = f"urn:li:dataset:(urn:li:dataPlatform:hive,netbench.busy_{p},PROD)"
                    producer.produce(self.topics[0], key=key, value=b"busy %d" % i, partition=p)
                producer.poll(0)
                if consumer.consume(100, timeout=0.1):
                    consumer.commit(asynchronous=False)
                i += 1
        finally:
            producer.flush(10)
            consumer.close()


class DataHub:
    """bench/scan_bench.py's catalog under a prefix of its own, an orphan document, a document
    edited behind DataHub's back for the repair."""

    def __init__(self, store: str, search: str, n: int) -> None:
        from sandbox.database import engine_for
        from sandbox.naming import entity_doc_id, entity_index
        from sandbox.search import connect

        self.store_kind, self.search_kind, self.n = store, search, n
        self.endpoints = Endpoints.from_env()
        self.engine = engine_for(store, self.endpoints)
        self.client = connect(search, self.endpoints)
        self.index = entity_index("dataset", scan_bench.PREFIX)
        self.doc_id = entity_doc_id

    def ensure(self) -> None:
        try:
            counts = scan_bench.run_child("counts", self.store_kind, self.search_kind)
            ok = counts["entity"] == self.n and counts["rows"] > 0 and counts["sysmeta"] == counts["rows"]
        except subprocess.CalledProcessError:
            ok = False
        if not ok:
            scan_bench.seed(self.store_kind, self.search_kind, self.n)
        with self.engine.connect() as conn:
            urns = [
                r[0]
                for r in conn.execute(
                    text(
                        f"SELECT urn FROM {scan_bench.TABLE} WHERE version = 0 "
                        "AND aspect = 'datasetProperties' AND urn LIKE 'urn:li:dataset:%' "
                        "ORDER BY urn LIMIT 2"
                    )
                )
            ]
        self.urn, self.repaired = urns
        self.original = self.client.get(self.index, self.doc_id(self.repaired))
        self.client.upsert(self.index, self.doc_id(ORPHAN), {"urn": ORPHAN, "name": "orphan_left_behind"})
        self.client.refresh(self.index)

    def break_doc(self) -> None:
        self.client.upsert(self.index, self.doc_id(self.repaired), {"name": "renamed behind DataHub's back"})
        self.client.refresh(self.index)

    def undo(self) -> None:
        self.client.delete(self.index, self.doc_id(ORPHAN))
        self.client.bulk_put(self.index, [(self.doc_id(self.repaired), self.original)])
        self.client.refresh(self.index)

    def env(self, net: Net, state: Path, log: BusyLog) -> dict[str, str]:
        store_url, search_url = net.urls()
        return {
            **base_env(),
            **log.env(),
            "AUDITOR_STORE_URL": store_url,
            "AUDITOR_SEARCH_URL": search_url,
            "AUDITOR_KAFKA_BOOTSTRAP": self.endpoints.kafka,  # local: see the module's docstring
            "AUDITOR_SCHEMA_REGISTRY_URL": self.endpoints.registry,
            "AUDITOR_INDEX_PREFIX": scan_bench.PREFIX,
            "AUDITOR_STORE_TABLE": scan_bench.TABLE,
            "AUDITOR_STATE_FILE": str(state),
        }

    def measure(
        self, net: Net, runs: int, state: Path, log: BusyLog, scan_only: bool = False
    ) -> dict[str, Any]:
        if scan_only:
            return {"scan": self.scan(net, runs)}
        env = self.env(net, state, log)
        as_url = f"https://datahub.example.com/dataset/{quote(self.urn, safe='')}/Schema"
        out: dict[str, Any] = {}
        for what, asked, expected in (
            ("triage by id", self.urn, "consistent"),
            ("triage by name (URL)", as_url, "consistent"),
            ("triage of an orphan", ORPHAN, "diverged"),
        ):
            out[what] = repeat(
                net, runs, lambda a=asked: cli(["triage", a, "--format", "json"], env), verdict_is(expected)
            )
        out["scan"] = self.scan(net, max(1, runs // 2))
        out["console triage (warm)"] = self.console(net, runs * 3, env)
        out["repair (reindex --urn --apply)"] = self.repair(net, runs, env)
        return out

    def scan(self, net: Net, runs: int) -> dict[str, Any]:
        store_url, search_url = net.urls()
        env = {**os.environ, STORE_VAR[self.store_kind]: store_url, SEARCH_VAR[self.search_kind]: search_url}
        argv = [sys.executable, scan_bench.__file__, "--measure", "scan", "--store", self.store_kind,
                "--search", self.search_kind]  # fmt: skip

        def one() -> dict[str, Any]:
            done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, timeout=1800)
            return dict(json.loads(done.stdout.strip().splitlines()[-1]))

        return scan_figures(net, runs, one, "scan", planted=2)  # the orphan, the edited document

    def console(self, net: Net, runs: int, env: dict[str, str]) -> dict[str, Any]:
        import http.client

        sys.path.insert(0, str(ROOT / "tests" / "scenarios"))
        from serving import Served

        with tempfile.TemporaryDirectory() as tmp:
            served = Served(env, Path(tmp) / "serve.log", "--no-access-log")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=120)
                path = "/api/triage?" + urlencode({"q": self.urn}, quote_via=quote)

                def ask() -> tuple[int, dict[str, Any], str]:
                    conn.request("GET", path)
                    answer = conn.getresponse()
                    return answer.status, json.loads(answer.read()), ""

                ask()  # warm: what a console that has been asked before has
                return repeat(net, runs, ask, verdict_is("consistent"))
            finally:
                served.stop()

    def repair(self, net: Net, runs: int, env: dict[str, str]) -> dict[str, Any]:
        times, seen, wrong = [], [], []
        for _ in range(runs):
            self.break_doc()
            took, counts, (code, _out, err) = counted(
                net, lambda: cli(["rebuild", "reindex", "--urn", self.repaired, "--apply"], env)
            )
            times.append(took)
            seen.append(counts)
            doc = self.client.get(self.index, self.doc_id(self.repaired))
            if code != 0 or (doc or {}).get("name") != (self.original or {}).get("name"):
                wrong.append(f"exit {code}, name {(doc or {}).get('name')!r}: {err.strip()[-300:]}")
        return {**summary(times, seen), "wrong": wrong[:3]}


def scan_figures(
    net: Net, runs: int, one: Callable[[], dict[str, Any]], label: str, planted: int
) -> dict[str, Any]:
    """A scan's wall time and entities a second; more findings than the states planted is wrong."""
    times, seen, rates, wrong = [], [], [], []
    for _ in range(runs):
        took, counts, result = counted(net, one)
        seconds = float(result["seconds"])
        times.append(seconds)
        seen.append(counts)
        rates.append(result["count"] / seconds)
        if result.get("findings", 0) > planted:
            wrong.append(f"{label}: {result['findings']} findings, {planted} planted")
    return {
        **summary(times, seen),
        "entities": result["count"],
        "entities_per_s": round(statistics.median(rates)),
        "findings": result.get("findings"),
        "wrong": wrong[:3],
    }


# -- OpenMetadata ------------------------------------------------------------------------------


@contextmanager
def openmetadata(store: str, search: str, entities: int) -> Iterator[dict[str, Any]]:
    """bench/om_scan_bench.py's catalog in a scratch database, with an orphan document."""
    from sandbox.openmetadata.databases import scratch_database
    from sandbox.openmetadata.ddl import create_schema
    from sandbox.openmetadata.entities import now_ms
    from sandbox.openmetadata.faults import Fault
    from sandbox.openmetadata.generator import seed
    from sandbox.openmetadata.indices import create_indices, delete_indices, refresh_all
    from sandbox.openmetadata.server import OmServer
    from sandbox.search import connect

    endpoints = Endpoints.from_env()
    client = connect(search, endpoints)
    alias = f"omnet{uuid.uuid4().hex[:8]}"
    with scratch_database(store, endpoints, prefix="omnet") as engine:
        create_schema(engine)
        create_indices(client, alias)
        try:
            server = OmServer(engine, client, alias)
            started = time.perf_counter()
            seed(server, entities, seed=1)
            table = server.of_type("table")[1]
            schema = server.entities[server.of_type("table")[0].parent_id]
            gone = server.create("table", "net_orphan", schema, updated_at=now_ms() - HOUR)
            server.hard_delete(gone, fault=Fault.ORPHAN_DOC)
            refresh_all(client, alias)
            print(
                f"OpenMetadata: seeded {entities} entities in {time.perf_counter() - started:.0f} s",
                flush=True,
            )
            yield {
                "store_url": engine.url.render_as_string(hide_password=False),
                "search_url": endpoints.search_url(search),
                "alias": alias,
                "id": table.id,
                "fqn": table.fqn,
                "orphan": gone.id,
            }
        finally:
            delete_indices(client, alias)


def om_measure(
    net: Net, catalog: dict[str, Any], runs: int, state: Path, scan_only: bool = False
) -> dict[str, Any]:
    store_url, search_url = net.urls()
    env = {**base_env(), "AUDITOR_STATE_FILE": str(state)}
    common = ["--platform", "openmetadata", "--store-url", store_url, "--search-url", search_url,
              "--cluster-alias", catalog["alias"], "--format", "json", "--grace", "0"]  # fmt: skip
    out: dict[str, Any] = {}
    for what, asked, expected in (
        ()
        if scan_only
        else (
            ("triage by id", catalog["id"], "consistent"),
            ("triage by name", catalog["fqn"], "consistent"),
            ("triage of an orphan", catalog["orphan"], "in_flight"),  # no change time: unconfirmed
        )
    ):
        out[what] = repeat(net, runs, lambda a=asked: cli(["triage", a, *common], env), verdict_is(expected))
    scan_env = {**os.environ, "OM_BENCH_STORE_URL": store_url, "OM_BENCH_SEARCH_URL": search_url,
                "OM_BENCH_ALIAS": catalog["alias"]}  # fmt: skip

    def one() -> dict[str, Any]:
        argv = [sys.executable, __file__, "--om-scan-child"]
        done = subprocess.run(argv, env=scan_env, capture_output=True, text=True, check=True, timeout=1800)
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))

    scans = runs if scan_only else max(1, runs // 2)
    out["scan"] = scan_figures(net, scans, one, "OpenMetadata scan", planted=1)  # the orphan
    return out


def om_scan_child() -> int:
    """One OpenMetadata scan in this fresh process (URLs from the environment: no password on a
    command line); its wall time and entities on stdout."""
    from om_scan_bench import _settings

    from auditor.api import ScanOptions, scan
    from auditor.backends.lean import collector_on

    env = os.environ
    collector_on()
    settings = _settings(env["OM_BENCH_STORE_URL"], env["OM_BENCH_SEARCH_URL"], env["OM_BENCH_ALIAS"])
    began = time.perf_counter()
    report = scan(settings, options=ScanOptions(grace=300.0, use_state=False))
    seconds = time.perf_counter() - began
    findings = sum(report.counts.values())
    print(json.dumps({"seconds": seconds, "count": sum(report.entities.values()), "findings": findings}))
    return 0


# -- the run -----------------------------------------------------------------------------------


def levels(text_: str) -> list[str | float]:
    return [part if part == "direct" else float(part) for part in text_.split(",") if part]


def table(results: list[dict[str, Any]]) -> None:
    print(f"{'platform':<13} {'what':<32} {'rtt':>6} {'median ms':>10} {'min':>8} {'max':>8} "
          f"{'round trips':>11} {'conns':>5}  note")  # fmt: skip
    for r in results:
        for what, m in r["figures"].items():
            note = f"{m['entities_per_s']:,} entities/s" if "entities_per_s" in m else ""
            note += f" WRONG: {m['wrong'][0][:120]}" if m.get("wrong") else ""
            rtt = r["rtt_ms"] if r["rtt_ms"] == "direct" else f"{r['rtt_ms']:g} ms"
            trips, conns = m.get("round_trips", "-"), m.get("connections", "-")
            print(f"{r['platform']:<13} {what:<32} {rtt:>6} {m['median_ms']:>10.1f} {m['min_ms']:>8.1f} "
                  f"{m['max_ms']:>8.1f} {trips!s:>11} {conns!s:>5}  {note}")  # fmt: skip


def main() -> int:
    if sys.argv[1:] == ["--om-scan-child"]:
        return om_scan_child()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt", default="direct,0,1,5", help="levels: direct and/or round-trip times in ms")
    parser.add_argument("--runs", type=int, default=5, help="runs of each triage (scans: half as many)")
    parser.add_argument("--only", choices=("datahub", "openmetadata"))
    parser.add_argument("--dh-store", default="postgres", choices=sorted(STORE_VAR))
    parser.add_argument("--dh-search", default="opensearch", choices=sorted(SEARCH_VAR))
    parser.add_argument("--dh-n", type=int, default=20000, help="DataHub catalog size (entities)")
    parser.add_argument("--om-store", default="postgres", choices=sorted(STORE_VAR))
    parser.add_argument("--om-search", default="opensearch3", choices=sorted(SEARCH_VAR))
    parser.add_argument("--om-entities", type=int, default=20000)
    parser.add_argument("--drop", action="store_true", help="drop the DataHub catalog at the end")
    parser.add_argument("--scan-only", action="store_true", help="only the scans, --runs of them")
    args = parser.parse_args()
    endpoints = Endpoints.from_env()
    results: list[dict[str, Any]] = []
    checks: dict[str, Any] = {}
    floors: dict[str, float] = {}  # what any triage process pays before its own code runs
    loads = [round(os.getloadavg()[0], 2)]
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "no-state.sqlite"  # a triage on call without a scan's state file
        if args.only != "openmetadata":
            dh = DataHub(args.dh_store, args.dh_search, args.dh_n)
            dh.ensure()
            floors["datahub"] = round(import_floor(base_env(), args.dh_store, args.dh_search), 3)
            print(
                f"import floor (interpreter + libraries, fresh process): {floors['datahub']:.2f} s",
                flush=True,
            )
            net = Net(endpoints.store_url(args.dh_store), endpoints.search_url(args.dh_search))
            log = BusyLog(endpoints.kafka).__enter__()
            try:
                for level in levels(args.rtt):
                    net.at(level)
                    if level != "direct":
                        checks[f"datahub {level:g} ms"] = delay_check(net)
                        print(
                            f"added delay at {level:g} ms: {json.dumps(checks[f'datahub {level:g} ms'])}",
                            flush=True,
                        )
                    figures = dh.measure(net, args.runs, state, log, args.scan_only)
                    loads.append(round(os.getloadavg()[0], 2))
                    results.append(
                        {"platform": "datahub", "rtt_ms": level, "figures": figures, "load": loads[-1]}
                    )
                    table(results[-1:])
            finally:
                log.__exit__()
                net.close()
                dh.undo()
                if args.drop:
                    scan_bench.drop(args.dh_store, args.dh_search)
        if args.only != "datahub":
            with openmetadata(args.om_store, args.om_search, args.om_entities) as catalog:
                floors["openmetadata"] = round(
                    import_floor(base_env(), args.om_store, args.om_search, more=()), 3
                )
                print(f"import floor (no change log libraries): {floors['openmetadata']:.2f} s", flush=True)
                net = Net(catalog["store_url"], catalog["search_url"])
                try:
                    for level in levels(args.rtt):
                        net.at(level)
                        if level != "direct":
                            checks[f"openmetadata {level:g} ms"] = delay_check(net)
                        figures = om_measure(net, catalog, args.runs, state, args.scan_only)
                        loads.append(round(os.getloadavg()[0], 2))
                        results.append(
                            {
                                "platform": "openmetadata",
                                "rtt_ms": level,
                                "figures": figures,
                                "load": loads[-1],
                            }
                        )
                        table(results[-1:])
                finally:
                    net.close()
    print()
    table(results)
    print(f"load average (1 min) before and after each level: {loads}")
    wrong = [w for r in results for m in r["figures"].values() for w in m.get("wrong", [])]
    print(f"import floors: {floors}")
    print(
        json.dumps(
            {
                "bench": "net",
                "delay_checks": checks,
                "import_floor_s": floors,
                "load": loads,
                "results": results,
            }
        )
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
