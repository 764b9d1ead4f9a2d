"""Scan benchmark: seed N entities, then time a bare read of the table and of the index, and a
full scan of the same data, in the same run; report throughput, the ratio, and peak RSS.

    python bench/scan_bench.py --n 100000 --store mariadb            # seed (if needed) + measure
    python bench/scan_bench.py --n 1000000 --store mariadb --reseed

The catalog is loaded straight into the table and the index (bulk), consistent, so the scan
does all its work and finds nothing. Kafka is left out: the per-finding look-ups are not what
is measured here. Figures go to stdout as one JSON line too, among them each process's CPU per
100,000 entities: the scan's (its readers' included) beside a plain reader's that reads the same
aspect rows (the database's driver, orjson) and documents (bench/plain_reader.py) and compares
each entity's aspects with its document as plain dictionaries, nothing more (issue 53).

    python bench/scan_bench.py --n 100000 --break 1000

also measures a scan where 1,000 dataset documents are stale (a field rewritten behind the
catalog's back), so the join hands 1,000 candidates to the causal re-observation; the figures
say what the re-observation adds (the documents are put back afterwards).

    python bench/scan_bench.py --n 100000 --shards 4 --shards 16

also makes a shard plan of N and scans each shard in its own process: the rows and documents the
shards read together against the full scan's, the largest shard against the smallest, and
whether the shards' entities add up to the full scan's. `--stages` times the stages: the rows
fetched, decoded and grouped; the aspects' JSON parsed; the projection; the join without checks
(both streams and the merge); the checks on top (the comparisons: the rest). `--workers 2` scans
a plan of 2 shards with 2 processes at the same time (the wall time against one full scan).

`--versions` also times the scan as it was before releases were known (the installed rules, no
release detection, no mapping read): what detection and the mapping witness cost.

Every index the scan reads is seeded: the entity docs, a system-metadata doc per aspect row and
the edges the aspects imply (the sandbox indexer's rules), so every check does its work; the bare
index read reads all of them, each in the order the scan needs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import text  # noqa: E402

from sandbox.endpoints import Endpoints  # noqa: E402
from sandbox.naming import graph_index, system_metadata_index  # noqa: E402

# another catalog beside this one (bench/net_bench.py's) by BENCH_PREFIX and BENCH_TABLE
PREFIX = os.environ.get("BENCH_PREFIX") or "bench"
SYSMETA_INDEX = system_metadata_index(PREFIX)
GRAPH_INDEX = graph_index(PREFIX)
CHUNK = 5000
# DataHub's DDL under another name, so tests can use metadata_aspect_v2 while this runs
TABLE = os.environ.get("BENCH_TABLE") or "metadata_aspect_v2_bench"
PLAN_FILE = Path(os.environ.get("TMPDIR", "/tmp")) / "auditor-bench-shards.json"


def seed(store: str, search: str, n: int) -> None:
    """Bulk-load n entities (version-0 rows, their entity docs, system-metadata docs and edges)
    under the `bench` prefix. A child process generates the next chunk while this one writes."""
    # imported here: the measuring processes must not carry the generator's memory
    import multiprocessing

    from sandbox.database import engine_for
    from sandbox.ddl import create_schema
    from sandbox.indexer import IndexUpdater
    from sandbox.naming import ASPECT_TABLE
    from sandbox.search import connect

    endpoints = Endpoints.from_env()
    engine = engine_for(store, endpoints)
    create_schema(engine)
    with engine.begin() as conn:
        conn.execute(text(f"DROP TABLE IF EXISTS {TABLE}"))
        if engine.dialect.name == "postgresql":
            conn.execute(text(f"CREATE TABLE {TABLE} (LIKE {ASPECT_TABLE} INCLUDING ALL)"))
        else:
            conn.execute(text(f"CREATE TABLE {TABLE} LIKE {ASPECT_TABLE}"))
    client = connect(search, endpoints)
    for index in client.list_indices(f"{PREFIX}_*"):
        client.delete_index(index)
    IndexUpdater(client, PREFIX)  # the sandbox's index templates (DataHub's mappings) for the prefix
    started = time.monotonic()
    # the DB-API cursor with %s placeholders: PyMySQL turns executemany into multi-row INSERTs
    # (through SQLAlchemy's named parameters it sent one statement a row), psycopg pipelines it
    insert = (
        f"INSERT INTO {TABLE} (urn, aspect, version, metadata, systemmetadata, createdon, createdby) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s)"  # only placeholders, or PyMySQL sends a row at a time
    )
    observed = int(time.time() * 1000)
    chunks = [(i, min(CHUNK, n - i * CHUNK), observed) for i in range((n + CHUNK - 1) // CHUNK)]
    done = rows = n_sysmeta = n_edges = 0
    db_s = search_s = 0.0
    created: set[str] = set()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        for size, params, docs in pool.imap(build_chunk, chunks):
            t0 = time.monotonic()
            raw = engine.raw_connection()
            try:
                cursor = raw.cursor()
                cursor.executemany(insert, params)
                raw.commit()
            finally:
                raw.close()
            t1 = time.monotonic()
            for index, items in docs.items():
                if index not in created:
                    if not client.exists(index):
                        loading(client, index, True)
                    created.add(index)
                client.bulk_put(index, items, chunk_size=CHUNK)
            t2 = time.monotonic()
            db_s += t1 - t0
            search_s += t2 - t1
            done += size
            rows += len(params)
            n_sysmeta += len(docs.get(SYSMETA_INDEX, []))
            n_edges += len(docs.get(GRAPH_INDEX, []))
            print(
                f"  seeded {done:,}/{n:,} entities ({rows:,} rows, {n_sysmeta:,} system-metadata docs, "
                f"{n_edges:,} edges) {time.monotonic() - started:.0f}s (writing: table {db_s:.0f}s, "
                f"indices {search_s:.0f}s)",
                file=sys.stderr,
                flush=True,
            )
    for index in client.list_indices(f"{PREFIX}_*"):
        loading(client, index, False)
        client.refresh(index)


def build_chunk(
    chunk: tuple[int, int, int],
) -> tuple[int, list[tuple[Any, ...]], dict[str, list[tuple[str, dict[str, Any]]]]]:
    """One chunk of the catalog: its version-0 rows, and per index the docs DataHub's consumer
    would have written for them (the sandbox's projection, system metadata and edge rules)."""
    from sandbox.edges import extract_edges
    from sandbox.generator import generate_catalog
    from sandbox.indexer import system_metadata_doc
    from sandbox.naming import entity_doc_id, entity_index, system_metadata_doc_id
    from sandbox.projection import document_fields

    chunk_no, size, observed = chunk
    sm = {"lastObserved": observed, "runId": "bench"}
    sm_json = json.dumps(sm)
    actor = "urn:li:corpuser:datahub"
    now = datetime.now(UTC).replace(tzinfo=None)
    params: list[tuple[Any, ...]] = []
    docs: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    sysmeta = docs.setdefault(SYSMETA_INDEX, [])
    edges = docs.setdefault(GRAPH_INDEX, [])
    for entity in generate_catalog(size, seed=chunk_no, prefix=f"c{chunk_no}-"):
        for aspect, value in entity.aspects:
            metadata = json.dumps(value, separators=(",", ":"))
            params.append((entity.urn, aspect, 0, metadata, sm_json, now, actor))
            doc_id = system_metadata_doc_id(entity.urn, aspect)
            sysmeta.append((doc_id, system_metadata_doc(entity.urn, aspect, sm)))
            for edge in extract_edges(entity.urn, aspect, value, system_metadata=sm, created_actor=actor):
                edges.append((edge.doc_id, edge.to_doc()))
        doc = {"urn": entity.urn, **document_fields(entity.aspects)}
        docs.setdefault(entity_index(entity.entity_type, PREFIX), []).append((entity_doc_id(entity.urn), doc))
    return size, params, docs


def loading(client: Any, index: str, on: bool) -> None:
    """Refresh off while bulk-loading (created first, so the template's mappings apply)."""
    if on:
        client.client.indices.create(index=index)
    settings = {"index": {"refresh_interval": "-1" if on else "1s", "number_of_replicas": 0}}
    if client.flavor == "opensearch":
        client.client.indices.put_settings(index=index, body=settings)
    else:
        client.client.indices.put_settings(index=index, settings=settings)


def measure(mode: str, store: str, search: str, shard: str | None = None) -> dict[str, Any]:
    """One measurement in this process: `db`, `index`, `scan`, `plan` or `shard` (with `i/N`)."""
    from auditor.api import ScanOptions, plan_shards, scan
    from auditor.backends.connect import open_search
    from auditor.backends.lean import collector_on
    from auditor.core.model import Selection
    from auditor.platforms.datahub.backends.connect import open_store
    from auditor.scan.shards import ShardPlan
    from auditor.settings import load_settings

    collector_on()  # the garbage collector as the command line runs it, for every mode
    endpoints = Endpoints.from_env()
    settings = load_settings(
        env={},
        store_url=endpoints.store_url(store),
        search_url=endpoints.search_url(search),
        index_prefix=PREFIX,
        store_table=TABLE,
        scan_prefetch=os.environ.get("BENCH_PREFETCH") == "1",  # the reading threads (default off)
        # the reader processes (default: as many as the cores; BENCH_READERS=0 reads in the scan's)
        scan_readers=int(os.environ["BENCH_READERS"]) if "BENCH_READERS" in os.environ else None,
    )
    started = time.monotonic()
    count = 0
    if mode == "db":
        for _ in open_store(settings).stream_rows():
            count += 1
    elif mode == "index":
        # every document the scan reads, in the order it reads them: the entity docs, the
        # system-metadata docs and the edges (each as a sorted stream of its own)
        client = open_search(settings)
        read: dict[str, int] = {}
        for index, sort, kind in _index_streams(client):
            for _ in client.stream(index, sort):
                read[kind] = read.get(kind, 0) + 1
        seconds = time.monotonic() - started
        return {
            "mode": mode,
            "seconds": seconds,
            "count": read.get("entity", 0),
            "sysmeta": read.get("sysmeta", 0),
            "edges": read.get("edges", 0),
            **cpu_and_rss(),
        }
    elif mode in (
        "plain",
        "plain-rows",
    ):  # the same documents through a plain HTTP reader, nothing of the project
        from plain_reader import PlainReader

        kind = "opensearch" if "opensearch" in search else "elasticsearch"
        reader = PlainReader(endpoints.search_url(search), kind)
        found = {kind: 0 for kind in ("entity", "sysmeta", "edges")}
        # plain-rows, the CPU yardstick (issue 53): the rows too, each urn's aspects parsed, each
        # entity doc compared with them as plain dictionaries
        rows = plain_rows(endpoints.store_url(store)) if mode == "plain-rows" else {}
        differ = 0

        def compare(hit: dict[str, Any]) -> None:
            nonlocal differ
            source = hit.get("_source") or {}
            differ += rows.get(source.get("urn"), {}) != source

        for index, sort, kind in _index_streams(open_search(settings)):
            found[kind] += reader.read(index, sort, sink=compare if rows and kind == "entity" else None)
        return {
            "mode": mode,
            "seconds": time.monotonic() - started,
            "count": found["entity"],
            "sysmeta": found["sysmeta"],
            "edges": found["edges"],
            "rows": sum(len(a) for a in rows.values()),
            "differ": differ,
            **cpu_and_rss(),
        }
    elif mode == "counts":  # what is loaded, by count (a read of 1M entities takes minutes)
        from sandbox.search import connect

        raw = connect(search, endpoints)
        found = {kind: 0 for kind in ("entity", "sysmeta", "edges")}
        for index in raw.list_indices(f"{PREFIX}_*"):
            kind = {SYSMETA_INDEX: "sysmeta", GRAPH_INDEX: "edges"}.get(index, "entity")
            found[kind] += raw.count(index)
        store = open_store(settings)
        with store.engine.connect() as conn:  # the driver's own engine or SQLAlchemy's: same calls
            rows = conn.execute(store.sql(f"SELECT COUNT(*) FROM {TABLE} WHERE version = 0")).scalar()
        return {"mode": mode, **found, "rows": int(rows)}
    elif mode == "stages":
        return stages(settings)
    elif mode == "join":  # the join of both sides without a check: streams, merge, grouping
        from auditor.platforms.datahub.registry.registry import Registry
        from auditor.platforms.datahub.scan.join import Scanner

        scanner = Scanner(
            open_store(settings), open_search(settings), Registry.load(), index_prefix=PREFIX, checks=()
        )
        joined = scanner.run(Selection())
        return {
            "mode": mode,
            "seconds": time.monotonic() - started,
            "count": sum(joined.entities.values()),
            "peak_rss_mib": peak_rss_mib(),
        }
    elif mode == "plan":
        n = int(shard or 1)
        plan = plan_shards(settings, n)
        PLAN_FILE.write_text(plan.to_json())
        return {"mode": mode, "seconds": time.monotonic() - started, "rows": plan.rows}
    else:
        selection = Selection()
        if mode == "shard" and shard:
            i, n = (int(x) for x in shard.split("/"))
            selection = Selection(shard=(i, n), urn_range=ShardPlan.load(PLAN_FILE).urn_range(i))
        if mode == "scan-unversioned":  # as before releases: the installed rules, no detection or mapping
            import auditor.platforms.datahub.scan.run as scan_run
            from auditor.platforms.datahub.versions.detect import Choice
            from auditor.platforms.datahub.versions.view import IndexRules

            def installed(store: Any, search: Any, registry: Any, **_: Any) -> Any:
                rules = IndexRules.installed(registry)
                return rules, Choice(rules.rules, "installed (benchmark baseline)")

            scan_run.index_rules = installed  # type: ignore[assignment]
        report = scan(settings, selection, options=ScanOptions(use_state=False, sample_window=0))
        count = sum(report.entities.values())
        findings = sum(report.counts.values())
        if findings and mode == "scan":
            print(f"  scan found {findings} differences on a consistent catalog", file=sys.stderr)
        seconds = time.monotonic() - started
        return {
            "mode": mode,
            "seconds": seconds,
            "count": count,
            "findings": findings,
            "reobserved": report.reobserved,
            "read": report.read,
            "entities": report.entities,
            "documents": report.documents,
            **cpu_and_rss(),
        }
    seconds = time.monotonic() - started
    return {"mode": mode, "seconds": seconds, "count": count, "peak_rss_mib": peak_rss_mib()}


def plain_rows(url: str) -> dict[str, dict[str, Any]]:
    """urn -> {aspect: its metadata parsed} of every latest aspect row, read by the database's own
    driver (a server-side cursor, 5,000 rows a fetch) and orjson: the rows a plain reader reads."""
    import orjson
    from sqlalchemy import create_engine

    engine = create_engine(url)
    raw = engine.raw_connection()
    try:
        postgres = engine.dialect.name == "postgresql"
        if postgres:
            cursor = raw.driver_connection.cursor(name="plain_rows")
        else:
            import pymysql.cursors

            cursor = raw.driver_connection.cursor(pymysql.cursors.SSCursor)
        cursor.execute(f"SELECT urn, aspect, metadata FROM {TABLE} WHERE version = 0")
        out: dict[str, dict[str, Any]] = {}
        while batch := cursor.fetchmany(5000):
            for urn, aspect, metadata in batch:
                out.setdefault(urn, {})[aspect] = orjson.loads(metadata)
        cursor.close()
        return out
    finally:
        raw.close()
        engine.dispose()


def per_100k(result: dict[str, Any]) -> float | None:
    """A child's CPU (its own and its reader processes') per 100,000 entities."""
    if result.get("cpu_seconds") is None or not result.get("count"):
        return None
    cpu = result["cpu_seconds"] + (result.get("children_cpu_seconds") or 0.0)
    return round(cpu * 100_000 / result["count"], 2)


def _index_streams(client: Any) -> list[tuple[str, list[str], str]]:
    """The indices a scan reads, each with its sort keys and what it holds, in the scan's order."""
    from auditor.platforms.datahub.naming import ENTITY_INDEX_SUFFIX

    existing = set(client.indices(f"{PREFIX}_*"))
    streams = [(i, ["urn"], "entity") for i in sorted(client.indices(f"{PREFIX}_*{ENTITY_INDEX_SUFFIX}"))]
    streams += [
        (SYSMETA_INDEX, ["urn", "aspect"], "sysmeta"),
        (GRAPH_INDEX, ["source.urn", "relationshipType", "destination.urn"], "edges"),
    ]
    return [s for s in streams if s[0] in existing]


def memory(scan: dict[str, Any]) -> dict[str, Any]:
    """The scan's peak RSS: its own process's, each reader process's, and the sum (every process
    of the scan at its peak at once: an upper bound on what the scan holds together)."""
    readers = scan.get("readers_peak_rss_mib") or []
    return {
        "scan_peak_rss_mib": round(scan["peak_rss_mib"]),
        "readers_peak_rss_mib": readers,
        "scan_with_readers_peak_rss_mib": round(scan["peak_rss_mib"] + sum(readers)),
    }


def cpu_and_rss() -> dict[str, float]:
    """This process's CPU seconds (its threads', and its children's once reaped) and peak RSS."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "cpu_seconds": round(own.ru_utime + own.ru_stime, 2),
        "children_cpu_seconds": round(children.ru_utime + children.ru_stime, 2),
        "children_peak_rss_mib": round(children.ru_maxrss / 1024, 1),  # the largest child's
        "readers_peak_rss_mib": [round(p) for p in readers_peak()],
        "peak_rss_mib": peak_rss_mib(),
    }


def readers_peak() -> list[float]:
    """Each reader process's peak RSS (the scan's index streams read apart)."""
    try:
        from auditor.backends.search_readers import PEAK_RSS_MIB
    except ImportError:  # an older tree
        return []
    return list(PEAK_RSS_MIB)


def stages(settings: Any) -> dict[str, Any]:
    """The truth's side alone, timed by stage in one pass: rows fetched, decoded and grouped per
    entity (the store's stream), the aspects' JSON parsed, the search document projected."""
    from auditor.platforms.datahub.backends.connect import open_store
    from auditor.platforms.datahub.documents.entity import JoinedEntity
    from auditor.platforms.datahub.documents.projection import project_entity
    from auditor.platforms.datahub.registry.registry import Registry
    from auditor.platforms.datahub.urns import entity_type

    registry = Registry.load()
    parse = project = 0.0
    count = 0
    clock = time.perf_counter
    started = clock()
    for rows in open_store(settings).stream_entities():
        t0 = clock()
        entity = JoinedEntity(rows.urn, entity_type(rows.urn), None, rows)
        aspects = entity.aspects
        t1 = clock()
        project_entity(registry, rows.urn, aspects)
        t2 = clock()
        parse += t1 - t0
        project += t2 - t1
        count += 1
    total = clock() - started
    return {
        "mode": "stages",
        "seconds": total,
        "count": count,
        "rows_fetch_decode_group_seconds": total - parse - project,
        "json_parse_seconds": parse,
        "projection_seconds": project,
        "peak_rss_mib": peak_rss_mib(),
    }


def break_docs(search: str, k: int) -> list[tuple[str, dict[str, Any]]]:
    """Rewrite `name` in k dataset documents; the originals, to put back with `restore_docs`."""
    from sandbox.naming import entity_index
    from sandbox.search import connect

    client = connect(search, Endpoints.from_env())
    index = entity_index("dataset", PREFIX)
    originals: list[tuple[str, dict[str, Any]]] = []
    for doc_id, source in client.scan(index):
        originals.append((doc_id, source))
        if len(originals) >= k:
            break
    client.bulk_put(index, [(i, {**src, "name": "renamed behind the catalog"}) for i, src in originals])
    client.refresh(index)
    return originals


def restore_docs(search: str, originals: list[tuple[str, dict[str, Any]]]) -> None:
    from sandbox.naming import entity_index
    from sandbox.search import connect

    client = connect(search, Endpoints.from_env())
    index = entity_index("dataset", PREFIX)
    client.bulk_put(index, originals)
    client.refresh(index)


def peak_rss_mib() -> float:
    """This process's peak RSS (VmHWM; ru_maxrss would carry the forking parent's over exec)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(mode: str, store: str, search: str, shard: str | None = None) -> dict[str, Any]:
    more = ["--shard", shard] if shard else []
    out = subprocess.run(
        [sys.executable, __file__, "--measure", mode, "--store", store, "--search", search, *more],
        check=True,
        capture_output=True,
        text=True,
    )
    sys.stderr.write(out.stderr)
    return _measured(mode, shard, out.stdout)


