"""OpenMetadata scan benchmark: a seeded OM catalog (columns and tasks with tags, tables that
inherit their schema's owners), then, in the same run, the bare reads the scan cannot beat
(every entity table's `SELECT id, json` streamed, every index scrolled in `_doc` order, nothing
parsed) and the scan itself; prints the scan's ratio to the slower bare read, its CPU time (all
threads: the scan reads both sides at once) and the peak RSS (during the scan, and of the same
scan run alone in a fresh process: its own memory, without the seeding's).

    python bench/om_scan_bench.py --entities 20000 --store postgres --search opensearch3

Also the CPU per 100,000 entities of the scan (its threads and its reader process) beside a plain
reader's (bench/om_plain_reader.py: the same rows, relationship and tag rows and documents read,
parsed and compared as plain dictionaries over the fields the scan compares, nothing more; on the
bench's consistent catalog it must count no pair as differing, as the scan finds nothing: the
bench says so when they disagree). Target (issue 53): the scan's CPU at most 2x the plain
reader's; memory flat. Not a timed test: figures on
stdout, one JSON line last. The database and indices are dropped after.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sqlalchemy import text  # noqa: E402

from auditor.api import ScanOptions, scan  # noqa: E402
from auditor.backends.lean import collector_on  # noqa: E402
from auditor.settings import load_settings  # noqa: E402
from bench.rebuild_bench import machine_cpu, programs_cpu, programs_delta  # noqa: E402
from sandbox.endpoints import Endpoints  # noqa: E402
from sandbox.openmetadata import indices  # noqa: E402
from sandbox.openmetadata.databases import scratch_database  # noqa: E402
from sandbox.openmetadata.ddl import create_schema  # noqa: E402
from sandbox.openmetadata.generator import seed  # noqa: E402
from sandbox.openmetadata.model import ENTITY_TYPES  # noqa: E402
from sandbox.openmetadata.server import OmServer  # noqa: E402
from sandbox.search import connect  # noqa: E402


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _status_mib(field: str) -> float | None:
    """VmRSS / VmHWM of this process (Linux), in MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Start VmHWM again from the current RSS (Linux 4.0+), so the peak is the scan's own."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def bare_table_read(engine) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    started, rows = time.perf_counter(), 0
    with engine.connect() as conn:
        for et in ENTITY_TYPES.values():
            result = conn.execution_options(stream_results=True, yield_per=2000).execute(
                text(f"SELECT id, json FROM {et.table}")
            )
            rows += sum(1 for _ in result)
    return time.perf_counter() - started, rows


def bare_index_read(search, alias: str) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    started, docs = time.perf_counter(), 0
    for et in ENTITY_TYPES.values():
        docs += sum(1 for _ in search.scan(indices.index_name(et.key, alias)))
    return time.perf_counter() - started, docs


def plain_read(engine, search_url: str, alias: str) -> tuple[float, float, int, int]:  # type: ignore[no-untyped-def]
    """bench/om_plain_reader.py over the catalog: its wall time, its CPU, what it read (rows and
    documents) and the pairs that differ; the faster of two reads (its first pays for a new
    connection and cold caches: the yardstick is taken at its best, as the scan after a warm one)."""
    from om_plain_reader import OmPlainReader

    from auditor.platforms.openmetadata.fields import DOC_SOURCE

    raw = engine.raw_connection()
    try:
        reader = OmPlainReader(raw.driver_connection, engine.dialect.name == "postgresql", search_url)
        pairs = [(et.key, et.table, indices.index_name(et.key, alias)) for et in ENTITY_TYPES.values()]
        best: tuple[float, float, int, int] | None = None
        for _ in range(2):
            started, cpu = time.perf_counter(), time.process_time()
            read, differ = reader.read(pairs, DOC_SOURCE)
            took = (time.perf_counter() - started, time.process_time() - cpu, read, differ)
            best = took if best is None or took[1] < best[1] else best
        assert best is not None
        return best
    finally:
        raw.close()


def per_100k(seconds: float, entities: int) -> float:
    return seconds * 100_000 / max(entities, 1)


