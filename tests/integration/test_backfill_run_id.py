"""DataHub's backfill steps against the real stack (PostgreSQL, Kafka, OpenSearch 2): after an
upgrade, a step of datahub-upgrade (an `AbstractMCLStep` subclass, e.g. the chart-info step)
re-emits each aspect's MCL with its own id as `runId` and its run's time as `lastObserved`,
writing no row, and records itself as `urn:li:dataHubUpgrade:<id>`. The system-metadata document
then carries the step's `runId` while the row keeps the ingestion's: consistent, never diverged.
A `runId` that names no finished step stays diverged."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import text
from test_watch_stack import World

from auditor.api import ScanOptions, scan
from sandbox.naming import ASPECT_TABLE, system_metadata_doc_id, system_metadata_index

pytestmark = pytest.mark.integration
STEP = "chart-info-v1"  # a backfill step's id: the runId of the MCLs it re-emits
ASPECT = "tagProperties"


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    w = World()
    yield w
    w.close()


def re_emit(world: World, urn: str, run_id: str, updated: int) -> None:
    """The step's system-metadata document for the tag's aspect (`runId` the step's, `lastUpdated`
    its run), then a re-ingestion that changed nothing: the row's `lastObserved` moves past it,
    its `runId` stays the ingestion's, and no MCL is emitted (DataHub's no-op write)."""
    index, doc_id = system_metadata_index(world.prefix), system_metadata_doc_id(urn, ASPECT)
    world.search.upsert(index, doc_id, {"runId": run_id, "lastUpdated": updated})
    where = {"urn": urn, "aspect": ASPECT}
    select = (
        f"SELECT systemmetadata FROM {ASPECT_TABLE} WHERE urn = :urn AND aspect = :aspect AND version = 0"
    )
    update = (
        f"UPDATE {ASPECT_TABLE} SET systemmetadata = :s WHERE urn = :urn AND aspect = :aspect AND version = 0"
    )
    with world.engine.begin() as conn:
        meta = json.loads(conn.execute(text(select), where).scalar_one())
        meta["lastObserved"] = updated + 60_000
        conn.execute(text(update), {**where, "s": json.dumps(meta)})


def test_a_finished_backfill_steps_run_id_is_consistent_and_an_unknown_run_is_not(world: World) -> None:
    known, unknown, earlier, untouched = world.write(4)
    now = int(time.time() * 1000)
    world.writer.write(f"urn:li:dataHubUpgrade:{STEP}", "dataHubUpgradeResult",
                       {"state": "SUCCEEDED", "timestampMs": now, "result": {}})  # fmt: skip
    assert world.consumer.drain(60)
    re_emit(world, known, STEP, now)
    re_emit(world, unknown, "not-a-step-v1", now)
    re_emit(world, earlier, STEP, now - 86_400_000)  # the step ran a day before this version was written
    for index in world.search.list_indices(f"{world.prefix}_*"):  # the consumer's writes searchable
        world.search.refresh(index)
    options = ScanOptions(grace=300.0, settle=0.5, sample_window=1.0, use_state=False)
    report = scan(world.settings(), options=options)
    by_urn: dict[str, set[tuple[str, str]]] = {}
    for c in report.findings:
        by_urn.setdefault(c.finding.urn, set()).add((c.finding.kind.value, c.verdict.value))
    assert known not in by_urn and untouched not in by_urn, by_urn
    assert by_urn.get(unknown) == {("stale_system_metadata", "diverged")}, by_urn
    assert by_urn.get(earlier) == {("stale_system_metadata", "diverged")}, by_urn
