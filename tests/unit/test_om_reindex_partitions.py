"""Where a running OpenMetadata reindex job is with an entity: its partitions (2.0, distributed),
the type's order, and the verdict that follows. Pure: rows as the server writes them, fakes."""

from __future__ import annotations

import json

import pytest

from auditor.core.model import Classified, Evidence, Finding, Kind, Verdict
from auditor.platforms.openmetadata.reindex import ReindexEvidence
from auditor.platforms.openmetadata.reindex_place import Order, Partition, partition_from_row, place
from auditor.platforms.openmetadata.reindex_rows import TypeProgress, job_from_row
from sandbox.openmetadata.reindex import partition_ranges

NOW = 1_800_000_000_000
A, B, C = (f"{c * 8}-0000-4000-8000-000000000000" for c in "abc")


def part(index: int, start: int, end: int, status: str = "PENDING", **more: object) -> Partition:
    return Partition(f"p{index}", "table", index, start, end, status, **more)  # type: ignore[arg-type]


# three partitions of 10 over 30 rows: done, under way, to come
PARTS = [part(0, 0, 10, "COMPLETED", completed_at=NOW - 5_000), part(1, 10, 20, "PROCESSING", cursor=14),
         part(2, 20, 30)]  # fmt: skip


def test_a_partition_row_is_read_with_its_range_status_and_first_error_line() -> None:
    row = {"id": "p", "entitytype": "table", "partitionindex": 3, "rangestart": 30000, "rangeend": "40000",
           "status": "failed", "processingcursor": 31200, "completedat": NOW, "lastupdateat": None,
           "lasterror": "boom\n\tat org.openmetadata.X(X.java:1)", "retrycount": 3}  # fmt: skip
    p = partition_from_row(row)
    assert (p.index, p.start, p.end, p.status, p.cursor, p.retries) == (3, 30000, 40000, "FAILED", 31200, 3)
    assert p.error == "boom" and "X.java" not in p.said()
    assert p.said().startswith("partition 3 of table (offsets 30000-39999, FAILED at ")
    assert p.summary() == {"index": 3, "status": "FAILED", "range": [30000, 40000], "error": "boom"}
    hostile = partition_from_row({"rangestart": "x", "status": None})
    assert hostile.start == 0 and hostile.status == "PENDING"


def test_an_unchanged_table_places_each_entity_exactly() -> None:
    order = Order(rows=30, unchanged=30, before={A: 4, B: 14, C: 29})
    done = place(A, PARTS, order)
    assert done.state == "passed" and (done.low, done.high) == (4, 4) and done.partitions == (PARTS[0],)
    assert "offset 4 of 30: partition 0 of table (offsets 0-9, COMPLETED at" in done.where()
    assert place(B, PARTS, order).state == "ahead"  # PROCESSING: the job may still write it
    assert "read up to offset 14" in place(B, PARTS, order).where()
    last = place(C, PARTS, order)
    assert last.state == "ahead" and last.partitions == (PARTS[2],)


def test_rows_written_since_the_job_began_widen_the_place_by_as_many() -> None:
    # 3 rows written since (their places then unknown): A has 8 unchanged rows before it now,
    # so it was at 8..11 then: partition 0 or 1
    order = Order(rows=30, unchanged=27, before={A: 5, B: 8})
    near = place(A, PARTS, order)
    assert (near.low, near.high) == (5, 8) and near.state == "passed" and "3 rows were written" in near.why
    straddling = place(B, PARTS, order)
    assert straddling.partitions == (PARTS[0], PARTS[1]) and straddling.state == "ahead"
    assert straddling.summary()["offsets"] == [8, 11]


def test_rows_created_or_removed_count_against_the_larger_of_then_and_now() -> None:
    grown = Order(rows=34, unchanged=30, before={A: 2})  # 4 created since: 2 to 6
    assert (place(A, PARTS, grown).low, place(A, PARTS, grown).high) == (2, 6)
    shrunk = Order(rows=26, unchanged=26, before={A: 2})  # 4 removed since: 2 to 6
    assert place(A, PARTS, shrunk).high == 6


def test_a_key_past_every_row_counted_is_the_last_partitions_to_read() -> None:
    order = Order(rows=31, unchanged=30, before={A: 30})  # created since, named after every other
    late = place(A, PARTS, order)
    assert late.partitions == (PARTS[2],) and late.state == "ahead"
    assert "past the last of the 30 rows it counted" in late.where()
    finished = [part(0, 0, 10, "COMPLETED"), part(1, 10, 20, "COMPLETED")]
    assert place(A, finished, Order(21, 20, {A: 20})).state == "passed"