def _settings(store_url: str, search_url: str, alias: str, readers: int | None = None):  # type: ignore[no-untyped-def]
    return load_settings(
        env={},
        store_url=store_url,
        search_url=search_url,
        platform="openmetadata",
        cluster_alias=alias,
        index_visibility_seconds=0.0,
        scan_readers=readers,  # None: the default (a reader process on 2 cores or more)
    )


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _timed_scan(settings) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    """One scan: its wall time, its process's CPU (all threads) and its reader's CPU."""
    started, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
    scan(settings, options=ScanOptions(grace=300.0, use_state=False))
    return time.perf_counter() - started, time.process_time() - cpu, _children_cpu() - children


def scan_alone() -> int:
    """One scan in a fresh process (what to scan from the environment: no password on a command
    line), then its peak RSS: the scan's own memory, without the seeding's."""
    env = os.environ
    collector_on()
    settings = _settings(env["OM_BENCH_STORE_URL"], env["OM_BENCH_SEARCH_URL"], env["OM_BENCH_ALIAS"])
    scan(settings, options=ScanOptions(grace=300.0, use_state=False))
    print(json.dumps({"peak_rss_mib": round(_status_mib("VmHWM") or _rss_mib())}))
    return 0


def _scan_alone_peak(store_url: str, search_url: str, alias: str) -> int:
    env = {**os.environ, "OM_BENCH_STORE_URL": store_url, "OM_BENCH_SEARCH_URL": search_url}
    env["OM_BENCH_ALIAS"] = alias
    done = subprocess.run(
        [sys.executable, __file__, "--scan-alone"], env=env, capture_output=True, text=True, check=True
    )
    return int(json.loads(done.stdout.strip().splitlines()[-1])["peak_rss_mib"])