def _measured(mode: str, shard: str | None, stdout: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    # each measurement as it ends: a long run stopped midway keeps what it measured
    print(f"  measured {mode} {shard or ''} {json.dumps(result)}", file=sys.stderr, flush=True)
    return result


def run_children(mode: str, store: str, search: str, shards: list[str], jobs: int) -> list[dict[str, Any]]:
    """`run_child` for each shard, `jobs` at a time, results in the order of `shards`."""
    results: list[dict[str, Any]] = []
    for start in range(0, len(shards), jobs):
        batch = shards[start : start + jobs]
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--measure",
                    mode,
                    "--store",
                    store,
                    "--search",
                    search,
                    "--shard",
                    shard,
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            for shard in batch
        ]
        for shard, proc in zip(batch, procs, strict=True):
            out, _ = proc.communicate()
            if proc.returncode:
                raise SystemExit(f"shard {shard} failed with exit {proc.returncode}")
            results.append(_measured(mode, shard, out))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--store", default="mariadb", choices=("mariadb", "postgres"))
    parser.add_argument("--search", default="opensearch", choices=("opensearch", "elasticsearch"))
    parser.add_argument("--reseed", action="store_true", help="reload even if the counts match")
    parser.add_argument("--drop", action="store_true", help="drop the bench table and indices at the end")
    parser.add_argument(
        "--break",
        dest="broken",
        type=int,
        default=0,
        metavar="K",
        help="also scan with K stale dataset docs (what the causal re-observation of K candidates adds)",
    )
    parser.add_argument(
        "--shards",
        type=int,
        action="append",
        default=[],
        metavar="N",
        help="also plan N shards and scan each (repeatable): rows and documents read, balance, merged counts",
    )
    parser.add_argument(
        "--shard-jobs",
        type=int,
        default=1,
        metavar="K",
        help="scan K shards of --shards at a time (their times then overlap; what they read does not)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        action="append",
        default=[],
        metavar="N",
        help="also scan a plan of N shards with N processes at once (repeatable): wall time against one scan",
    )
    parser.add_argument(
        "--measure",
        choices=(
            *("db", "index", "plain", "plain-rows", "counts", "scan", "scan-unversioned", "scan-broken"),
            *("plan", "shard", "stages", "join"),
        ),
        help=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--stages", action="store_true", help="also time the scan's stages (rows, JSON, projection, join)"
    )
    parser.add_argument(
        "--versions",
        action="store_true",
        help="also time the scan without release detection and the mapping witness (the cost of both)",
    )
    parser.add_argument(
        "--scan-only",
        action="store_true",
        help="seed if needed, then the scan alone: its time and memory where the bare reads take an hour",
    )
    parser.add_argument("--shard", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.store, args.search, args.shard)))
        return 0

    def loaded() -> bool:
        try:
            counts = run_child("counts", args.store, args.search)
        except subprocess.CalledProcessError:  # no table yet
            return False
        # an older bench catalog had no system-metadata docs or edges: seeded again
        rows = counts["rows"]
        return counts["entity"] == args.n and rows > 0 and counts["sysmeta"] == rows and counts["edges"] > 0

    if args.scan_only and (args.shards or args.workers or args.stages or args.versions or args.broken):
        parser.error(
            "--scan-only is the scan alone: not with --shards, --workers, --stages, --versions or --break"
        )
    if args.reseed or not loaded():
        seed(args.store, args.search, args.n)
    if args.scan_only:
        scan = run_child("scan", args.store, args.search)
        result = {
            "entities": scan["count"],
            "findings": scan["findings"],
            "store": args.store,
            "search": args.search,
            "scan_seconds": round(scan["seconds"], 2),
            "scan_entities_per_second": round(scan["count"] / scan["seconds"]),
            "cpu_seconds": scan.get("cpu_seconds"),
            "readers_cpu_seconds": scan.get("children_cpu_seconds"),
            "cpu_per_100k_s": per_100k(scan),
            **memory(scan),
            "cpus": os.cpu_count(),
        }
        return report(result, args)
    db = run_child("db", args.store, args.search)
    index = run_child("index", args.store, args.search)
    plain = run_child("plain", args.store, args.search)
    scan = run_child("scan", args.store, args.search)
    plain_rows_read = run_child("plain-rows", args.store, args.search)
    slower = max(db["seconds"], index["seconds"])
    result = {
        "entities": scan["count"],
        "aspect_rows": db["count"],
        "docs": index["count"],
        "system_metadata_docs": index["sysmeta"],
        "edges": index["edges"],
        "store": args.store,
        "search": args.search,
        "bare_db_seconds": round(db["seconds"], 2),
        "bare_index_seconds": round(index["seconds"], 2),
        "scan_seconds": round(scan["seconds"], 2),
        "scan_entities_per_second": round(scan["count"] / scan["seconds"]),
        "ratio_scan_to_slower_bare_read": round(scan["seconds"] / slower, 2),
        "plain_reader_seconds": round(plain["seconds"], 2),
        "ratio_scan_to_plain_reader": round(scan["seconds"] / plain["seconds"], 2),
        "cpu_seconds": {m["mode"]: m.get("cpu_seconds") for m in (db, index, plain, scan)},
        # each process's whole CPU (interpreter, imports, its reader processes) per 100,000 entities
        "cpu_per_100k_s": {"scan": per_100k(scan), "plain_reader_rows_and_docs": per_100k(plain_rows_read)},
        **memory(scan),
        "bare_db_peak_rss_mib": round(db["peak_rss_mib"]),
        "bare_index_peak_rss_mib": round(index["peak_rss_mib"]),
        "cpus": os.cpu_count(),
    }
    if args.versions:  # alternated with the scan above, so that load drifts hit both alike
        unversioned = run_child("scan-unversioned", args.store, args.search)
        again = run_child("scan", args.store, args.search)
        versioned = min(scan["seconds"], again["seconds"])
        result.update(
            {
                "scan_unversioned_seconds": round(unversioned["seconds"], 2),
                "scan_versioned_seconds_best_of_2": round(versioned, 2),
                "ratio_versioned_to_unversioned": round(versioned / unversioned["seconds"], 3),
            }
        )
    if args.broken:
        originals = break_docs(args.search, args.broken)
        try:
            broken = run_child("scan-broken", args.store, args.search)
        finally:
            restore_docs(args.search, originals)
        result.update(
            {
                "broken_docs": len(originals),
                "broken_scan_findings": broken["findings"],
                "broken_scan_seconds": round(broken["seconds"], 2),
                "reobservation_seconds": broken["reobserved"].get("seconds"),
                "reobservation_rounds": broken["reobserved"].get("rounds"),
                "broken_scan_peak_rss_mib": round(broken["peak_rss_mib"]),
            }
        )
    if args.stages:
        staged = run_child("stages", args.store, args.search)
        join = run_child("join", args.store, args.search)
        result.update(
            {
                "stage_rows_fetch_decode_group_seconds": round(staged["rows_fetch_decode_group_seconds"], 2),
                "stage_json_parse_seconds": round(staged["json_parse_seconds"], 2),
                "stage_projection_seconds": round(staged["projection_seconds"], 2),
                "stage_join_without_checks_seconds": round(join["seconds"], 2),
                # the checks on top of the join: projection, parse and the comparisons
                "stage_checks_seconds": round(scan["seconds"] - join["seconds"], 2),
                "stage_comparisons_seconds": round(
                    scan["seconds"]
                    - join["seconds"]
                    - staged["json_parse_seconds"]
                    - staged["projection_seconds"],
                    2,
                ),
            }
        )
    for n in args.shards:
        result.update(measure_shards(args.store, args.search, n, scan, args.shard_jobs))
    for n in args.workers:
        result.update(measure_workers(args.store, args.search, n, scan))
    return report(result, args)