def test_finished_partitions_pass_failed_ones_fail_and_a_mix_is_passed() -> None:
    order = Order(rows=30, unchanged=28, before={A: 8})  # 8..10: partitions 0 and 1
    for statuses, state in (
        (("COMPLETED", "COMPLETED"), "passed"),
        (("FAILED", "FAILED"), "failed"),
        (("COMPLETED", "FAILED"), "passed"),
        (("COMPLETED", "CANCELLED"), "passed"),
        (("COMPLETED", "PENDING"), "ahead"),
        (("COMPLETED", "SOMETHING_NEW"), "ahead"),  # a status not known: work to come
    ):
        parts = [part(0, 0, 10, statuses[0]), part(1, 10, 20, statuses[1]), part(2, 20, 30)]
        assert place(A, parts, order).state == state, statuses


def test_what_cannot_be_placed_is_said_so() -> None:
    order = Order(rows=30, unchanged=30, before={A: 3})
    assert "no partition" in place(A, [], order).why
    assert "could not be read" in place(A, PARTS, None).why
    assert "row is gone" in place(B, PARTS, order).why
    counted_other = place(A, PARTS, Order(rows=40, unchanged=35, before={A: 3}))
    assert counted_other.state == "unknown" and "more than the 30 it counted" in counted_other.why
    assert counted_other.summary() == {"state": "unknown", "why": counted_other.why}
    assert counted_other.where().startswith("its place in the job's order is unknown")


def _job(**more: object) -> ReindexEvidence:
    row: dict[str, object] = {"id": "job-1", "status": "RUNNING", "createdat": NOW - 60_000,
                              "startedat": NOW - 50_000, "updatedat": NOW - 1_000,
                              "jobconfiguration": json.dumps({"entities": ["table"]}),
                              "stagedindexmapping": json.dumps({"table": "t_rebuild_1"})}  # fmt: skip
    job = job_from_row(row, {"table": TypeProgress(30, 14, 0)})
    return ReindexEvidence([job], now_ms=NOW, **more)  # type: ignore[arg-type]


def _finding(urn: str, verdict: Verdict = Verdict.DIVERGED, reason: str = "changed 90s ago") -> Classified:
    f = Finding("index.stale-fields", Kind.STALE_FIELDS, urn, "table", details={"fqn": f"s.d.c.{urn[0]}"})
    return Classified(f, verdict, "stale_fields" if verdict == Verdict.DIVERGED else verdict.value,
                      Evidence(reason, kafka=False))  # fmt: skip


def test_the_job_leaves_what_it_passed_to_the_verdict_it_has_without_it() -> None:
    order = Order(rows=30, unchanged=30, before={A: 4, B: 25})
    evidence = _job(placements={A: place(A, PARTS, order), B: place(B, PARTS, order)})
    passed = evidence.judge(_finding(A))
    assert passed.verdict == Verdict.DIVERGED and passed.evidence.reason.startswith("changed 90s ago; ")
    assert "job-1 (RUNNING) has passed it and will not rewrite it" in passed.evidence.reason
    assert "its rebuild index t_rebuild_1 does not hold it as its row says" in passed.evidence.reason
    assert passed.finding.details["reindex"]["place"]["state"] == "passed"
    fresh = evidence.judge(_finding(A, Verdict.IN_FLIGHT, "changed 1s ago, within the 5s grace"))
    assert fresh.verdict == Verdict.IN_FLIGHT and "has passed it" in fresh.evidence.reason  # grace: kept
    ahead = evidence.judge(_finding(B))
    assert ahead.verdict == Verdict.IN_FLIGHT and "is reindexing it into t_rebuild_1" in ahead.evidence.reason
    assert "partition 2 of table (offsets 20-29, PENDING)" in ahead.evidence.reason
    assert ahead.evidence.eta_seconds is not None
    (line, _) = evidence.warnings(["table"], {})
    assert "in flight but for 1 in partitions it has completed or failed" in line


def test_a_partition_failed_for_good_is_a_divergence_with_its_error() -> None:
    parts = [part(0, 0, 10, "FAILED", error="Exception: index_closed_exception", retries=3), *PARTS[1:]]
    order = Order(rows=30, unchanged=30, before={A: 4})
    evidence = _job(placements={A: place(A, parts, order)})
    c = evidence.judge(_finding(A, Verdict.IN_FLIGHT, "changed 1s ago, within the 5s grace"))
    assert c.verdict == Verdict.DIVERGED and "failed the partition holding it" in c.evidence.reason
    assert "FAILED: Exception: index_closed_exception" in c.evidence.reason
    retried = [part(0, 0, 10, "PENDING", error="Exception: timeout", retries=1), *PARTS[1:]]
    again = _job(placements={A: place(A, retried, order)}).judge(_finding(A))
    assert (
        again.verdict == Verdict.IN_FLIGHT and "PENDING, retry 1: Exception: timeout" in again.evidence.reason
    )


