"""OpenMetadata triage benchmark: one entity of each state on a scratch catalog, each triaged by a
fresh process (as on call), median and max wall time per state, beside the import floor of the
same stack measured in the same run.

    python bench/om_triage_bench.py --store postgres --search opensearch3

States (written an hour ago unless said): consistent; a description edited in the document; a
document never written; an orphan document (its row hard-deleted); a soft delete the index
missed; a document never written, written just now. A divergence whose row dates it long ago and
an orphan (no change time) are judged on a first read; a soft delete and a fresh change wait the
index visibility delay (3 s) before the document is read (docs/openmetadata.md). Not a timed
test: figures on stdout, one JSON line last. The scratch database and indices are dropped after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy.engine import make_url  # noqa: E402

from bench.triage_bench import CLIENTS, DRIVERS, import_floor  # noqa: E402
from sandbox.endpoints import Endpoints  # noqa: E402
from sandbox.openmetadata.databases import scratch_database  # noqa: E402
from sandbox.openmetadata.ddl import create_schema  # noqa: E402
from sandbox.openmetadata.entities import now_ms  # noqa: E402
from sandbox.openmetadata.faults import Fault  # noqa: E402
from sandbox.openmetadata.generator import seed  # noqa: E402
from sandbox.openmetadata.indices import create_indices, delete_indices, index_name, refresh_all  # noqa: E402
from sandbox.openmetadata.server import OmServer  # noqa: E402
from sandbox.search import connect  # noqa: E402

HOUR = 3_600_000
EXPECTED = {  # state -> (verdict, exit code) of a triage with --grace 0
    "consistent": ("consistent", 0),
    "stale description": ("diverged", 1),
    "missing document": ("diverged", 1),
    "orphan document": ("in_flight", 0),  # no change time: unconfirmed until a scan has seen it
    "soft delete missed": ("diverged", 1),
    "missing, written now": ("diverged", 1),
}


def plant(server: OmServer, search: Any, alias: str) -> dict[str, str]:
    """One entity of each state; returns state -> its id."""
    tables = server.of_type("table")
    schema = server.entities[tables[0].parent_id]
    old = now_ms() - HOUR
    stale = server.create("table", "bench_stale", schema, updated_at=old)
    missing = server.create("table", "bench_missing", schema, updated_at=old, fault=Fault.SEARCH_WRITE_FAILS)
    gone = server.create("table", "bench_orphan", schema, updated_at=old)
    server.hard_delete(gone, fault=Fault.ORPHAN_DOC)
    dropped = server.create("table", "bench_soft_deleted", schema, updated_at=old)
    server.soft_delete(dropped, fault=Fault.SOFT_DELETE_NOT_PROPAGATED)
    fresh = server.create("table", "bench_fresh", schema, fault=Fault.SEARCH_WRITE_FAILS)
    name = index_name("table", alias)
    search.upsert(name, stale.id, {"description": "edited in the document"})
    refresh_all(search, alias)
    return {
        "consistent": tables[1].id,
        "stale description": stale.id,
        "missing document": missing.id,
        "orphan document": gone.id,
        "soft delete missed": dropped.id,
        "missing, written now": fresh.id,
    }


def triage(args: list[str], env: dict[str, str]) -> tuple[float, int, dict[str, Any]]:
    began = time.monotonic()
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - began
    return took, done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="postgres", choices=sorted(DRIVERS))
    parser.add_argument("--search", default="opensearch3", choices=sorted(CLIENTS))
    parser.add_argument("--entities", type=int, default=2000, help="the scratch catalog's size")
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per state")
    args = parser.parse_args()
    endpoints = Endpoints.from_env()
    search = connect(args.search, endpoints)
    alias = f"omtb{uuid.uuid4().hex[:8]}"
    load_before = os.getloadavg()[0]
    with scratch_database(args.store, endpoints) as engine:
        create_schema(engine)
        create_indices(search, alias)
        try:
            server = OmServer(engine, search, alias)
            seed(server, args.entities, seed=7)
            ids = plant(server, search, alias)
            state_file = Path(f"/tmp/om_triage_bench_{alias}.sqlite")
            env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
            env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed tool has its bytecode
            env["AUDITOR_STATE_FILE"] = str(state_file)
            base = [sys.executable, "-m", "auditor.cli", "triage", "", "--platform", "openmetadata",
                    "--store-url", make_url(engine.url).render_as_string(hide_password=False),
                    "--search-url", endpoints.search_url(args.search), "--cluster-alias", alias,
                    "--format", "json", "--grace", "0"]  # fmt: skip
            triage([*base[:4], ids["consistent"], *base[5:]], env)  # the bytecode, written once
            floor = import_floor(env, args.store, args.search, more=())  # no change log to read
            print(f"import floor (interpreter + libraries, fresh process): {floor:.2f}s")
            results: dict[str, dict[str, Any]] = {}
            wrong = []
            for state, entity_id in ids.items():
                times = []
                for _ in range(args.runs):
                    took, code, out = triage([*base[:4], entity_id, *base[5:]], env)
                    times.append(took)
                    if (out.get("verdict"), code) != EXPECTED[state]:
                        wrong.append((state, code, out.get("verdict")))
                results[state] = {
                    "median_s": round(statistics.median(times), 3),
                    "max_s": round(max(times), 3),
                }
                print(f"  {state:<22} median {statistics.median(times):.2f}s, max {max(times):.2f}s "
                      f"({statistics.median(times) / floor:.2f}x the import floor)")  # fmt: skip
            state_file.unlink(missing_ok=True)
        finally:
            delete_indices(search, alias)
    load = {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}
    print(f"load average (1 min): {load['before']} before, {load['after']} after")
    for w in wrong:
        print(f"  WRONG {w}")
    summary = {"bench": "om_triage", "store": args.store, "search": args.search, "load": load}
    print(
        json.dumps({**summary, "import_floor_s": round(floor, 3), "states": results, "wrong_verdicts": wrong})
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
