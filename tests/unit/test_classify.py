"""Classification rules: partition health (Burrow) and the verdict of a finding, as data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from auditor.core.classify import History, KafkaEvidence, classify, mark_restores
from auditor.core.consumer import owner_rates, partition_health, position
from auditor.core.model import Finding, Kind, PartitionHealth, Verdict
from auditor.core.records import MclHit, OffsetSample

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def sample(committed: int | None, end: int, at: float, members: int = 1) -> OffsetSample:
    return OffsetSample("MetadataChangeLog_Versioned_v1", 0, committed, 0, end, members, at)


@pytest.mark.parametrize(
    ("first", "last", "previous", "health"),
    [
        (sample(10, 10, 0), sample(10, 10, 10), None, PartitionHealth.OK),
        (sample(5, 20, 0), sample(10, 20, 10), None, PartitionHealth.LAGGING),
        (sample(5, 20, 0), sample(5, 20, 10), None, PartitionHealth.STALLED),
        (sample(5, 20, 0, 0), sample(5, 20, 10, 0), None, PartitionHealth.STOPPED),
        (sample(9, 20, 0), sample(3, 20, 10), None, PartitionHealth.REWOUND),
        (sample(5, 20, 0), sample(5, 20, 10), sample(1, 20, -100), PartitionHealth.LAGGING),
        (sample(None, 0, 0), sample(None, 0, 10), None, PartitionHealth.OK),
        (sample(None, 5, 0, 0), sample(None, 5, 10, 0), None, PartitionHealth.STOPPED),
    ],
)
def test_partition_health(first, last, previous, health) -> None:
    assert partition_health(first, last, previous)[0] == health


def test_rate_is_offsets_per_second() -> None:
    assert partition_health(sample(0, 100, 0), sample(20, 100, 10))[1] == pytest.approx(2.0)


def finding(
    kind: Kind = Kind.STALE_FIELDS, age: float | None = 600.0, aspect: str | None = "globalTags"
) -> Finding:
    changed = None if age is None else NOW - timedelta(seconds=age)
    return Finding("c", kind, "urn:li:dataset:x", "dataset", "datasetindex_v2", aspect, changed)


def pos(health_first: int, health_last: int, end: int = 100, members: int = 1):
    return position(sample(health_first, end, 0, members), sample(health_last, end, 10, members), None, NOW)


HIT = MclHit("urn:li:dataset:x", 50, NOW, "globalTags", "UPSERT")

CASES = [
    # (name, finding, position, kafka, history, verdict, subkind)
    (
        "pending on a moving consumer",
        finding(),
        pos(10, 20),
        KafkaEvidence(HIT, True),
        None,
        Verdict.IN_FLIGHT,
        "in_flight",
    ),
    (
        "pending on a stalled consumer",
        finding(),
        pos(20, 20),
        KafkaEvidence(HIT, True),
        None,
        Verdict.STALLED,
        "stalled",
    ),
    (
        "pending on a stopped consumer",
        finding(),
        pos(20, 20, members=0),
        KafkaEvidence(HIT, True),
        None,
        Verdict.STALLED,
        "stalled",
    ),
    (
        "consumed, not applied",
        finding(),
        pos(100, 100),
        KafkaEvidence(None, True, HIT, True),
        None,
        Verdict.DIVERGED,
        "stale_fields",
    ),
    (
        "never published",
        finding(),
        pos(100, 100),
        KafkaEvidence(None, True, None, True),
        None,
        Verdict.DIVERGED,
        "event_never_published",
    ),
    (
        "history not read whole",
        finding(),
        pos(100, 100),
        KafkaEvidence(None, True, None, False),
        None,
        Verdict.DIVERGED,
        "stale_fields",
    ),
    (
        "beyond retention",
        finding(),
        pos(100, 100),
        KafkaEvidence(None, True, None, True, False),
        None,
        Verdict.DIVERGED,
        "stale_fields",
    ),
    (
        "written a moment ago",
        finding(age=2),
        pos(100, 100),
        KafkaEvidence(None, True, None, True),
        None,
        Verdict.IN_FLIGHT,
        "in_flight",
    ),
    (
        "orphan, nothing pending",
        finding(Kind.ORPHAN_DOCUMENT, None, None),
        pos(100, 100),
        KafkaEvidence(None, True),
        None,
        Verdict.DIVERGED,
        "orphan_document",
    ),
    ("no kafka, fresh", finding(age=30), None, None, None, Verdict.IN_FLIGHT, "in_flight"),
    ("no kafka, old", finding(age=3600), None, None, None, Verdict.DIVERGED, "stale_fields"),
    (
        "no kafka, fresh but seen long ago",
        finding(age=30),
        None,
        None,
        History(NOW - timedelta(hours=1), 3),
        Verdict.DIVERGED,
        "stale_fields",
    ),
    (
        "no kafka, orphan first seen",
        finding(Kind.ORPHAN_DOCUMENT, None, None),
        None,
        None,
        None,
        Verdict.IN_FLIGHT,
        "in_flight",
    ),
    (
        "malformed row",
        finding(Kind.MALFORMED_ASPECT),
        pos(100, 100),
        KafkaEvidence(None, True),
        None,
        Verdict.INVALID,
        "malformed_aspect",
    ),
]


@pytest.mark.parametrize(("name", "f", "p", "k", "h", "verdict", "subkind"), CASES, ids=[c[0] for c in CASES])
def test_verdicts(name, f, p, k, h, verdict, subkind) -> None:
    c = classify(f, NOW, grace=300, settle=10, position=p, kafka=k, history=h)
    assert (c.verdict, c.subkind) == (verdict, subkind)
    assert c.evidence.reason
    assert c.evidence.kafka == (p is not None)


def test_in_flight_has_an_eta_from_the_rate() -> None:
    c = classify(
        finding(),
        NOW,
        grace=300,
        settle=10,
        position=pos(10, 20),
        kafka=KafkaEvidence(HIT, True),
        history=None,
    )
    # 30 messages ahead of offset 20 (+1 for the hit itself) at 1 offset/s
    assert c.evidence.eta_seconds == pytest.approx(31.0)


def test_restore_relabels_only_when_most_changes_since_are_behind() -> None:
    base = [
        classify(
            Finding(
                "c",
                Kind.STALE_FIELDS,
                f"urn:li:dataset:{i}",
                "dataset",
                "datasetindex_v2",
                "x",
                NOW - timedelta(seconds=100 - i),
            ),
            NOW,
            grace=300,
            settle=10,
            position=pos(100, 100),
            kafka=KafkaEvidence(None, True, HIT, True),
            history=None,
        )
        for i in range(12)
    ]
    instant = NOW - timedelta(seconds=100)
    relabelled = mark_restores(base, {"datasetindex_v2": (instant, 12)})
    assert {c.subkind for c in relabelled} == {"index_behind_restore"}
    untouched = mark_restores(base, {"datasetindex_v2": (instant, 100)})
    assert {c.subkind for c in untouched} == {"stale_fields"}


def test_a_quiet_partition_of_a_busy_member_is_lagging_not_stalled() -> None:
    first = {
        ("t", 0): OffsetSample("t", 0, 5, 0, 50, 1, 0, "m1"),
        ("t", 1): OffsetSample("t", 1, 5, 0, 50, 1, 0, "m1"),
    }
    last = [OffsetSample("t", 0, 25, 0, 50, 1, 10, "m1"), OffsetSample("t", 1, 5, 0, 50, 1, 10, "m1")]
    rates = owner_rates(first, last)
    assert rates == {"m1": pytest.approx(2.0)}
    quiet = position(first[("t", 1)], last[1], None, NOW, rates["m1"] / 2)
    assert quiet.health == PartitionHealth.LAGGING and quiet.rate == pytest.approx(1.0)
    alone = position(first[("t", 1)], last[1], None, NOW, None)
    assert alone.health == PartitionHealth.STALLED


def test_the_kernel_names_the_subkind_of_a_verdict_a_platform_s_evidence_decides() -> None:
    """A platform brings evidence (OpenMetadata's retry queue, its reindex job, a federation's
    conflict); the verdict's subkind is the kernel's rule, never the platform's."""
    from dataclasses import replace

    from auditor.core.classify import decided, diverged, explained
    from auditor.core.model import Classified, Evidence

    stale = Finding("om.document", Kind.STALE_FIELDS, "u", "table", "idx", None, None, {"platform": "x"})
    first = Classified(stale, Verdict.DIVERGED, "index_behind_restore", Evidence("first", kafka=False))
    pending = decided(first, Verdict.IN_FLIGHT, Evidence("the retry worker will rewrite it", kafka=False))
    assert (pending.verdict, pending.subkind, pending.evidence.reason) == (
        Verdict.IN_FLIGHT, "in_flight", "the retry worker will rewrite it"
    )  # fmt: skip
    richer = replace(stale, details={**stale.details, "reindex": {"job": 1}})
    failed = decided(pending, Verdict.DIVERGED, Evidence("the job failed it", kafka=False), richer)
    assert (failed.verdict, failed.subkind, failed.finding.details["reindex"]) == (
        Verdict.DIVERGED, "stale_fields", {"job": 1}
    )  # fmt: skip
    told = explained(first, "first; the job has passed it")
    assert (told.verdict, told.subkind, told.evidence.reason) == (
        Verdict.DIVERGED, "index_behind_restore", "first; the job has passed it"
    )  # fmt: skip
    alone = diverged(stale, "still differs after the repair")
    assert (alone.verdict, alone.subkind, alone.evidence.kafka) == (Verdict.DIVERGED, "stale_fields", False)