def report(result: dict[str, Any], args: argparse.Namespace) -> int:
    """The figures, one a line and then as one JSON line; the bench catalog dropped if asked."""
    for key, value in result.items():
        print(f"{key:34} {value}")
    print(json.dumps(result))
    if args.drop:
        drop(args.store, args.search)
    return 0


def measure_shards(store: str, search: str, n: int, full: dict[str, Any], jobs: int = 1) -> dict[str, Any]:
    """A plan of n shards, each shard scanned in its own process (one after the other by default:
    the figures are what each reads, not how they overlap on 2 cores), against the full scan."""
    plan = run_child("plan", store, search, str(n))
    parts = run_children("shard", store, search, [f"{i}/{n}" for i in range(n)], jobs)
    rows = [p["read"]["rows"] for p in parts]
    docs = [p["read"]["documents"] for p in parts]
    merged: dict[str, int] = {}
    for p in parts:
        for etype, k in p["entities"].items():
            merged[etype] = merged.get(etype, 0) + k
    return {
        f"shards{n}_plan_seconds": round(plan["seconds"], 2),
        f"shards{n}_rows_read_vs_full": round(sum(rows) / full["read"]["rows"], 3),
        f"shards{n}_docs_read_vs_full": round(sum(docs) / full["read"]["documents"], 3),
        f"shards{n}_largest_vs_smallest_rows": round(max(rows) / max(1, min(rows)), 3),
        f"shards{n}_slowest_shard_seconds": round(max(p["seconds"] for p in parts), 2),
        f"shards{n}_sum_of_shard_seconds": round(sum(p["seconds"] for p in parts), 2),
        f"shards{n}_merged_entities_equal_full": merged == full["entities"],
        f"shards{n}_merged_findings": sum(p["findings"] for p in parts),
        f"shards{n}_peak_rss_mib": round(max(p["peak_rss_mib"] for p in parts)),
    }


def measure_workers(store: str, search: str, n: int, full: dict[str, Any]) -> dict[str, Any]:
    """A plan of n shards scanned by n processes at the same time (`--workers n` on one machine):
    the wall time from the first start to the last end against the full scan's."""
    run_child("plan", store, search, str(n))
    started = time.monotonic()
    parts = run_children("shard", store, search, [f"{i}/{n}" for i in range(n)], jobs=n)
    wall = time.monotonic() - started
    return {
        f"workers{n}_wall_seconds": round(wall, 2),
        f"workers{n}_speedup_vs_full_scan": round(full["seconds"] / wall, 2),
        f"workers{n}_merged_findings": sum(p["findings"] for p in parts),
    }


def drop(store: str, search: str) -> None:
    """Remove what `seed` loaded (big indices slow every later start of the search node)."""
    from sandbox.database import engine_for
    from sandbox.search import connect

    endpoints = Endpoints.from_env()
    with engine_for(store, endpoints).begin() as conn:
        conn.execute(text(f"DROP TABLE IF EXISTS {TABLE}"))
    client = connect(search, endpoints)
    for index in client.list_indices(f"{PREFIX}_*"):
        client.delete_index(index)


if __name__ == "__main__":
    raise SystemExit(main())
