"""The OpenMetadata scan's logic on fakes: the merge-join, the checks, re-observation and verdicts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from auditor.checks.openmetadata import check
from auditor.core.classify import History
from auditor.core.join import JoinOrderError
from auditor.core.model import Kind, Verdict
from auditor.platforms.openmetadata.join import OmScanner, merge
from auditor.platforms.openmetadata.naming import entity
from auditor.platforms.openmetadata.records import OmDoc, OmRow, RetryRow
from auditor.platforms.openmetadata.scan import judge, reobserve

TABLE = entity("table")
A, B, C = (f"{c * 8}-0000-4000-8000-000000000000" for c in "abc")


def now_ms() -> int:
    """The wall clock now, read at each use: the judge compares with its own now (a module-level
    constant went stale when the whole suite ran for 40 minutes before this file), on a 10 s
    grid: a row and its doc built one after the other get the same time (read at the
    millisecond, the clock ticked between them now and then: a false difference in updatedAt)."""
    return int(datetime.now(UTC).timestamp() // 10) * 10_000


def row(i: str, **more) -> OmRow:
    updated, deleted = more.pop("updatedAt", now_ms()), more.pop("deleted", False)
    data = {"id": i, "name": i[:1], "fullyQualifiedName": f"s.d.c.{i[:1]}", "version": 0.1,
            "updatedAt": updated, "deleted": deleted, **more}  # fmt: skip
    return OmRow(i, data, data["updatedAt"], data["deleted"])


def doc(i: str, **more) -> OmDoc:
    source = {"id": i, "name": i[:1], "fullyQualifiedName": f"s.d.c.{i[:1]}", "version": 0.1,
              "updatedAt": more.pop("updatedAt", now_ms()), "deleted": False, **more}  # fmt: skip
    return OmDoc(i, "table_search_index", source)


def test_merge_is_a_full_outer_join_and_refuses_a_stream_out_of_order() -> None:
    pairs = list(merge([row(A), row(C)], [doc(A), doc(B)]))
    assert [(r and r.id, d and d.id) for r, d in pairs] == [(A, A), (None, B), (C, None)]
    # a doc under two indices (an alias over both) meets its row twice
    twice = list(merge([row(A)], [doc(A), doc(A)]))
    assert len(twice) == 2 and all(r is not None for r, _ in twice)
    with pytest.raises(JoinOrderError, match="the entity rows is not in id byte order") as refused:
        list(merge([row(C), row(A)], []))
    assert refused.value.exit_code == 3 and "UUID" in (refused.value.hint or "")  # not DataHub's urn hint
    with pytest.raises(JoinOrderError, match="the documents is not in id byte order"):
        list(merge([], [doc(C), doc(A)]))


@pytest.mark.parametrize(
    ("the_row", "the_doc", "kind"),
    [
        (row(A), None, Kind.MISSING_DOCUMENT),
        (None, doc(A), Kind.ORPHAN_DOCUMENT),
        (row(A, deleted=True), doc(A), Kind.SOFT_DELETE_MISMATCH),
        (row(A), doc(A, deleted="true"), Kind.SOFT_DELETE_MISMATCH),
        (row(A, description="new"), doc(A), Kind.STALE_FIELDS),
        (OmRow(A, "{not json", None, None), doc(A), Kind.MALFORMED_ASPECT),
    ],
)  # fmt: skip
def test_each_difference_is_one_finding_of_its_kind(the_row, the_doc, kind) -> None:
    found = check(TABLE, "table_search_index", the_row, the_doc)
    assert found is not None and found.kind == kind and found.urn == A
    assert found.details["platform"] == "openmetadata"


def test_agreeing_sides_and_a_string_deleted_give_nothing() -> None:
    assert check(TABLE, "i", row(A, deleted=True), doc(A, deleted="true")) is None
    assert check(TABLE, "i", row(A), doc(A)) is None


def test_a_doc_whose_id_is_not_a_uuid_is_an_orphan_that_says_so() -> None:
    found = check(TABLE, "i", None, OmDoc("not-a-uuid\n<b>", "i", {"name": "x"}))
    assert found is not None and found.kind == Kind.ORPHAN_DOCUMENT and "not a UUID" in found.details["note"]


class FakeStore:
    def __init__(self, rows: list[dict[str, OmRow]]) -> None:
        self.reads = rows  # successive answers

    def read(self, _entity, ids):
        answer = self.reads.pop(0) if len(self.reads) > 1 else self.reads[0]
        return {i: r for i, r in answer.items() if i in ids}


class FakeSearch:
    cluster_alias = ""

    def __init__(self, docs: dict[str, OmDoc]) -> None:
        self.docs = docs

    def get(self, _name, ids):
        return {i: d for i, d in self.docs.items() if i in ids}


def _reobserve(store: FakeStore, search: FakeSearch, candidates, visibility: float = 0.0, slept=None):
    scanner = OmScanner(store, search)  # type: ignore[arg-type]
    names = {"table": "table_search_index"}
    sleep = slept.append if slept is not None else (lambda s: None)
    return reobserve(scanner, {"table": TABLE}, names, candidates, visibility=visibility, sleep=sleep)


def test_a_difference_gone_on_the_re_read_converged_during_the_scan() -> None:
    candidate = check(TABLE, "table_search_index", row(A, description="new"), doc(A))
    seen = _reobserve(
        FakeStore([{A: row(A, description="new")}]), FakeSearch({A: doc(A, description="new")}), [candidate]
    )
    assert not seen.observed and len(seen.converged) == 1
    verdicts = judge(seen, {}, None, grace=300)
    assert (
        verdicts[0].verdict == Verdict.IN_FLIGHT
        and "converged during the scan" in verdicts[0].evidence.reason
    )


def test_a_row_changing_under_every_re_read_stays_in_flight() -> None:
    changing = [{A: row(A, updatedAt=now_ms() + n)} for n in range(9)]
    candidate = check(TABLE, "t", row(A), None)
    seen = _reobserve(FakeStore(changing), FakeSearch({}), [candidate])
    assert len(seen.unsettled) == 1 and seen.rounds == 4  # the first without the wait, three with it
    assert judge(seen, {}, None, grace=300)[0].verdict == Verdict.IN_FLIGHT


def _observed(updated_ms: int):
    candidate = check(TABLE, "t", row(A, updatedAt=updated_ms), None)
    seen = _reobserve(FakeStore([{A: row(A, updatedAt=updated_ms)}]), FakeSearch({}), [candidate])
    assert len(seen.observed) == 1
    return seen


def test_a_fresh_change_is_in_flight_an_old_one_diverged_without_kafka() -> None:
    fresh = judge(_observed(now_ms()), {}, None, grace=300)[0]
    assert fresh.verdict == Verdict.IN_FLIGHT and "grace" in fresh.evidence.reason
    assert fresh.evidence.kafka is False
    old = judge(_observed(now_ms() - 3_600_000), {}, None, grace=300)[0]
    assert old.verdict == Verdict.DIVERGED and old.subkind == "missing_document"


def test_seen_again_past_the_grace_is_diverged_even_when_fresh() -> None:
    seen = _observed(now_ms())
    key = seen.observed[0].finding.key
    earlier = History(datetime.now(UTC) - timedelta(seconds=400), 1)
    again = judge(seen, {key: earlier}, None, grace=300)[0]
    assert again.verdict == Verdict.DIVERGED and again.evidence.seen_before == 1


def test_a_pending_retry_row_is_in_flight_with_that_evidence_and_failed_is_diverged() -> None:
    seen = _observed(now_ms() - 3_600_000)
    pending = judge(seen, {}, {A: RetryRow(A, "s.d.c.a", "PENDING_RETRY_1", 1)}, grace=300)[0]
    assert pending.verdict == Verdict.IN_FLIGHT and "search_index_retry_queue" in pending.evidence.reason
    by_fqn = judge(seen, {}, {"s.d.c.a": RetryRow("", "s.d.c.a", "PENDING")}, grace=300)[0]
    assert by_fqn.verdict == Verdict.IN_FLIGHT
    failed = judge(seen, {}, {A: RetryRow(A, "", "FAILED", 3, "timeout\nstack")}, grace=300)[0]
    assert failed.verdict == Verdict.DIVERGED and "gave up" in failed.evidence.reason
    assert "(timeout)" in failed.evidence.reason and "stack" not in failed.evidence.reason
    # a reason whose first line is blank, with control characters, says its first real line
    noisy = RetryRow(A, "", "FAILED", 3, "\n  \x1b[31mread timed out\n\tat org.x.Y")
    said = judge(seen, {}, {A: noisy}, grace=300)[0].evidence.reason
    assert "([31mread timed out)" in said and "\x1b" not in said and "org.x" not in said


def test_an_orphan_first_seen_is_unconfirmed_then_diverged() -> None:
    candidate = check(TABLE, "table_search_index", None, doc(A))
    seen = _reobserve(FakeStore([{}]), FakeSearch({A: doc(A)}), [candidate])
    first = judge(seen, {}, None, grace=300)[0]
    assert first.verdict == Verdict.IN_FLIGHT and "unconfirmed" in first.evidence.reason
    later = judge(seen, {candidate.key: History(datetime.now(UTC) - timedelta(hours=1), 1)}, None, grace=300)[
        0
    ]
    assert later.verdict == Verdict.DIVERGED and later.subkind == "orphan_document"


HOUR_AGO = 3_600_000


@pytest.mark.parametrize(
    ("the_row", "the_doc", "waits"),
    [
        # dated by the row, changed an hour ago: the server wrote (or queued) its doc long before
        (row(A, updatedAt=-HOUR_AGO), None, False),
        (row(A, updatedAt=-HOUR_AGO, description="new"), doc(A, updatedAt=-HOUR_AGO), False),
        (OmRow(A, "{not json", -HOUR_AGO, None), doc(A), False),
        # a fresh change: its doc may still be on its way
        (row(A, updatedAt=0), None, True),
        (row(A, updatedAt=-30_000), None, True),  # within the clock skew allowed: waited for
        # an orphan has no change time: first seen it is unconfirmed with or without the wait
        (None, doc(A), False),
        # owners, tags and domains move with other rows; a soft delete reaches children by a script
        (row(A, updatedAt=-HOUR_AGO, owners=[{"id": B, "type": "user"}]), doc(A, updatedAt=-HOUR_AGO), True),
        (row(A, updatedAt=-HOUR_AGO, deleted=True), doc(A, updatedAt=-HOUR_AGO), True),
    ],
    ids=["missing", "description", "malformed", "fresh", "within-skew", "orphan", "owners", "soft-delete"],
)  # fmt: skip
def test_only_a_finding_its_rows_date_long_ago_is_judged_without_the_wait(the_row, the_doc, waits) -> None:
    """A triage paid the whole visibility delay on every divergence; what the row dates long ago
    is settled by a first read without it, and everything else waits as before."""
    the_row = _aged(the_row)
    the_doc = _aged(the_doc)
    candidate = check(TABLE, "table_search_index", the_row, the_doc)
    assert candidate is not None
    slept: list[float] = []
    store, search = FakeStore([{A: the_row} if the_row else {}]), FakeSearch({A: the_doc} if the_doc else {})
    seen = _reobserve(store, search, [candidate], visibility=2.5, slept=slept)
    assert [f.finding.kind for f in seen.observed] == [candidate.kind]  # still wrong, either way
    assert slept == ([2.5] if waits else []), slept
    assert seen.rounds == (2 if waits else 1)
    assert seen.observed[0].observation.rounds == seen.rounds


def _aged(x):
    """Rows and docs above give their updatedAt as an offset from now (ms); make it a time."""
    if x is None:
        return None
    if isinstance(x, OmDoc):
        return OmDoc(x.id, x.index, {**x.source, "updatedAt": now_ms() + x.source["updatedAt"]})
    if not isinstance(x.json, dict):
        return OmRow(x.id, x.json, now_ms() + x.updated_at, x.deleted)
    data = {**x.json, "updatedAt": now_ms() + x.json["updatedAt"]}
    return OmRow(x.id, data, data["updatedAt"], data["deleted"], owners=tuple(data.pop("owners", ())))


def test_a_newer_document_is_in_flight_within_a_replica_s_lag_and_store_behind_past_it() -> None:
    """OpenMetadata's verdicts of a document newer than its row, judged again with the lag the
    database said (scan.with_lag): younger than the lag in flight, older the store behind."""
    from datetime import UTC, datetime, timedelta

    from auditor.core.classify import classify
    from auditor.core.model import Finding, Kind, Verdict
    from auditor.platforms.openmetadata.scan import with_lag

    def judged(ago: float):
        at = (datetime.now(UTC) - timedelta(seconds=ago)).isoformat()
        details = {"platform": "openmetadata", "index_updated": at, "ahead_seconds": 5.0, "store_lag": None}
        f = Finding("openmetadata", Kind.STORE_BEHIND, "id", "table", "t", None, None, details)
        return classify(f, datetime.now(UTC), grace=0, settle=0, position=None, kafka=None, history=None)

    assert judged(30).verdict == Verdict.STORE_BEHIND  # a primary: nothing is on its way
    assert with_lag(judged(30), 120.0).verdict == Verdict.IN_FLIGHT
    assert with_lag(judged(3600), 120.0).verdict == Verdict.STORE_BEHIND
