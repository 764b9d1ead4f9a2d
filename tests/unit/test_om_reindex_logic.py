"""The judgement from OpenMetadata's reindex tables, on rows as the 1.12+ server writes them."""

from __future__ import annotations

import json

from auditor.core.model import Classified, Evidence, Finding, Kind, Verdict
from auditor.platforms.openmetadata.reindex import ReindexEvidence
from auditor.platforms.openmetadata.reindex_rows import (
    STALLED_MS,
    IndexFailure,
    TypeProgress,
    failure_from_row,
    first_line,
    job_from_row,
)

NOW = 1_800_000_000_000
A, B = "aaaaaaaa-0000-4000-8000-000000000000", "bbbbbbbb-0000-4000-8000-000000000000"


def job_row(status: str = "RUNNING", **more: object) -> dict[str, object]:
    """A search_index_job row (column names as the store lowercases them)."""
    stats = {"table": {"entityType": "table", "totalRecords": 100, "processedRecords": 0, "failedRecords": 0}}
    row: dict[str, object] = {
        "id": "job-1",
        "status": status,
        "jobconfiguration": json.dumps({"entities": ["table"], "batchSize": 100}),
        "stats": json.dumps(stats),
        "stagedindexmapping": None,
        "totalrecords": 100,
        "processedrecords": 0,
        "failedrecords": 0,
        "createdat": NOW - 60_000,
        "startedat": NOW - 50_000,
        "updatedat": NOW - 1_000,
        "completedat": None,
        "errormessage": None,
    }
    row.update(more)
    return row


def classified(urn: str = A, kind: Kind = Kind.STALE_FIELDS, etype: str = "table") -> Classified:
    f = Finding(
        "index.stale-fields",
        kind,
        urn,
        etype,
        details={"platform": "openmetadata", "fqn": f"s.d.c.{urn[:1]}"},
    )
    return Classified(f, Verdict.DIVERGED, kind.value, Evidence("seen again past its grace", kafka=False))


def failure(urn: str = A, job: str = "job-1", stage: str = "SINK") -> IndexFailure:
    return IndexFailure(job, "table", urn, f"s.d.c.{urn[:1]}", stage, "mapper_parsing_exception", NOW - 5_000)


def test_an_error_message_is_its_first_line_without_control_characters_and_capped() -> None:
    assert first_line("boom\n\tat org.openmetadata.X(X.java:1)") == "boom"
    assert first_line("\n\n  second\x1b[31m red\nthird") == "second [31m red"
    assert len(first_line("x" * 5000)) == 200 and first_line("x" * 5000).endswith("…")
    assert first_line(None) == ""


def test_a_running_job_reads_progress_from_its_partitions_not_its_row() -> None:
    job = job_from_row(job_row(partitions_updated=NOW), {"table": TypeProgress(100, 40, 1)})
    assert job.of("table") == TypeProgress(100, 40, 1) and job.processed == 40 and job.failed == 1
    assert job.running(NOW) and job.covers("table") and not job.covers("pipeline")
    assert abs((job.rate(NOW) or 0) - 0.8) < 1e-9  # 40 records in 50 s
    assert abs((job.eta("table", NOW) or 0) - 75.0) < 1e-9  # 60 left at 0.8/s
    without = job_from_row(job_row())  # no partition table: the stats JSON
    assert without.of("table") == TypeProgress(100, 0, 0) and without.rate(NOW) is None
    assert without.eta("table", NOW) is None


def test_a_job_row_with_hostile_or_foreign_json_is_read_without_failing() -> None:
    job = job_from_row(
        job_row(jobconfiguration="[" * 5000, stats="not json", stagedindexmapping='{"table": 3}')
    )
    assert job.types == frozenset() and job.staged == {} and job.of("table") == TypeProgress()
    every = job_from_row(job_row(jobconfiguration=json.dumps({"entities": ["all"]})))
    assert every.covers("pipeline")


def test_a_running_job_puts_its_types_findings_in_flight_with_progress_and_eta() -> None:
    job = job_from_row(job_row(), {"table": TypeProgress(100, 40, 0)})
    evidence = ReindexEvidence([job], now_ms=NOW)
    c = evidence.judge(classified())
    assert c.verdict == Verdict.IN_FLIGHT and "job-1" in c.evidence.reason and "40/100" in c.evidence.reason
    assert c.evidence.eta_seconds == 75.0 and c.evidence.rate is not None
    assert c.finding.details["reindex"] == {
        "job": "job-1",
        "status": "RUNNING",
        "processed": 40,
        "total": 100,
    }
    other = evidence.judge(classified(etype="pipeline"))
    assert other.verdict == Verdict.DIVERGED and "reindex" not in other.finding.details
    invalid = Classified(classified().finding, Verdict.INVALID, "invalid", Evidence("unreadable"))
    assert evidence.judge(invalid) is invalid
    assert any("job-1 is RUNNING" in w for w in evidence.warnings(["table", "pipeline"], {}))


