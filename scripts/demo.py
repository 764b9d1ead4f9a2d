"""The main job on the sandbox: seed, break it like production breaks, scan, repair, scan again.

Brings a DataHub-shaped catalog into MariaDB + OpenSearch through the GMS-like writer, real
Kafka and the MAE-like consumer; then injects a dropped MCL, a skipped index write, a hard
delete behind the index's back and a soft delete the index never saw; then builds a backlog
behind a slow consumer (delay), and runs `auditor scan` while that consumer catches up. Then it
repairs what the scan found (`auditor rebuild replay`, then `reindex`) and scans again: clean.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox.consumer import MaeConsumer  # noqa: E402
from sandbox.database import engine_for  # noqa: E402
from sandbox.ddl import create_schema  # noqa: E402
from sandbox.endpoints import Endpoints  # noqa: E402
from sandbox.generator import seed  # noqa: E402
from sandbox.naming import ASPECT_TABLE  # noqa: E402
from sandbox.search import connect  # noqa: E402
from sandbox.versions import write_deployment  # noqa: E402
from sandbox.writer import GmsWriter  # noqa: E402

PREFIX = "demo"


RELEASE = "1.7.0"  # the DataHub release the sandbox deployment runs (docs/versions.md)

def say(message: str) -> None:
    print(f"\033[1m==> {message}\033[0m", flush=True)


def tags(*names: str) -> dict:
    return {"tags": [{"tag": f"urn:li:tag:{n}"} for n in names]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=300, help="entities in the catalog")
    parser.add_argument("--store", default="mariadb", choices=("mariadb", "postgres"))
    parser.add_argument("--search", default="opensearch", choices=("opensearch", "elasticsearch"))
    args = parser.parse_args()
    endpoints = Endpoints.from_env()

    say(f"resetting the sandbox's {args.store} table and '{PREFIX}_*' indices on {args.search}")
    engine = engine_for(args.store, endpoints)
    create_schema(engine)
    with engine.begin() as conn:
        conn.execute(text(f"DELETE FROM {ASPECT_TABLE}"))
    search = connect(args.search, endpoints)
    for index in search.list_indices(f"{PREFIX}_*"):
        search.delete_index(index)
    sys.path.insert(0, str(ROOT / "tests" / "scenarios"))
    from world import move_group_to_end

    move_group_to_end(endpoints.kafka)

    say(
        f"seeding a DataHub {RELEASE} deployment: its upgrade rows, then {args.n} entities through the "
        "GMS-like writer -> Kafka -> MAE-like consumer"
    )
    writer = GmsWriter(engine, endpoints)
    consumer = MaeConsumer(args.search, endpoints, index_prefix=PREFIX)
    consumer.updater.release = RELEASE  # documents as DataHub 1.7.0 writes them
    consumer.start()
    write_deployment(writer, RELEASE)
    catalog = seed(writer, args.n, seed=7, prefix="demo-")
    assert consumer.drain(300), "the consumer did not drain"
    live = [e for e in catalog if not e.removed]
    datasets = [e.urn for e in live if e.entity_type == "dataset"]
    charts = [e.urn for e in live if e.entity_type == "chart"]
    dashboards = [e.urn for e in live if e.entity_type == "dashboard"]

    say("breaking it: a dropped MCL, a skipped index write, a hard delete, a lost soft delete")
    writer.write(datasets[0], "globalTags", tags("pii"), drop_mcl=True)
    consumer.skip_index_write({charts[0], datasets[1]})
    writer.write(charts[0], "globalTags", tags("certified"))
    writer.soft_delete(datasets[1])
    writer.hard_delete_rows(dashboards[0])
    assert consumer.drain(60)
    consumer.skip_index_write(None)

    say("building a backlog: the consumer pauses, 40 updates arrive, it resumes at 2 msg/s")
    consumer.pause()
    for i, urn in enumerate(datasets[2:22]):
        writer.write(urn, "globalTags", tags(f"backlog-{i}"))
        writer.write(
            urn,
            "glossaryTerms",
            {
                "terms": [{"urn": f"urn:li:glossaryTerm:t{i}"}],
                "auditStamp": {"time": 0, "actor": "urn:li:corpuser:datahub"},
            },
        )
    consumer.rate(2.0)
    consumer.resume()

    say("auditor scan (read-only), while the consumer catches up")
    env = {
        **os.environ,
        "AUDITOR_STORE_URL": endpoints.store_url(args.store),
        "AUDITOR_SEARCH_URL": endpoints.search_url(args.search),
        "AUDITOR_KAFKA_BOOTSTRAP": endpoints.kafka,
        "AUDITOR_SCHEMA_REGISTRY_URL": endpoints.registry,
        "AUDITOR_INDEX_PREFIX": PREFIX,
        "AUDITOR_STATE_FILE": str(ROOT / ".stack-demo-state.sqlite"),
    }
    auditor = [sys.executable, "-m", "auditor.cli"]
    done = subprocess.run(
        [*auditor, "scan", "--settle", "2", "--sample-window", "4", "--format", "console"],
        env=env,
        check=False,
    )
    subprocess.run(
        [
            *auditor,
            "scan",
            "--settle",
            "2",
            "--sample-window",
            "4",
            "--format",
            "json",
            "-o",
            str(ROOT / "demo-report.json"),
            "--metrics-file",
            str(ROOT / "demo-metrics.prom"),
        ],
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run(
        [*auditor, "report", "render", str(ROOT / "demo-report.json"), "-o", str(ROOT / "demo-report.html")],
        env=env,
        check=False,
    )
    say("the backlog drains (the delay converges by itself); the divergence needs a repair")
    consumer.rate(None)
    assert consumer.drain(120), "the consumer did not drain"
    report = str(ROOT / "demo-report.json")
    say("auditor rebuild plan: what the report's divergences need (nothing written)")
    subprocess.run([*auditor, "rebuild", "plan", "--from-report", report], env=env, check=False)
    say("auditor rebuild replay --apply: RESTATE MCLs for what DataHub's consumer can re-apply")
    subprocess.run([*auditor, "rebuild", "replay", "--from-report", report, "--apply"], env=env, check=False)
    say("auditor rebuild reindex --apply: the rest (the orphan's docs), straight from the rows")
    subprocess.run([*auditor, "rebuild", "reindex", "--from-report", report, "--apply"], env=env, check=False)
    say("auditor scan again: clean")
    again = subprocess.run([*auditor, "scan", "--settle", "2", "--sample-window", "2"], env=env, check=False)
    consumer.stop()
    writer.close()
    print(
        f"\nfirst scan exit code {done.returncode} (1 = persistent divergence found, as injected); "
        f"after the repair: {again.returncode} (0 = clean); "
        "JSON report in demo-report.json (HTML: demo-report.html), metrics in demo-metrics.prom"
    )
    return 0 if done.returncode == 1 and again.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