def behind_finding(written_ago: float, lag: float | None) -> Finding:
    """A document newer than its row (index.store-behind): its write `written_ago` seconds old."""
    at = (NOW - timedelta(seconds=written_ago)).isoformat(timespec="milliseconds")
    details = {
        "aspects": ["datasetProperties"],
        "index_updated": at,
        "ahead_seconds": 79200.0,
        "store_lag": lag,
    }
    return Finding(
        "index.store-behind", Kind.STORE_BEHIND, "urn:li:dataset:x", "dataset", "d", None, NOW, details
    )


@pytest.mark.parametrize(
    ("written_ago", "lag", "verdict"),
    [
        (60.0, 600.0, Verdict.IN_FLIGHT),  # a replica 10 min behind, a write of a minute ago: coming
        (3600.0, 600.0, Verdict.STORE_BEHIND),  # older than the lag: not coming (restored, or stuck)
        (60.0, None, Verdict.STORE_BEHIND),  # a primary (or a lag unknown): nothing is on its way
        (600.0 + 30.0, 600.0, Verdict.IN_FLIGHT),  # the clocks' skew allowed
    ],
)
def test_a_document_newer_than_its_row_is_in_flight_only_within_a_replica_s_lag(
    written_ago: float, lag: float | None, verdict: Verdict
) -> None:
    pending = KafkaEvidence(pending=HIT, pending_complete=True)  # the change log does not decide it
    c = classify(behind_finding(written_ago, lag), NOW, grace=300, settle=1, position=pos(10, 20),
                 kafka=pending, history=None)  # fmt: skip
    assert c.verdict == verdict
    if verdict == Verdict.STORE_BEHIND:
        assert c.subkind == "store_behind" and "--prefer-store" in c.evidence.reason
        assert "79200s later" in c.evidence.reason
    else:
        assert "replica 600s behind" in c.evidence.reason


def test_later_writes_are_a_later_time_under_another_run() -> None:
    """documents/behind.py: what a system-metadata document records beyond its row."""
    from auditor.platforms.datahub.documents.behind import later_write

    row = {"runId": "ingest-1", "lastObserved": 1_000}
    assert later_write("a", row, {"runId": "ingest-2", "lastUpdated": 2_000}) is not None
    assert later_write("a", row, {"runId": "ingest-1", "lastUpdated": 2_000}) is None  # the same run
    assert later_write("a", row, {"runId": "ingest-2", "lastUpdated": 1_000}) is None  # not later
    assert later_write("a", row, {"runId": "ingest-0", "lastUpdated": 500}) is None  # older: stale
    assert later_write("a", row, None) is None and later_write("a", {}, {"lastUpdated": 9}) is None
    found = later_write("a", row, {"runId": "step", "lastUpdated": "80201000"})  # a long as text
    assert found is not None and found.ahead_seconds == 80200.0 and found.index_run_id == "step"
