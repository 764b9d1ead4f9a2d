"""Cross-engine OpenMetadata drill benchmark: a seeded OM catalog (PostgreSQL) copied to MariaDB and
to a second PostgreSQL database, then, in the same run: the same-engine drill (checksums inside the
databases), the cross-engine drill (both sides streamed and merged outside them), and the raw read
the cross-engine drill cannot beat (both sides' rows streamed in key byte order, nothing parsed).

    python bench/drill_om_bench.py --entities 20000

Not a timed test: figures on stdout, one JSON line last. Databases and indices dropped after.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import Engine, text  # noqa: E402

from auditor.drill.run import Drill, DrillOptions  # noqa: E402
from auditor.drill.side import Side  # noqa: E402
from auditor.drill.tables import table_specs  # noqa: E402
from auditor.settings import load_settings  # noqa: E402
from sandbox.openmetadata import indices  # noqa: E402
from sandbox.openmetadata.databases import scratch_database  # noqa: E402
from sandbox.openmetadata.ddl import create_schema  # noqa: E402
from sandbox.openmetadata.generator import seed  # noqa: E402
from sandbox.openmetadata.model import ENTITY_TYPES  # noqa: E402
from sandbox.openmetadata.server import OmServer  # noqa: E402
from sandbox.search import connect  # noqa: E402

TABLES = sorted(et.table for et in ENTITY_TYPES.values())


def _url(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def copy(src: Engine, dst: Engine) -> None:
    """Every entity row, compact JSON with keys in another order on MariaDB (as a restore writes)."""
    postgres = dst.dialect.name == "postgresql"
    for et in ENTITY_TYPES.values():
        with src.connect() as conn:
            rows = conn.execute(text(f"SELECT json::text, {et.hash_column} FROM {et.table}")).all()
        params = [
            {"j": json.dumps(dict(reversed(json.loads(j).items())), separators=(",", ":")), "h": h}
            for j, h in rows
        ]
        value = "CAST(:j AS jsonb)" if postgres else ":j"
        with dst.begin() as conn:
            for i in range(0, len(params), 2000):
                conn.execute(
                    text(f"INSERT INTO {et.table} (json, {et.hash_column}) VALUES ({value}, :h)"),
                    params[i : i + 2000],
                )
        with dst.begin() as conn:
            conn.execute(text(f"ANALYZE {'' if postgres else 'TABLE '}{et.table}"))


def drill(source: str, target: str) -> tuple[float, int, int]:
    options = DrillOptions(tables=table_specs(TABLES, "openmetadata"), counts=False)
    started = time.monotonic()
    result = Drill(
        load_settings(None, env={}, store_url=source), load_settings(None, env={}, store_url=target), options
    ).run()
    return time.monotonic() - started, sum(t.source_rows for t in result.tables), len(result.rows)


def raw_read(source: str, target: str) -> float:
    """Both sides' rows streamed in key byte order, as the merge reads them, nothing parsed."""
    sides = [Side("source", source), Side("target", target)]
    started = time.monotonic()
    try:
        futures = [
            s.submit(
                lambda s=s: sum(
                    len(p)
                    for spec in table_specs(TABLES, "openmetadata")
                    for p in s.stream_rows(spec, {}, 2000)
                )
            )
            for s in sides
        ]
        for f in futures:
            f.result()
    finally:
        for s in sides:
            s.close()
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    search = connect("opensearch")
    alias = f"drillbench{uuid.uuid4().hex[:8]}"
    with (
        scratch_database("postgres", prefix="drill") as pg,
        scratch_database("postgres", prefix="drill") as pg2,
        scratch_database("mariadb", prefix="drill") as maria,
    ):
        for engine in (pg, pg2, maria):
            create_schema(engine)
        indices.create_indices(search, alias)
        try:
            t0 = time.monotonic()
            seed(OmServer(pg, search, alias), args.entities, seed=3)
            with pg.begin() as conn:
                for table in TABLES:
                    conn.execute(text(f"ANALYZE {table}"))
            copy(pg, pg2)
            copy(pg, maria)
            print(f"seeded {args.entities} entities and copied in {time.monotonic() - t0:.1f} s", flush=True)
        finally:
            indices.delete_indices(search, alias)
        out: dict[str, list[float]] = {"same_engine": [], "cross_engine": [], "raw_read": []}
        for _ in range(args.rounds):
            s, rows, diffs = drill(_url(pg), _url(pg2))
            out["same_engine"].append(round(s, 2))
            print(f"PostgreSQL -> PostgreSQL (in-database checksums): {s:.2f} s, {rows} rows, {diffs} differ")
            c, rows, diffs = drill(_url(pg), _url(maria))
            out["cross_engine"].append(round(c, 2))
            print(f"PostgreSQL -> MariaDB (streamed, merged outside): {c:.2f} s, {rows} rows, {diffs} differ")
            r = raw_read(_url(pg), _url(maria))
            out["raw_read"].append(round(r, 2))
            print(f"raw read of both sides in key byte order:        {r:.2f} s", flush=True)
        best = {k: min(v) for k, v in out.items()}
        print(
            f"best of {args.rounds}: cross/same {best['cross_engine'] / best['same_engine']:.2f}x, "
            f"cross/raw read {best['cross_engine'] / best['raw_read']:.2f}x; "
            f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
        )
        print(json.dumps({"entities": args.entities, **out}))


if __name__ == "__main__":
    main()
