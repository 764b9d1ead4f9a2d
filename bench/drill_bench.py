"""Restore-drill benchmark: two N-row aspect tables (PostgreSQL source, MariaDB target), compared by
`auditor drill` and by reladiff in the same run, identical and with 20 differences.

    python bench/drill_bench.py --rows 100000            # seeds, measures, drops its databases
    python bench/drill_bench.py --rows 1000000 --keep    # keep the seeded databases for a rerun
    python bench/drill_bench.py --rows 1000000 --reuse   # measure on the kept databases

The raw limit is `SELECT COUNT(*)` of each table, timed in the same run. reladiff (a data-diff
fork) is installed into its own venv (.bench/peers-venv, created when missing, never into the
project's dependencies). It cannot key on DataHub's text urns (its text keys must be all UUIDs or
same-length alphanumeric), so the bench adds a generated key column `rid` (a UUID from the row's
(urn, aspect, version), indexed) to both tables for it alone; the drill keys on (urn, aspect,
version) as DataHub does. Each measurement runs in its own process: its peak RSS is that process's
VmHWM. Not a timed test: the figures go to stdout, one JSON line last.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import Engine, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from sandbox.database import make_engine  # noqa: E402
from sandbox.ddl import create_schema  # noqa: E402
from sandbox.endpoints import Endpoints  # noqa: E402

SOURCE_DB, TARGET_DB = "drillbench_src", "drillbench_dst"
PEERS = ROOT / ".bench" / "peers-venv"
ASPECTS = (
    "datasetKey",
    "datasetProperties",
    "schemaMetadata",
    "ownership",
    "globalTags",
    "status",
    "browsePathsV2",
    "upstreamLineage",
    "glossaryTerms",
    "container",
)
COLUMNS = "urn, aspect, version, metadata, systemmetadata, createdon, createdby, createdfor, rid"


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def urls() -> tuple[str, str]:
    e = Endpoints.from_env()
    src = make_url(e.pg_url).set(database=SOURCE_DB).render_as_string(hide_password=False)
    dst = make_url(e.mysql_url).set(database=TARGET_DB).render_as_string(hide_password=False)
    return src, dst


def rows(n: int) -> Any:
    """DataHub-shaped rows: 10 aspects per dataset urn, metadata of 150 B to 3 KB (schemaMetadata
    the largest), system metadata as GMS writes it, createdon with microseconds."""
    rnd = random.Random(21)
    start = datetime(2026, 1, 1)
    for i in range(n):
        d, a = divmod(i, len(ASPECTS))
        urn = f"urn:li:dataset:(urn:li:dataPlatform:hive,warehouse_{d % 97}.table_{d:08d},PROD)"
        aspect = ASPECTS[a]
        if aspect == "schemaMetadata":
            fields = [
                {
                    "fieldPath": f"col_{k}",
                    "nativeDataType": "string",
                    "type": {"type": {"com.linkedin.schema.StringType": {}}},
                    "nullable": True,
                    "recursive": False,
                }
                for k in range(rnd.randint(4, 20))
            ]
            value: dict[str, Any] = {
                "schemaName": urn,
                "platform": "urn:li:dataPlatform:hive",
                "version": 0,
                "hash": "",
                "fields": fields,
                "platformSchema": {"com.linkedin.schema.MySqlDDL": {"tableSchema": ""}},
            }
        else:
            value = {
                "name": f"table_{d}",
                "description": "x" * rnd.randint(100, 900),
                "customProperties": {"owner": f"team_{d % 13}", "tier": str(d % 3)},
            }
        created = start + timedelta(seconds=i, microseconds=rnd.randint(0, 999_999))
        sm = {
            "lastObserved": 1767225600000 + i,
            "runId": "no-run-id-provided",
            "version": "1",
            "registryName": "unknownRegistry",
            "registryVersion": "0.0.0",
        }
        rid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{urn}|{aspect}|0"))
        yield (
            urn,
            aspect,
            0,
            json.dumps(value, separators=(",", ":")),
            json.dumps(sm, separators=(",", ":")),
            created,
            "urn:li:corpuser:datahub",
            None,
            rid,
        )


def create(engine_url: str, name: str) -> Engine:
    admin = make_engine(engine_url).execution_options(isolation_level="AUTOCOMMIT")
    force = " WITH (FORCE)" if admin.dialect.name == "postgresql" else ""
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name}{force}"))
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    engine = make_engine(make_url(engine_url).set(database=name).render_as_string(hide_password=False))
    create_schema(engine)
    with engine.begin() as conn:
        conn.execute(text("ALTER TABLE metadata_aspect_v2 ADD COLUMN rid char(36)"))
    return engine


def drop() -> None:
    e = Endpoints.from_env()
    for url, name, force in ((e.pg_url, SOURCE_DB, " WITH (FORCE)"), (e.mysql_url, TARGET_DB, "")):
        admin = make_engine(url).execution_options(isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}{force}"))
        admin.dispose()


def seed(n: int) -> dict[str, float]:
    e = Endpoints.from_env()
    pg, maria = create(e.pg_url, SOURCE_DB), create(e.mysql_url, TARGET_DB)
    times = {}
    started = time.monotonic()
    raw = pg.raw_connection()
    with raw.cursor() as cur:  # type: ignore[attr-defined]
        with cur.copy(f"COPY metadata_aspect_v2 ({COLUMNS}) FROM STDIN") as copy:
            for row in rows(n):
                copy.write_row(row)
    raw.commit()
    raw.close()
    times["seed_pg_s"] = time.monotonic() - started
    started = time.monotonic()
    raw = maria.raw_connection()
    cur = raw.cursor()
    insert = f"INSERT INTO metadata_aspect_v2 ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
    batch: list[Any] = []
    for row in rows(n):
        batch.append(row)
        if len(batch) == 2000:
            cur.executemany(insert, batch)  # PyMySQL sends one multi-row INSERT
            batch = []
    if batch:
        cur.executemany(insert, batch)
    raw.commit()
    raw.close()
    times["seed_mariadb_s"] = time.monotonic() - started
    for engine, sql in (
        (pg, "CREATE UNIQUE INDEX rid_idx ON metadata_aspect_v2 (rid)"),
        (maria, "CREATE UNIQUE INDEX rid_idx ON metadata_aspect_v2 (rid)"),
    ):
        with engine.begin() as conn:
            conn.execute(text(sql))
    with pg.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE metadata_aspect_v2"))
    with maria.begin() as conn:
        conn.execute(text("ANALYZE TABLE metadata_aspect_v2"))
    pg.dispose()
    maria.dispose()
    return times


def alter(n: int, k: int = 20) -> list[str]:
    """k differences on the target: metadata changed, rows deleted, rows added, createdon moved."""
    _, dst = urls()
    engine = make_engine(dst)
    rnd = random.Random(5)
    picks = sorted(rnd.sample(range(n), k))
    done = []
    with engine.begin() as conn:
        for j, i in enumerate(picks):
            d, a = divmod(i, len(ASPECTS))
            urn = f"urn:li:dataset:(urn:li:dataPlatform:hive,warehouse_{d % 97}.table_{d:08d},PROD)"
            key = {"u": urn, "a": ASPECTS[a]}
            if j % 4 == 0:
                conn.execute(
                    text(
                        "UPDATE metadata_aspect_v2 SET metadata = CONCAT(metadata, ' ') "
                        "WHERE urn = :u AND aspect = :a AND version = 0"
                    ),
                    key,
                )
            elif j % 4 == 1:
                conn.execute(
                    text("DELETE FROM metadata_aspect_v2 WHERE urn = :u AND aspect = :a AND version = 0"), key
                )
            elif j % 4 == 2:
                conn.execute(
                    text(
                        "UPDATE metadata_aspect_v2 SET createdon = createdon + INTERVAL 1 SECOND "
                        "WHERE urn = :u AND aspect = :a AND version = 0"
                    ),
                    key,
                )
            else:
                conn.execute(
                    text(
                        f"INSERT INTO metadata_aspect_v2 ({COLUMNS}) SELECT urn, 'extraAspect', 0, "
                        "metadata, systemmetadata, createdon, createdby, createdfor, UUID() "
                        "FROM metadata_aspect_v2 WHERE urn = :u AND aspect = :a AND version = 0"
                    ),
                    key,
                )
            done.append(f"{j % 4}:{urn}")
    engine.dispose()
    return done


# -- one measurement per process -----------------------------------------------------------
def child(what: str, workers: int) -> dict[str, Any]:
    src, dst = urls()
    started = time.monotonic()
    out: dict[str, Any] = {"what": what}
    if what.startswith("count_"):  # the query alone, on a connection already open
        url = src if what == "count_pg" else dst
        engine = make_engine(url)
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
            started = time.monotonic()
            out["rows"] = int(conn.execute(text("SELECT COUNT(*) FROM metadata_aspect_v2")).scalar() or 0)
    elif what.startswith("hash_"):  # one query: every byte of every row through MD5, no segments
        url = src if what == "hash_pg" else dst
        engine = make_engine(url)
        cols = "urn, aspect, version, metadata, systemmetadata, createdon, createdby, createdfor"
        if what == "hash_pg":
            value = f"('x' || LEFT(MD5(CONCAT_WS('|', {cols})), 15))::bit(60)::bigint"
        else:
            value = f"CAST(CONV(LEFT(MD5(CONCAT_WS('|', {cols})), 15), 16, 10) AS UNSIGNED)"
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
            started = time.monotonic()
            conn.execute(text(f"SELECT COUNT(*), SUM({value}) FROM metadata_aspect_v2")).one()
    elif what == "drill":  # everything a drill does but the imports: connecting, versions, diff
        from auditor.drill.run import Drill, DrillOptions
        from auditor.platforms.datahub.drill import METADATA_ASPECT_V2
        from auditor.settings import load_settings

        started = time.monotonic()
        options = DrillOptions(tables=(METADATA_ASPECT_V2,), workers=workers, counts=False)
        result = Drill(
            load_settings(None, env={}, store_url=src), load_settings(None, env={}, store_url=dst), options
        ).run()
        out["differences"] = len(result.rows)
        out["segments"] = result.tables[0].segments
        out["leaf_rows"] = result.tables[0].leaf_rows
    out["seconds"] = time.monotonic() - started
    out["peak_rss_mib"] = peak_rss_mib()
    return out


def measure(what: str, workers: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", what, "--workers", str(workers)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if done.returncode != 0:
        raise SystemExit(f"{what} failed: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def peers_venv() -> Path:
    python = PEERS / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEERS)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "reladiff[postgresql,mysql]"], check=True)
    return python


RELADIFF = """
import json, sys, time, resource
from reladiff import connect_to_table, diff_tables
src, dst, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
cols = ("urn", "aspect", "version", "metadata", "systemmetadata", "createdon", "createdby", "createdfor")
started = time.monotonic()
a = connect_to_table(src, "metadata_aspect_v2", "rid", thread_count=threads)
b = connect_to_table(dst, "metadata_aspect_v2", "rid", thread_count=threads)
n = sum(1 for _ in diff_tables(a, b, extra_columns=cols, threaded=True, max_threadpool_size=threads))
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        peak = int(line.split()[1]) / 1024
took = time.monotonic() - started
print(json.dumps({"what": "reladiff", "differences": n, "seconds": took, "peak_rss_mib": peak}))
"""


def reladiff(threads: int) -> dict[str, Any]:
    python = peers_venv()
    src, dst = urls()
    # reladiff's own URL schemes: postgresql:// and mysql:// (its drivers: psycopg2, mysql-connector)
    src = src.replace("postgresql+psycopg://", "postgresql://")
    dst = dst.replace("mysql+pymysql://", "mysql://")
    done = subprocess.run(
        [str(python), "-c", RELADIFF, src, dst, str(threads)], capture_output=True, text=True, timeout=3600
    )
    if done.returncode != 0:
        return {
            "what": "reladiff",
            "error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed",
        }
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2, help="drill connections per database")
    parser.add_argument("--threads", type=int, default=2, help="reladiff threads")
    parser.add_argument("--keep", action="store_true", help="keep the seeded databases")
    parser.add_argument("--reuse", action="store_true", help="measure on databases kept by --keep")
    parser.add_argument("--no-peer", action="store_true", help="skip reladiff")
    parser.add_argument(
        "--bare-hash",
        action="store_true",
        help="also time one whole-table MD5 query per database (the hashing floor)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.workers)))
        return
    summary: dict[str, Any] = {"rows": args.rows, "cpus": os.cpu_count()}
    if not args.reuse:
        summary.update(seed(args.rows))
        print(
            f"seeded {args.rows} rows per side: PostgreSQL {summary['seed_pg_s']:.1f} s, "
            f"MariaDB {summary['seed_mariadb_s']:.1f} s",
            flush=True,
        )
    try:
        for phase in ("identical", "20 differences"):
            if phase != "identical":
                alter(args.rows)
            counts = [measure("count_pg", 1), measure("count_mariadb", 1)]
            raw = max(c["seconds"] for c in counts)
            found = {"count_pg": counts[0], "count_mariadb": counts[1]}
            if args.bare_hash:  # what reading and hashing every byte costs each database, alone
                found |= {"hash_pg": measure("hash_pg", 1), "hash_mariadb": measure("hash_mariadb", 1)}
            found["drill"] = measure("drill", args.workers)
            if not args.no_peer:
                found["reladiff"] = reladiff(args.threads)
            summary[phase] = found
            print(f"-- {phase} ({args.rows} rows; raw limit = the slower count(*): {raw:.2f} s)")
            for name, m in found.items():
                if "error" in m:
                    print(f"  {name:14s} error: {m['error']}")
                    continue
                extra = f", {m['differences']} differences" if "differences" in m else ""
                print(
                    f"  {name:14s} {m['seconds']:7.2f} s  {m['seconds'] / raw:6.2f}x raw  "
                    f"peak {m['peak_rss_mib']:.0f} MiB{extra}",
                    flush=True,
                )
            if "reladiff" in found and "seconds" in found["reladiff"]:
                print(f"  drill / reladiff: {found['drill']['seconds'] / found['reladiff']['seconds']:.2f}")
    finally:
        if not args.keep:
            drop()
    print(json.dumps(summary, default=str))


if __name__ == "__main__":
    main()
