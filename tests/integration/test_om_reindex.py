"""OpenMetadata's own reindex (1.12 and later) as evidence, against the real servers.

On both pairs (PostgreSQL + OpenSearch 3, MariaDB + Elasticsearch 9), with the sandbox's
SearchIndexingApplication driven step by step (sandbox/openmetadata/reindex.py): a job in
progress turns its type's findings in flight with its progress and an ETA; a failure row is the
evidence of a divergence; a partial promotion is reported with its job and failure rows; during
a 2.0 reindex a live write that went to the `_rebuild_` index is in flight, and a warning names
that index; an OpenMetadata without the tables scans as before, with a warning.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from om_world import World, om_world

from auditor.api import triage
from auditor.core.model import Classified, Report, Verdict
from auditor.platforms.openmetadata.reindex_read import CLOCK_SKEW_MS
from sandbox.openmetadata.entities import OmEntity
from sandbox.openmetadata.faults import Fault
from sandbox.openmetadata.indices import refresh_all
from sandbox.openmetadata.reindex import Reindex, job_order

pytestmark = pytest.mark.integration

PAIRS = [("postgres", "opensearch3"), ("mariadb", "elasticsearch")]
STACK = "Exception: mapper_parsing_exception\n\tat org.opensearch.index.mapper.DocumentParser.parse"


class ReindexWorld(World):
    def scan(self) -> Report:
        refresh_all(self.search, self.alias)
        return super().scan()

    def ordered(self, kind: str) -> list[OmEntity]:
        """The live entities of this type in the order a reindex reads them (name, id)."""
        return [self.server.entities[i] for _, i in job_order(self.server, kind) if i in self.server.entities]

    def last(self, kind: str) -> OmEntity:
        """The entity of this type a reindex reaches last."""
        return self.ordered(kind)[-1]

    def first(self, kind: str) -> OmEntity:
        return self.ordered(kind)[0]


@contextmanager
def reindex_world(
    store: str, search: str, tmp_path: Path, *, reindex_tables: bool = True
) -> Iterator[ReindexWorld]:
    with om_world(
        store, search, tmp_path, prefix="om28x", n=80, seeded=5, reindex_tables=reindex_tables, visibility=0.5
    ) as w:
        yield ReindexWorld(w.server, w.search, w.alias, w.store_url, w.search_url, w.state, w.visibility)


@pytest.fixture(params=PAIRS, ids=lambda p: f"{p[0]}+{p[1]}")
def pair(request: pytest.FixtureRequest) -> tuple[str, str]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def world(pair: tuple[str, str], tmp_path: Path) -> Iterator[ReindexWorld]:
    with reindex_world(*pair, tmp_path) as made:
        yield made


def _by_urn(report: Report) -> dict[str, Classified]:
    return {c.finding.urn: c for c in report.findings}


def _stale(w: ReindexWorld, entity: OmEntity) -> None:
    w.server.update(
        entity, description=f"changed, not indexed {uuid.uuid4().hex[:6]}", fault=Fault.STALE_UPDATE
    )


def _rebuilding(w: ReindexWorld) -> Reindex:
    """A 2.0 reindex of the tables after its first batch of 5."""
    job = Reindex(w.server, ["table"], batch_size=5)
    job.start()
    job.step(1)
    return job


def test_a_running_job_makes_its_types_findings_in_flight_with_progress_and_eta(world: ReindexWorld) -> None:
    table, pipeline = world.last("table"), world.last("pipeline")
    _stale(world, table)
    _stale(world, pipeline)
    before = _by_urn(world.scan())
    assert before[table.id].verdict == Verdict.DIVERGED and before[pipeline.id].verdict == Verdict.DIVERGED
    job = Reindex(world.server, ["table"], batch_size=5, recreate=False)  # 1.12's in-place run
    job.start()
    assert job.step(2) == 10
    total = len(world.server.of_type("table"))
    report = world.scan()
    found = _by_urn(report)
    c = found[table.id]
    assert c.verdict == Verdict.IN_FLIGHT, c.evidence.reason
    assert job.job_id in c.evidence.reason and f"10/{total} table records processed" in c.evidence.reason
    assert c.evidence.eta_seconds is not None and c.evidence.eta_seconds > 0
    assert c.evidence.rate is not None and c.evidence.rate > 0
    place = c.finding.details["reindex"].pop("place")
    assert c.finding.details["reindex"] == {
        "job": job.job_id,
        "status": "RUNNING",
        "processed": 10,
        "total": total,
    }
    assert place["state"] == "ahead" and place["partitions"] == [
        {"index": 0, "status": "PROCESSING", "range": [0, total]}
    ]
    other = found[pipeline.id]  # another type: the job does not touch it
    assert other.verdict == Verdict.DIVERGED and job.job_id not in other.evidence.reason
    assert any(job.job_id in w and "in flight" in w for w in report.warnings), report.warnings
    assert job.finish() == "COMPLETED"
    after = _by_urn(world.scan())
    assert table.id not in after and after[pipeline.id].verdict == Verdict.DIVERGED


def test_a_running_job_leaves_what_its_completed_partitions_passed_to_the_usual_verdict(
    world: ReindexWorld,
) -> None:
    """A 2.0 reindex in 3 partitions (`ORDER BY name, id` offsets): the first COMPLETED, the
    second PENDING, the third FAILED for good. A lost index write in each: the one the job has
    passed is diverged (the partition named), the one ahead of it in flight, the one in the failed
    partition diverged with the failure; after the promotion the one it reached is clean, the
    passed one still stale, the failed partition's documents missing."""
    time.sleep(CLOCK_SKEW_MS / 1000 + 0.5)  # the catalog was written before the job began
    job = Reindex(world.server, ["table"], batch_size=5, min_partitions=3)
    job.start()
    parts = [p for p in job.partitions if p.entity_type == "table"]
    assert [p.index for p in parts] == [0, 1, 2] and all(p.count >= 8 for p in parts)
    while parts[0].status != "COMPLETED":
        job.step(1)
    assert [p.status for p in parts] == ["COMPLETED", "PENDING", "PENDING"]
    job.fail_partition("table", 2, "Exception: index_closed_exception\n\tat org.opensearch.Foo(Foo.java:1)")
    order = world.ordered("table")
    assert len(order) == parts[-1].end
    passed, ahead, failed = (order[p.start + p.count // 2] for p in parts)
    for entity in (passed, ahead, failed):  # lost: neither the live nor the rebuild index gets it
        _stale(world, entity)
    report = world.scan()
    found = _by_urn(report)
    assert set(found) == {passed.id, ahead.id, failed.id}, [
        (c.finding.urn, c.evidence.reason) for c in report.findings
    ]
    c = found[passed.id]
    assert c.verdict == Verdict.DIVERGED, c.evidence.reason
    assert "longer than the 0s grace" in c.evidence.reason  # the verdict it has without the job
    assert (
        f"search_index_job {job.job_id} (RUNNING) has passed it and will not rewrite it" in c.evidence.reason
    )
    assert "partition 0 of table" in c.evidence.reason and "COMPLETED at" in c.evidence.reason
    assert f"its rebuild index {job.staged['table']} does not hold it" in c.evidence.reason
    place = c.finding.details["reindex"]["place"]
    assert place["state"] == "passed" and [x["index"] for x in place["partitions"]] == [0]
    low, high = place["offsets"]
    assert low <= parts[0].start + parts[0].count // 2 <= high < parts[0].end
    c = found[ahead.id]
    assert c.verdict == Verdict.IN_FLIGHT, c.evidence.reason
    assert "is reindexing it into" in c.evidence.reason and "partition 1 of table" in c.evidence.reason
    assert "PENDING" in c.evidence.reason and c.finding.details["reindex"]["place"]["state"] == "ahead"
    c = found[failed.id]
    assert c.verdict == Verdict.DIVERGED, c.evidence.reason
    assert (
        "failed the partition holding it" in c.evidence.reason and "partition 2 of table" in c.evidence.reason
    )
    assert "index_closed_exception" in c.evidence.reason and "Foo.java" not in c.evidence.reason
    assert (
        c.finding.details["reindex"]["place"]["partitions"][0]["error"] == "Exception: index_closed_exception"
    )
    (warning,) = [w for w in report.warnings if job.job_id in w and "in flight" in w]
    assert "but for 2 in partitions it has completed or failed" in warning
    told = triage(world.settings(), passed.id, grace=0.0)  # one entity: the scan's verdict
    assert [x.verdict for x in told.findings] == [Verdict.DIVERGED], [
        x.evidence.reason for x in told.findings
    ]
    assert "has passed it" in told.findings[0].evidence.reason
    assert job.finish() == "COMPLETED_WITH_ERRORS"  # partition 1 read the row as it is now
    after = _by_urn(world.scan())  # the promoted index: without the failed partition's documents
    lost = {e.id for e in order[parts[2].start : parts[2].end]}
    assert set(after) == {passed.id} | lost, [(c.finding.urn, c.evidence.reason) for c in after.values()]
    assert after[passed.id].finding.kind.value == "stale_fields"
    assert {after[i].finding.kind.value for i in lost} == {"missing_document"}


def test_a_failure_row_is_the_evidence_of_a_divergence(world: ReindexWorld) -> None:
    table = world.first("table")
    job = Reindex(world.server, ["table"], batch_size=5, failures={table.id: ("SINK", STACK)})
    job.start()
    assert job.finish() == "COMPLETED_WITH_ERRORS"
    report = world.scan()
    (c,) = report.findings  # the promoted index lacks the one document the job failed to write
    assert c.finding.urn == table.id and c.finding.kind.value == "missing_document"
    assert c.verdict == Verdict.DIVERGED
    reason = c.evidence.reason
    assert f"search_index_failures of job {job.job_id}: SINK" in reason
    assert (
        "Exception: mapper_parsing_exception" in reason and "DocumentParser" not in reason
    )  # no stack trace
    (failure,) = c.finding.details["reindex"]["failures"]
    assert failure["stage"] == "SINK" and failure["error"] == "Exception: mapper_parsing_exception"


def test_a_partial_promotion_is_reported_with_its_job_and_failure_rows(world: ReindexWorld) -> None:
    first = world.first("table")
    job = Reindex(world.server, ["table"], batch_size=5, failures={first.id: ("PROCESS", "cannot build doc")})
    job.start()
    job.step(2)
    assert job.fail("server restarted mid-run") == "FAILED"  # 2.0 promotes the 9 documents it holds
    report = world.scan()
    total = len(world.server.of_type("table"))
    missing = {c.finding.urn for c in report.findings if c.finding.kind.value == "missing_document"}
    assert len(missing) == total - 9 and first.id in missing
    (warning,) = [w for w in report.warnings if job.job_id in w]
    assert "ended FAILED" in warning and "promoted a partial index of table" in warning
    assert f"1 of {total} records failed" in warning and "server restarted mid-run" in warning
    assert "PROCESS 1" in warning
    for c in report.findings:
        assert c.verdict == Verdict.DIVERGED and job.job_id in c.evidence.reason
        assert c.finding.details["reindex"]["status"] == "FAILED"
    failed = _by_urn(report)[first.id]
    assert "PROCESS" in failed.evidence.reason and "cannot build doc" in failed.evidence.reason


def test_a_live_write_during_a_2_0_reindex_went_to_the_rebuild_index_and_is_in_flight(
    world: ReindexWorld,
) -> None:
    s, job = world.server, _rebuilding(world)
    staged = job.staged["table"]
    assert "_table_search_index_rebuild_" in staged
    schema = s.entities[world.first("table").parent_id or ""]
    created = s.create("table", f"made_during_reindex_{uuid.uuid4().hex[:6]}", schema)
    updated = world.last("table")
    s.update(updated, description="written while the reindex runs")
    assert world.search.get(staged, created.id) is not None  # resolveWriteIndex: the rebuild index
    report = world.scan()
    found = _by_urn(report)
    assert set(found) == {created.id, updated.id}, [(c.finding.urn, c.finding.kind) for c in report.findings]
    for c in found.values():
        assert c.verdict == Verdict.IN_FLIGHT, c.evidence.reason
        assert (
            f"the rebuild index {staged}" in c.evidence.reason
            and "promotion will serve it" in c.evidence.reason
        )
    assert found[created.id].finding.kind.value == "missing_document"
    assert any(staged in w and "live writes go to" in w for w in report.warnings), report.warnings
    told = triage(world.settings(), created.id, grace=0.0)  # one entity: the scan's verdict
    assert [c.verdict for c in told.findings] == [Verdict.IN_FLIGHT], [
        c.evidence.reason for c in told.findings
    ]
    assert f"the rebuild index {staged}" in told.findings[0].evidence.reason
    job.finish()
    assert world.scan().findings == []  # promoted: users now read the rebuild index


def test_a_reindex_abandoned_before_its_promotion_names_the_rebuild_index_holding_a_live_write(
    world: ReindexWorld,
) -> None:
    s, job = world.server, _rebuilding(world)
    updated, staged = world.last("table"), job.staged["table"]
    s.update(updated, description="written while the reindex ran")  # to the rebuild index only
    job.abandon()  # the server died before the promotion: users still read the old index
    report = world.scan()
    (c,) = report.findings
    assert c.finding.urn == updated.id and c.finding.kind.value == "stale_fields"
    assert c.verdict == Verdict.DIVERGED
    assert f"never promoted its rebuild index {staged}" in c.evidence.reason
    assert "a live write made while the job ran went there" in c.evidence.reason
    (warning,) = [w for w in report.warnings if job.job_id in w]
    assert "abandoned" in warning and f"{staged} was never promoted (no alias)" in warning


def test_an_openmetadata_without_the_reindex_tables_scans_as_before(
    pair: tuple[str, str], tmp_path: Path
) -> None:
    with reindex_world(*pair, tmp_path, reindex_tables=False) as w:
        table = w.last("table")
        _stale(w, table)
        report = w.scan()
        (c,) = report.findings
        assert (
            c.finding.urn == table.id and c.verdict == Verdict.DIVERGED and "reindex" not in c.finding.details
        )
        assert any("no search_index_job table" in x for x in report.warnings), report.warnings
        assert report.complete