def test_a_rebuild_index_holding_it_right_or_an_unknown_place_keep_it_in_flight() -> None:
    order = Order(rows=30, unchanged=30, before={A: 4})
    agrees = _job(placements={A: place(A, PARTS, order)}, staged_agrees={A})
    c = agrees.judge(_finding(A))
    assert c.verdict == Verdict.IN_FLIGHT and "promotion will serve it" in c.evidence.reason
    unknown = _job(placements={A: place(A, PARTS, None)}).judge(_finding(A))
    assert unknown.verdict == Verdict.IN_FLIGHT
    assert (
        "its place in the job's order is unknown: the type's order could not be read"
        in unknown.evidence.reason
    )
    without = _job().judge(_finding(A))  # no partition table: progress only, as before
    assert without.verdict == Verdict.IN_FLIGHT and "place" not in without.finding.details["reindex"]


@pytest.mark.parametrize(
    ("total", "kind", "size", "least", "want"),
    [
        (0, "table", 10000, 1, []),
        (80, "table", 10000, 1, [(0, 80)]),
        (34, "table", 10000, 3, [(0, 12), (12, 24), (24, 34)]),
        (20000, "table", 10000, 1, [(i, min(i + 6666, 20000)) for i in range(0, 20000, 6666)]),
        (2500, "tag", 100, 1, [(0, 2000), (2000, 2500)]),  # clamped to 1000, / 0.5 complexity
    ],
)
def test_the_sandbox_splits_a_type_as_openmetadatas_partition_calculator(
    total: int, kind: str, size: int, least: int, want: list[tuple[int, int]]
) -> None:
    assert partition_ranges(total, kind, size, least) == want


def test_the_order_is_read_in_the_databases_own_order_by_name_and_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over SQLite (its BINARY collation: 'B' before 'a'): one count per entity, or one pass over
    the type's order for many, give the same places; a row written since the job began is not
    counted before anyone."""
    from sqlalchemy import create_engine, text

    from auditor.platforms.openmetadata import bookkeeping
    from auditor.platforms.openmetadata.naming import ENTITIES
    from auditor.platforms.openmetadata.store import OmStore

    engine = create_engine("sqlite://")
    rows = [
        ("e1", "b", 10),
        ("e2", "B", 10),
        ("e3", "a", 10),
        ("e0", "a", 10),
        ("e4", "c", 99),
        ("e5", "d", 10),
    ]
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE table_entity (id TEXT, name TEXT, updatedAt INTEGER, json TEXT)"))
        for i, n, u in rows:
            conn.execute(text("INSERT INTO table_entity VALUES (:i, :n, :u, '{}')"), {"i": i, "n": n, "u": u})
    store = OmStore("sqlite://", engine=engine)
    ids = ["e0", "e1", "e2", "e3", "e4", "e5", "gone"]
    monkeypatch.setattr(bookkeeping, "ORDER_LOOKUPS", 100)
    counted = store.reindex_order(ENTITIES["table"], ids, since=50)
    assert counted is not None and (counted.rows, counted.unchanged) == (6, 5)
    # ORDER BY name, id: B/e2, a/e0, a/e3, b/e1, c/e4 (written since), d/e5
    assert counted.before == {"e2": 0, "e0": 1, "e3": 2, "e1": 3, "e4": 4, "e5": 4}
    monkeypatch.setattr(bookkeeping, "ORDER_LOOKUPS", 0)
    assert store.reindex_order(ENTITIES["table"], ids, since=50) == counted
    assert store.reindex_partitions("job", ["table"]) is None  # no partition table


def test_an_openmetadata_repair_paces_its_writes_at_the_rate_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """--rate on OpenMetadata: at most `rate` entities a second, smoothed (the shared Throttle), on
    a clock of the test's own (no wall-time bound for a loaded machine to break)."""
    import auditor.rebuild.openmetadata as om_repair
    from auditor.rebuild.throttle import Throttle

    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    made: list[float | None] = []

    def throttle(rate: float | None) -> Throttle:
        made.append(rate)
        return Throttle(rate, clock=lambda: now[0], sleep=sleep)

    monkeypatch.setattr(om_repair, "Throttle", throttle)
    work = om_repair.OmRepair(store=None, search=None, writer=None, rate=200.0)  # type: ignore[arg-type]
    work.pace(41)  # the first goes at once, the next 40 one every 5 ms
    assert made == [200.0] and len(slept) == 40
    assert sum(slept) == pytest.approx(0.2) and now[0] == pytest.approx(100.2)
    unpaced = om_repair.OmRepair(store=None, search=None, writer=None)  # type: ignore[arg-type]
    unpaced.pace(10_000)
    assert made == [200.0, None] and len(slept) == 40  # no rate: never waits
