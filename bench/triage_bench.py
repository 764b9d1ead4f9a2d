"""Triage benchmark: 50 urns of mixed states on the bench catalog, each triaged by a fresh process
(as on call), with Kafka and the schema registry reachable; median and p95 wall time.

    python bench/scan_bench.py --n 100000 --store mariadb     # seeds the catalog once
    python bench/triage_bench.py --store mariadb --search opensearch

States (5 or 10 urns each): consistent; consistent but pasted URL-encoded and quoted; a field
edited in the document; a document left after its rows were deleted; a document missing; a
soft delete the index missed; an unknown urn with a near match (another case); an unknown urn
with none; a malformed urn. Every change is put back afterwards. Two rounds: without a state
file, and after a scan wrote one (the last scan's offsets spare the visibility wait when the
group has not moved since). Not a timed test: the figures go to stdout, one JSON line last.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import text  # noqa: E402

from auditor.platforms.datahub.urn_text import dataset_name  # noqa: E402
from sandbox.endpoints import Endpoints  # noqa: E402

PREFIX = "bench"
TABLE = "metadata_aspect_v2_bench"
SET_STATUS = f"UPDATE {TABLE} SET metadata = :m WHERE urn = :u AND aspect = 'status' AND version = 0"
EXPECTED = {
    "consistent": "consistent",
    "pasted": "consistent",
    "stale field": "diverged",
    "orphan doc": "diverged",
    "missing doc": "diverged",
    "soft delete missed": "diverged",
    "near match": "unknown",
    "unknown": "unknown",
    "malformed": "refused",
}


def _env(store: str, search: str, state: Path | None) -> dict[str, str]:
    e = Endpoints.from_env()
    # an installed tool has its bytecode (pip compiles it); a machine that sets
    # PYTHONDONTWRITEBYTECODE for its work tree would make every triage compile the auditor again
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {
        **inherited,
        "AUDITOR_STORE_URL": e.store_url(store),
        "AUDITOR_SEARCH_URL": e.search_url(search),
        "AUDITOR_KAFKA_BOOTSTRAP": e.kafka,
        "AUDITOR_SCHEMA_REGISTRY_URL": e.registry,
        "AUDITOR_INDEX_PREFIX": PREFIX,
        "AUDITOR_STORE_TABLE": TABLE,
        "AUDITOR_STATE_FILE": str(state) if state else "/nonexistent/auditor-state.sqlite",
    }


def pick(engine: Any) -> dict[str, list[str]]:
    with engine.connect() as conn:
        datasets = [
            r[0]
            for r in conn.execute(
                text(
                    f"SELECT urn FROM {TABLE} WHERE version = 0 AND aspect = 'datasetProperties' "
                    "AND urn LIKE 'urn:li:dataset:%' ORDER BY urn LIMIT 400"
                )
            )
        ]
        others = [
            r[0]
            for r in conn.execute(
                text(
                    f"SELECT DISTINCT urn FROM {TABLE} WHERE version = 0 AND urn NOT LIKE 'urn:li:dataset:%' "
                    "ORDER BY urn LIMIT 200"
                )
            )
        ]
    assert len(datasets) >= 40 and len(others) >= 5, "seed the bench catalog first: bench/scan_bench.py"
    step = len(datasets) // 40
    d = datasets[::step][:40]
    return {
        "consistent": d[0:5] + others[::40][:5],
        "pasted": d[5:10],
        "stale field": d[10:15],
        "orphan doc": d[15:20],
        "missing doc": d[20:25],
        "soft delete missed": d[25:30],
        "near match": d[30:35],
        "unknown": [f"urn:li:dataset:(urn:li:dataPlatform:nowhere,bench-unknown-{i},PROD)" for i in range(5)],
        "malformed": [f"urn:li:dataset:(urn:li:dataPlatform:hive,broken-{i}" for i in range(5)],
    }


class Breakage:
    """The states, made in the table and the index, and put back."""

    def __init__(self, store: str, search: str) -> None:
        from sandbox.database import engine_for
        from sandbox.naming import entity_doc_id, entity_index
        from sandbox.search import connect

        e = Endpoints.from_env()
        self.engine = engine_for(store, e)
        self.search = connect(search, e)
        self.index = entity_index("dataset", PREFIX)
        self.doc_id = entity_doc_id
        self.rows: list[Any] = []
        self.docs: dict[str, dict[str, Any]] = {}
        self.status: dict[str, Any] = {}

    def apply(self, urns: dict[str, list[str]]) -> None:
        for urn in urns["stale field"] + urns["missing doc"]:
            doc = self.search.get(self.index, self.doc_id(urn))
            assert doc is not None, urn
            self.docs[urn] = doc
        for urn in urns["stale field"]:
            self.search.upsert(self.index, self.doc_id(urn), {"name": "renamed behind DataHub's back"})
        for urn in urns["missing doc"]:
            self.search.delete(self.index, self.doc_id(urn))
        with self.engine.begin() as conn:
            for urn in urns["orphan doc"]:
                self.rows += list(
                    conn.execute(text(f"SELECT * FROM {TABLE} WHERE urn = :u"), {"u": urn}).mappings()
                )
                conn.execute(text(f"DELETE FROM {TABLE} WHERE urn = :u"), {"u": urn})
            for urn in urns["soft delete missed"]:
                old = conn.execute(
                    text(
                        f"SELECT metadata FROM {TABLE} WHERE urn = :u AND aspect = 'status' AND version = 0"
                    ),
                    {"u": urn},
                ).scalar()
                self.status[urn] = old
                if old is None:
                    conn.execute(
                        text(
                            f"INSERT INTO {TABLE} (urn, aspect, version, metadata, systemmetadata, "
                            "createdon, createdby) "
                            "SELECT urn, 'status', 0, :m, systemmetadata, createdon, createdby "
                            f"FROM {TABLE} WHERE urn = :u AND aspect = 'datasetProperties' AND version = 0"
                        ),
                        {"u": urn, "m": '{"removed":true}'},
                    )
                else:
                    conn.execute(
                        text(SET_STATUS),
                        {"u": urn, "m": '{"removed":true}'},
                    )
        self.search.refresh(self.index)

    def undo(self) -> None:
        self.search.bulk_put(self.index, [(self.doc_id(urn), doc) for urn, doc in self.docs.items()])
        with self.engine.begin() as conn:
            for row in self.rows:
                cols = ", ".join(row.keys())
                conn.execute(
                    text(f"INSERT INTO {TABLE} ({cols}) VALUES ({', '.join(':' + k for k in row)})"),
                    dict(row),
                )
            for urn, old in self.status.items():
                if old is None:
                    conn.execute(
                        text(f"DELETE FROM {TABLE} WHERE urn = :u AND aspect = 'status' AND version = 0"),
                        {"u": urn},
                    )
                else:
                    conn.execute(
                        text(SET_STATUS),
                        {"u": urn, "m": old},
                    )
        self.search.refresh(self.index)


def asked(state: str, urn: str) -> str:
    if state == "pasted":
        return f"  '{quote(urn, safe='')}' "
    if state == "near match":
        name = dataset_name(urn) or ""
        return urn.replace(f",{name},", f",{name.upper()},")
    return urn


def triage(env: dict[str, str], text_: str) -> tuple[float, int, dict[str, Any] | None, str]:
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "auditor.cli", "triage", text_, "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - began
    out = json.loads(done.stdout) if done.stdout.strip() else None
    return took, done.returncode, out, done.stderr


def cli_verdict(code: int, out: dict[str, Any] | None) -> str | None:
    """A cold triage's verdict; refused: exit 2, and on stdout (JSON asked for) the one error
    object, or nothing."""
    refused = code == 2 and (out is None or set(out) == {"error", "hint", "exit_code"})
    return "refused" if refused else (out or {}).get("verdict")


def round_of(env: dict[str, str], urns: dict[str, list[str]], label: str) -> dict[str, Any]:
    times: list[float] = []
    by_state: dict[str, list[float]] = {}
    wrong = []
    for state, members in urns.items():
        for urn in members:
            took, code, out, err = triage(env, asked(state, urn))
            times.append(took)
            by_state.setdefault(state, []).append(took)
            verdict = cli_verdict(code, out)
            if verdict != EXPECTED[state]:
                wrong.append((state, urn, code, verdict, err.strip()[:200]))
    times.sort()
    p95 = times[max(0, int(round(0.95 * len(times))) - 1)]
    result = {
        "round": label,
        "urns": len(times),
        "median_s": round(statistics.median(times), 3),
        "p95_s": round(p95, 3),
        "max_s": round(times[-1], 3),
        "by_state_median_s": {s: round(statistics.median(v), 3) for s, v in by_state.items()},
        "wrong_verdicts": wrong,
    }
    print(f"{label}: median {result['median_s']:.2f}s, p95 {result['p95_s']:.2f}s over {len(times)} urns")
    for state, median in result["by_state_median_s"].items():
        print(f"  {state:<20} median {median:.2f}s")
    for w in wrong:
        print(f"  WRONG {w}")
    return result


# what any triage process pays before its own code runs: the interpreter and the libraries it
# needs (the CLI keeps aiohttp and httpx out, as here), timed in the same run: the floor the figures
# sit on. The store's driver, not SQLAlchemy: a plain store URL is read through the driver itself
# (auditor/backends/dbapi.py; until 2026-12-06 the floor imported SQLAlchemy, PyMySQL and
# opensearch-py whatever the stack)
DRIVERS = {"postgres": "psycopg", "mariadb": "pymysql"}
CLIENTS = {"opensearch": "opensearchpy", "opensearch3": "opensearchpy", "elasticsearch": "elasticsearch"}
CHANGE_LOG = ("confluent_kafka", "fastavro")  # DataHub's triage reads Kafka; OpenMetadata's has none


def floor_imports(store: str, search: str, more: tuple[str, ...] = CHANGE_LOG) -> str:
    return (
        "import sys; sys.modules['aiohttp'] = None; sys.modules['httpx'] = None; "
        f"import {', '.join(('typer', 'pydantic_settings', DRIVERS[store], CLIENTS[search], *more))}"
    )


def import_floor(
    env: dict[str, str], store: str, search: str, runs: int = 5, more: tuple[str, ...] = CHANGE_LOG
) -> float:
    times = []
    for _ in range(runs):
        began = time.monotonic()
        code = floor_imports(store, search, more)
        subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
        times.append(time.monotonic() - began)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="mariadb", choices=["mariadb", "postgres"])
    parser.add_argument("--search", default="opensearch", choices=["opensearch", "elasticsearch"])
    args = parser.parse_args()
    breakage = Breakage(args.store, args.search)
    urns = pick(breakage.engine)
    results = []
    breakage.apply(urns)
    load_before = os.getloadavg()[0]
    try:
        triage(_env(args.store, args.search, None), urns["consistent"][0])  # the bytecode, written once
        floor = import_floor(_env(args.store, args.search, None), args.store, args.search)
        print(f"import floor (interpreter + libraries, fresh process): {floor:.2f}s")
        results.append(round_of(_env(args.store, args.search, None), urns, "no state file"))
        with tempfile.TemporaryDirectory() as tmp:
            state = Path(tmp) / "state.sqlite"
            env = _env(args.store, args.search, state)
            # a scheduled scan ran earlier (here: of one entity, which records the group's offsets)
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "auditor.cli",
                    "scan",
                    "--urn-like",
                    urns["consistent"][0],
                    "--format",
                    "json",
                ],
                env=env,
                capture_output=True,
                timeout=300,
                check=True,
            )
            time.sleep(3.5)  # older than the index visibility delay
            results.append(round_of(env, urns, "after a scan (state file)"))
    finally:
        breakage.undo()
    load = {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}
    print(f"load average (1 min): {load['before']} before, {load['after']} after")
    for r in results:
        r["import_floor_s"] = round(floor, 3)
        r["median_over_floor"] = round(r["median_s"] / floor, 2)
        print(f"{r['round']}: median {r['median_s']:.2f}s = {r['median_over_floor']:.2f}x the import floor")
    print(
        json.dumps(
            {"bench": "triage", "store": args.store, "search": args.search, "load": load, "rounds": results}
        )
    )
    return 0 if not any(r["wrong_verdicts"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