def test_a_failure_row_of_the_running_job_keeps_the_finding_diverged_with_its_cause() -> None:
    job = job_from_row(job_row(), {"table": TypeProgress(100, 40, 1)})
    evidence = ReindexEvidence([job], failures=[failure()], now_ms=NOW)
    c = evidence.judge(classified())
    assert c.verdict == Verdict.DIVERGED and "SINK" in c.evidence.reason
    assert "mapper_parsing_exception" in c.evidence.reason
    assert c.finding.details["reindex"]["failures"][0]["stage"] == "SINK"
    # a failure row of another job, or of another entity, says nothing about this one
    other = ReindexEvidence([job], failures=[failure(job="job-0"), failure(urn=B)], now_ms=NOW)
    assert other.judge(classified()).verdict == Verdict.IN_FLIGHT


def test_a_doc_in_the_rebuild_index_that_agrees_is_in_flight_for_the_promotion() -> None:
    staged = json.dumps({"table": "table_search_index_rebuild_1"})
    job = job_from_row(job_row(stagedindexmapping=staged), {"table": TypeProgress(100, 40, 0)})
    evidence = ReindexEvidence([job], staged_agrees={A}, now_ms=NOW)
    c = evidence.judge(classified(kind=Kind.MISSING_DOCUMENT))
    assert (
        c.verdict == Verdict.IN_FLIGHT
        and "the rebuild index table_search_index_rebuild_1" in c.evidence.reason
    )
    assert "promotion will serve it" in c.evidence.reason
    said = evidence.warnings(["table"], {"table": "table_search_index"})
    assert any(
        "live writes go to table_search_index_rebuild_1" in w and "table_search_index" in w for w in said
    )


def test_a_stalled_job_is_no_reason_to_wait() -> None:
    job = job_from_row(job_row(updatedat=NOW - STALLED_MS - 1), {"table": TypeProgress(100, 40, 0)})
    evidence = ReindexEvidence([job], now_ms=NOW)
    assert evidence.judge(classified()).verdict == Verdict.DIVERGED
    assert any("has not progressed since" in w for w in evidence.warnings(["table"], {}))


def test_an_abandoned_job_names_its_unpromoted_rebuild_index_and_the_writes_in_it() -> None:
    staged = json.dumps({"table": "t_rebuild_1"})
    row = job_row(updatedat=NOW - STALLED_MS - 1, stagedindexmapping=staged)
    job = job_from_row(row, {"table": TypeProgress(100, 40, 0)})
    evidence = ReindexEvidence([job], staged_state={"table": "unpromoted"}, unpromoted_agrees={A}, now_ms=NOW)
    c = evidence.judge(classified())
    assert (
        c.verdict == Verdict.DIVERGED and "never promoted its rebuild index t_rebuild_1" in c.evidence.reason
    )
    assert "a live write made while the job ran went there" in c.evidence.reason
    other = evidence.judge(classified(urn=B)).evidence.reason
    assert "never promoted" in other and "live write" not in other
    (line,) = evidence.warnings(["table"], {})
    assert "abandoned" in line and "t_rebuild_1 was never promoted (no alias)" in line
    gone = ReindexEvidence([job], staged_state={"table": "gone"}, now_ms=NOW)
    assert "(deleted since)" in gone.judge(classified()).evidence.reason


def test_a_partial_promotion_names_its_job_and_failure_rows() -> None:
    staged = json.dumps({"table": "table_search_index_rebuild_1"})
    done = dict(completedat=NOW - 10_000, failedrecords=3, processedrecords=100, stagedindexmapping=staged)
    job = job_from_row(job_row("COMPLETED_WITH_ERRORS", **done))
    evidence = ReindexEvidence(
        [job], failures=[failure()], stages={"job-1": {"SINK": 2, "PROCESS": 1}}, now_ms=NOW
    )
    c = evidence.judge(classified(kind=Kind.MISSING_DOCUMENT))
    assert c.verdict == Verdict.DIVERGED and c.evidence.reason.startswith("seen again past its grace")
    assert "served from the partial index of search_index_job job-1" in c.evidence.reason
    assert "SINK" in c.evidence.reason
    (line,) = evidence.warnings(["table"], {})
    assert "ended COMPLETED_WITH_ERRORS" in line and "promoted a partial index of table" in line
    assert "3 of 100 records failed" in line and "PROCESS 1, SINK 2" in line


def test_a_clean_job_or_a_newer_clean_one_adds_nothing() -> None:
    clean = job_from_row(job_row("COMPLETED", completedat=NOW, processedrecords=100))
    assert (
        ReindexEvidence([clean], now_ms=NOW).judge(classified()).evidence.reason
        == "seen again past its grace"
    )
    partial = job_from_row(job_row("FAILED", id="job-0", createdat=NOW - 99_000, failedrecords=5))
    newer_first = ReindexEvidence([clean, partial], failures=[failure(job="job-0")], now_ms=NOW)
    assert "reindex" not in newer_first.judge(classified()).finding.details
    assert newer_first.warnings(["table"], {}) == []


def test_a_failure_row_keeps_the_first_line_of_its_error_only() -> None:
    row = {"jobid": "j", "entitytype": "table", "entityid": A, "entityfqn": "s.d\nc",
           "failurestage": "PROCESS", "errormessage": "No doc\n\tat X", "timestamp": NOW}  # fmt: skip
    got = failure_from_row(row)
    assert got.error == "No doc" and got.entity_fqn == "s.d" and "2027" in got.said()