def main() -> int:
    if sys.argv[1:] == ["--scan-alone"]:
        return scan_alone()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=20000)
    parser.add_argument("--store", default="postgres", choices=("postgres", "mariadb"))
    parser.add_argument("--search", default="opensearch3")
    parser.add_argument(
        "--profile", type=int, default=0, help="print the scan's N costliest functions (its main thread's)"
    )
    parser.add_argument("--profile-by", default="cumulative", choices=("cumulative", "tottime"))
    args = parser.parse_args()
    endpoints = Endpoints.from_env()
    search = connect(args.search, endpoints)
    alias = f"ombench{uuid.uuid4().hex[:6]}"
    with scratch_database(args.store, endpoints, prefix="ombench") as engine:
        create_schema(engine)
        indices.create_indices(search, alias)
        try:
            started = time.perf_counter()
            seed(OmServer(engine, search, alias), args.entities, seed=1)
            indices.refresh_all(search, alias)
            seeded = time.perf_counter() - started
            print(f"seeded {args.entities} entities in {seeded:.1f} s ({args.store} + {args.search})")
            url = engine.url.render_as_string(hide_password=False)
            settings = _settings(url, endpoints.search_url(args.search), alias)
            collector_on()  # the garbage collector as the command line runs it (bare reads too)
            scan(settings, options=ScanOptions(grace=300.0, use_state=False))  # warm both sides
            table_s, rows = bare_table_read(engine)
            index_s, docs = bare_index_read(search, alias)
            plain_s, plain_cpu, plain_read_n, plain_differ = plain_read(
                engine, endpoints.search_url(args.search), alias
            )
            rss_before = _status_mib("VmRSS") or _rss_mib()
            own_peak = _reset_peak()
            profiler = cProfile.Profile() if args.profile else None
            started, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
            machine, programs = machine_cpu(), programs_cpu()
            if profiler:
                profiler.enable()
            report = scan(settings, options=ScanOptions(grace=300.0, use_state=False))
            if profiler:
                profiler.disable()
            scan_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu
            machine_s = None if machine is None else (machine_cpu() or 0.0) - machine
            by_program = programs_delta(programs, programs_cpu())
            reader_cpu_s = _children_cpu() - children
            slower = max(table_s, index_s)
            print(
                f"bare table read: {table_s:.2f} s ({rows} rows); "
                f"bare index scroll: {index_s:.2f} s ({docs} docs)"
            )
            print(
                f"scan: {scan_s:.2f} s ({cpu_s:.2f} s of CPU, all threads, {reader_cpu_s:.2f} s in its "
                f"reader), {len(report.findings)} findings; {scan_s / slower:.2f}x the slower bare read"
            )
            own_cpu = cpu_s + reader_cpu_s
            print(
                f"CPU per 100,000 entities: the scan {per_100k(own_cpu, rows):.2f} s (all threads and "
                f"its reader), a plain reader of the same rows and documents "
                f"{per_100k(plain_cpu, rows):.2f} s "
                f"({plain_s:.2f} s wall, {plain_read_n} rows and documents, {plain_differ} pairs differ as "
                f"plain dictionaries): {own_cpu / max(plain_cpu, 1e-9):.2f}x"
            )
            if plain_differ != len(report.findings):
                print(
                    f"NOTE: the plain reader counts {plain_differ} pairs as differing where the scan "
                    f"found {len(report.findings)}: it does not compare what the scan compares"
                )
            cores = os.cpu_count() or 1
            floor = None if machine_s is None else machine_s / cores  # every core busy all along
            if floor is not None:
                print(
                    f"the machine's CPU during the scan (servers included): {machine_s:.2f} s of "
                    f"{cores * scan_s:.2f} s its {cores} cores could give; done on every core at once "
                    f"it would take {floor:.2f} s, {floor / slower:.2f}x the slower bare read"
                )
                print(f"by program (the scan's reader under python too): {by_program}")
            # the same scan with the documents spilled by the scan's own thread (readers off),
            # then the default again: alternated, so that a drift of the machine's load hits both
            off = _timed_scan(_settings(url, endpoints.search_url(args.search), alias, readers=0))
            again = _timed_scan(settings)
            print(
                f"readers off: {off[0]:.2f} s ({off[1]:.2f} s of CPU), {off[0] / slower:.2f}x; "
                f"default again: {again[0]:.2f} s ({again[1]:.2f} s + {again[2]:.2f} s of CPU), "
                f"{again[0] / slower:.2f}x"
            )
            scan_peak = (_status_mib("VmHWM") if own_peak else None) or _rss_mib()
            print(
                f"peak RSS during the scan: {scan_peak:.0f} MiB (RSS before it {rss_before:.0f} MiB; "
                f"the process's peak, seeding included: {_rss_mib():.0f} MiB)"
            )
            alone = _scan_alone_peak(url, endpoints.search_url(args.search), alias)
            print(f"peak RSS of the same scan alone in a fresh process: {alone} MiB")
            if profiler:
                pstats.Stats(profiler).sort_stats(args.profile_by).print_stats(args.profile)
            print(
                json.dumps(
                    {
                        "entities": args.entities,
                        "pair": f"{args.store}+{args.search}",
                        "scan_s": round(scan_s, 3),
                        "scan_cpu_s": round(cpu_s, 3),
                        "bare_table_s": round(table_s, 3),
                        "bare_index_s": round(index_s, 3),
                        "ratio": round(scan_s / slower, 2),
                        "reader_cpu_s": round(reader_cpu_s, 3),
                        "cpu_per_100k_s": round(per_100k(own_cpu, rows), 2),
                        "plain_reader_cpu_per_100k_s": round(per_100k(plain_cpu, rows), 2),
                        "plain_reader_s": round(plain_s, 3),
                        "cpu_ratio_to_plain_reader": round(own_cpu / max(plain_cpu, 1e-9), 2),
                        "plain_reader_pairs_differ": plain_differ,
                        "machine_cpu_s": None if machine_s is None else round(machine_s, 3),
                        "ratio_if_every_core_busy": None if floor is None else round(floor / slower, 2),
                        "readers_off_s": round(off[0], 3),
                        "ratio_readers_off": round(off[0] / slower, 2),
                        "again_s": round(again[0], 3),
                        "ratio_again": round(again[0] / slower, 2),
                        "findings": len(report.findings),
                        "load_after": round(os.getloadavg()[0], 2),
                        "scan_alone_peak_rss_mib": alone,
                        "scan_peak_rss_mib": round(scan_peak),
                        "rss_before_scan_mib": round(rss_before),
                        "peak_rss_mib": round(_rss_mib()),
                    }
                )
            )
        finally:
            indices.delete_indices(search, alias)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
