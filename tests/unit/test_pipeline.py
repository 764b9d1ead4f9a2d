"""The scan's steps over fakes of the backend Protocols: join, causal re-observation, evidence, plan."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fakes import T0, FakeEvents, FakeSearch, FakeState, FakeStore, rows

from auditor.core.join import JoinOrderError
from auditor.core.model import Classified, Evidence, Finding, Kind, RepairKind, Report, Selection, Verdict
from auditor.core.plan import RepairAction, plan
from auditor.core.records import MclHit, OffsetSample
from auditor.platforms.datahub.documents.projection import project_entity
from auditor.platforms.datahub.naming import document_id
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.absence import missing_indices
from auditor.platforms.datahub.scan.join import Scanner
from auditor.platforms.datahub.scan.run import ScanBackends, ScanOptions, ScanTarget, run_scan
from auditor.reports import RENDERERS
from auditor.scan import reread

INDEX = "tagindex_v2"
A, B, C = "urn:li:tag:a", "urn:li:tag:b", "urn:li:tag:c"


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.load()


def tag(name: str, description: str = "kept") -> dict[str, dict[str, Any]]:
    return {"tagKey": {"name": name}, "tagProperties": {"name": name, "description": description}}


def doc(registry: Registry, urn: str, aspects: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"urn": urn, **project_entity(registry, urn, aspects).fields}


def scan(store: FakeStore, search: FakeSearch, events: FakeEvents | None, registry: Registry) -> Report:
    options = ScanOptions(sample_window=0, visibility=0, settle=0, grace=300)
    report = Report(started_at=T0 + timedelta(days=1), scope=Selection())
    return run_scan(ScanBackends(store, search, events, FakeState()), registry, report, options, ScanTarget())


def test_the_join_finds_missing_and_orphan_documents(registry: Registry) -> None:
    store = FakeStore([rows(A, tag("a")), rows(B, tag("b"))])
    search = FakeSearch({INDEX: {document_id(A): doc(registry, A, tag("a")), document_id(C): {"urn": C}}})
    found = Scanner(store, search, registry).run(Selection())
    kinds = {(f.urn, f.kind) for f in found.findings}
    assert kinds == {(B, Kind.MISSING_DOCUMENT), (C, Kind.ORPHAN_DOCUMENT)}
    repairs = {f.urn: f.repairs for f in found.findings}
    assert repairs == {B: (RepairKind.REPLAY_ASPECT,), C: (RepairKind.DELETE_DOCUMENT,)}


def test_every_finding_of_the_join_and_the_scan_names_datahub_first(registry: Registry) -> None:
    """`details.platform`, on each finding the join returns (a custom check's too): the reports,
    the repairs and the triage ask the platform it names, never assume DataHub's."""
    store = FakeStore([rows(A, tag("a", "new")), rows(B, tag("b"))])
    stale = doc(registry, A, tag("a", "old"))
    search = FakeSearch({INDEX: {document_id(A): stale, document_id(C): {"urn": C}}})
    joined = Scanner(store, search, registry).run(Selection())
    assert {f.kind for f in joined.findings} == {
        Kind.MISSING_DOCUMENT,
        Kind.ORPHAN_DOCUMENT,
        Kind.STALE_FIELDS,
    }
    for f in joined.findings:
        assert next(iter(f.details)) == "platform" and f.platform == "datahub", f
    report = scan(store, search, None, registry)
    assert report.findings and {c.finding.platform for c in report.findings} == {"datahub"}
    found = next(c.finding for c in report.findings if c.finding.kind == Kind.STALE_FIELDS)
    assert found.details["fields"]  # the check's own details beside it
    data = json.loads(RENDERERS["json"](report))
    assert data["schema_version"] == 2 and {f["details"]["platform"] for f in data["findings"]} == {"datahub"}


def test_an_unsorted_store_stops_the_scan_with_exit_code_3(registry: Registry) -> None:
    class Unsorted(FakeStore):
        def stream_entities(self, *args: Any, **kwargs: Any) -> Any:
            return iter(sorted(self.entities.values(), key=lambda e: e.urn, reverse=True))

    store = Unsorted([rows(A, tag("a")), rows(B, tag("b"))])
    with pytest.raises(JoinOrderError) as caught:
        Scanner(store, FakeSearch({INDEX: {}}), registry).run(Selection())
    assert caught.value.exit_code == 3


def consumed(urn: str, aspects: dict[str, dict[str, Any]], offset: int) -> MclHit:
    value = json.dumps(aspects["tagProperties"]).encode()
    return MclHit(urn, offset, T0, "tagProperties", "UPSERT", value)


def test_an_earlier_write_of_the_same_value_is_not_the_change_s_own_mcl(registry: Registry) -> None:
    """The history is read from a minute before the change: an MCL with the same value whose audit
    stamp is an earlier write's (two demos a minute apart) is not this change's own; the change's
    was never published. The same MCL stamped as the row is the change's own: consumed, not applied."""
    verdicts = {}
    for name, created in (("earlier", T0 - timedelta(seconds=50)), ("own", T0)):
        hit = MclHit(
            A, 5, T0, "tagProperties", "UPSERT", json.dumps(tag("a")["tagProperties"]).encode(), created
        )
        store = FakeStore([rows(A, tag("a"))])
        search = FakeSearch({INDEX: {document_id(A): doc(registry, A, tag("a", "old"))}})
        (c,) = scan(store, search, FakeEvents(committed=10, end=10, hits=[hit]), registry).findings
        verdicts[name] = (c.verdict, c.evidence.mcl_found, "consumed but not applied" in c.evidence.reason)
    assert verdicts["own"] == (Verdict.DIVERGED, True, True)
    assert verdicts["earlier"][0] == Verdict.DIVERGED and verdicts["earlier"][2] is False, verdicts


def test_a_field_of_an_aspect_without_a_row_is_not_a_change_never_published(registry: Registry) -> None:
    """The document holds `owners` but the tag has no ownership row: nothing was (or can be)
    published for it; the finding says so and asks for a rewrite of the document, not a replay."""
    owned = {
        **tag("a"),
        "ownership": {
            "owners": [{"owner": "urn:li:corpuser:x", "type": "DATAOWNER"}],
            "lastModified": {"time": 0, "actor": "urn:li:corpuser:x"},
        },
    }
    store = FakeStore([rows(A, tag("a"))])
    search = FakeSearch({INDEX: {document_id(A): doc(registry, A, owned)}})
    report = scan(store, search, FakeEvents(committed=10, end=10, hits=[]), registry)
    (c,) = report.findings
    assert c.finding.kind == Kind.FIELD_LEFT_BEHIND and c.finding.details["absent_aspects"] == ["ownership"]
    assert c.verdict == Verdict.DIVERGED and c.subkind != "event_never_published", c
    assert "ownership" in c.evidence.reason and "rewrite" in c.evidence.reason
    assert {a.kind for a in plan(report.findings).actions} == {RepairKind.REWRITE_DOCUMENT}


def test_a_stale_doc_read_in_causal_order_is_diverged(registry: Registry) -> None:
    log: list[str] = []
    store = FakeStore([rows(A, tag("a"))], log)
    search = FakeSearch({INDEX: {document_id(A): doc(registry, A, tag("a", "old"))}}, log)
    events = FakeEvents(committed=10, end=10, hits=[consumed(A, tag("a"), 5)], log=log)
    report = scan(store, search, events, registry)
    (c,) = report.findings
    assert (c.verdict, c.subkind) == (Verdict.DIVERGED, "stale_fields")
    assert "consumed but not applied" in c.evidence.reason and c.evidence.mcl_offset == 5
    # the join (rows and docs at once), then a quick round and one after the visibility
    # wait (a diverged verdict needs it), each: rows, offsets, docs, rows (between them the
    # broker's log of the group's commits is asked whether A's event was consumed lately)
    assert [e for e in log if e != "commit log"][-8:] == ["rows", "offsets", f"docs {INDEX}", "rows"] * 2
    seen = c.evidence.observed
    assert seen is not None and seen.settled and seen.rounds == 2
    assert seen.rows_read_at <= seen.offsets_sampled_at <= seen.docs_read_at <= seen.rows_confirmed_at  # type: ignore[operator]
    assert report.exit_code == 1


class SleepLog(list[float]):
    """The sleeps a re-observation asked for (and did not take)."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


class RememberingState(FakeState):
    """A state file whose last scan sampled the group at `committed`, a minute ago."""

    def __init__(self, committed: int) -> None:
        super().__init__()
        self.committed = committed

    def previous_samples(self, group: str) -> dict[tuple[str, int], OffsetSample]:
        topic = ScanTarget().versioned_topic
        return {(topic, 0): OffsetSample(topic, 0, self.committed, 0, 10, 1, time.time() - 60)}


def waited_scan(
    registry: Registry, events: FakeEvents, state: FakeState, monkeypatch: pytest.MonkeyPatch
) -> tuple[Report, SleepLog]:
    sleeps = SleepLog()
    monkeypatch.setattr(reread.time, "sleep", sleeps)
    store = FakeStore([rows(A, tag("a"))])
    search = FakeSearch({INDEX: {document_id(A): doc(registry, A, tag("a", "old"))}})
    options = ScanOptions(sample_window=0, visibility=5.0, settle=0, grace=300)
    report = Report(started_at=T0 + timedelta(days=1), scope=Selection())
    run_scan(ScanBackends(store, search, events, state), registry, report, options, ScanTarget())
    return report, sleeps


def test_a_pending_mcl_is_judged_without_the_visibility_wait(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = FakeEvents(committed=5, end=10, hits=[consumed(A, tag("a"), 7)])
    report, sleeps = waited_scan(registry, events, FakeState(), monkeypatch)
    (c,) = report.findings
    assert c.verdict == Verdict.STALLED and c.evidence.mcl_offset == 7  # the fake group never moves
    assert not [s for s in sleeps if s > 0.5], sleeps


def arrived_after(events: FakeEvents) -> FakeEvents:
    """The message at the committed offset was produced after the group's last move (a second ago)."""
    events.message_time = lambda *_: datetime.now(UTC) - timedelta(seconds=1)  # type: ignore[method-assign]
    return events


def test_a_group_the_window_saw_still_is_lagging_if_the_broker_logged_it_moving_at_its_cadence(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    def events(moved_ago: float, before: tuple[int, float] | None) -> FakeEvents:
        hits = [consumed(A, tag("a"), 7)]
        return FakeEvents(5, 10, hits, committed_since=time.time() - moved_ago, committed_before=before)

    # a consumer committing every 4 s looks still in a 1.5 s window: it moved 3 s ago
    moved = events(3, (2, time.time() - 7))
    report, _ = waited_scan(registry, moved, FakeState(), monkeypatch)
    (c,) = report.findings
    assert c.verdict == Verdict.IN_FLIGHT, c.evidence
    assert "commit log" in moved.log
    (pos,) = report.partitions  # the rate is its step over the time since: 3 offsets in ~3 s
    assert pos.rate is not None and 0.5 < pos.rate < 1.5, pos.rate
    for quiet in (
        events(60, (2, time.time() - 64)),  # its last move is older than the log read back
        events(3, None),  # the log shows no value before the one it holds
        events(3, (6, time.time() - 7)),  # it moved backwards
        events(3, (2, time.time() - 3.5)),  # it committed every half second, then nothing for 3 s
        arrived_after(events(3, (2, time.time() - 7))),  # caught up then; what came since waits
    ):
        report, _ = waited_scan(registry, quiet, FakeState(), monkeypatch)
        assert report.findings[0].verdict == Verdict.STALLED, quiet.committed_before


def test_a_would_be_divergence_waits_for_visibility_unless_nothing_was_consumed_since(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    def hits() -> list[MclHit]:
        return [consumed(A, tag("a"), 5)]

    report, sleeps = waited_scan(registry, FakeEvents(10, 10, hits()), FakeState(), monkeypatch)
    assert report.findings[0].verdict == Verdict.DIVERGED
    assert max(sleeps) > 4.5, sleeps  # the write consumed just before the sample may not show yet
    # the last scan saw the group at the same offset a minute ago: every write is long visible
    report, sleeps = waited_scan(registry, FakeEvents(10, 10, hits()), RememberingState(10), monkeypatch)
    assert report.findings[0].verdict == Verdict.DIVERGED
    assert not [s for s in sleeps if s > 0.5], sleeps
    # it saw an older offset: something was consumed since; A's own MCL (at 9), the wait is back
    since = FakeEvents(10, 10, [consumed(A, tag("a"), 9)])
    report, sleeps = waited_scan(registry, since, RememberingState(8), monkeypatch)
    assert max(sleeps) > 4.5, sleeps
    # what was consumed since (8 and 9) was other entities': A's writes are long visible, no wait,
    # judged in the first round (read without a wait)
    report, sleeps = waited_scan(registry, FakeEvents(10, 10, hits()), RememberingState(8), monkeypatch)
    assert report.findings[0].verdict == Verdict.DIVERGED
    assert not [s for s in sleeps if s > 0.5], sleeps
    seen = report.findings[0].evidence.observed
    assert seen is not None and seen.rounds == 1


def test_the_brokers_log_of_commits_spares_the_wait_when_the_offset_is_old(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    def hits() -> list[MclHit]:
        return [consumed(A, tag("a"), 5)]

    # the broker says the group committed offset 10 a minute ago: nothing consumed since
    events = FakeEvents(10, 10, hits(), committed_since=time.time() - 60)
    report, sleeps = waited_scan(registry, events, FakeState(), monkeypatch)
    assert report.findings[0].verdict == Verdict.DIVERGED
    assert not [s for s in sleeps if s > 0.5], sleeps
    assert "commit log" in events.log
    # committed a second ago: what it consumed may not be searchable yet, the wait stays
    events = FakeEvents(10, 10, hits(), committed_since=time.time() - 1)
    report, sleeps = waited_scan(registry, events, FakeState(), monkeypatch)
    assert report.findings[0].verdict == Verdict.DIVERGED
    assert 2.5 < max(sleeps) <= 5.0, sleeps
    # the broker's log cannot be read (no ACL): the full wait, as before
    report, sleeps = waited_scan(registry, FakeEvents(10, 10, hits()), FakeState(), monkeypatch)
    assert max(sleeps) > 4.5, sleeps


def test_a_doc_the_consumer_writes_during_the_scan_converges(registry: Registry) -> None:
    store = FakeStore([rows(A, tag("a", "new"))])
    search = FakeSearch({INDEX: {document_id(A): doc(registry, A, tag("a", "old"))}})
    events = FakeEvents(committed=10, end=10, hits=[consumed(A, tag("a", "new"), 9)])
    sample = events.sample

    samples = []

    def applied_meanwhile(topics: Any, group: str) -> Any:
        samples.append(1)
        if len(samples) == 2:  # after the join: the consumer has written the doc meanwhile
            search.docs[INDEX][document_id(A)] = doc(registry, A, tag("a", "new"))
        return sample(topics, group)

    events.sample = applied_meanwhile  # type: ignore[method-assign]
    report = scan(store, search, events, registry)
    (c,) = report.findings
    assert c.verdict == Verdict.IN_FLIGHT and "converged during the scan" in c.evidence.reason
    assert c.evidence.eta_seconds == 0.0 and report.exit_code == 0
    assert report.reobserved["converged"] == 1


def test_a_row_written_during_the_reobservation_is_judged_on_the_new_row(registry: Registry) -> None:
    store = FakeStore([rows(A, tag("a", "v1"))])
    search = FakeSearch({INDEX: {document_id(A): doc(registry, A, tag("a", "v0"))}})
    events = FakeEvents(committed=10, end=10, hits=[consumed(A, tag("a", "v2"), 8)])
    reads = []

    def live_write(s: FakeStore) -> None:
        reads.append(1)
        if len(reads) == 3:  # the re-read after the docs, in the quick round: a new value
            s.entities[A] = rows(A, tag("a", "v2"), T0 + timedelta(seconds=1))

    store.before_read = live_write
    report = scan(store, search, events, registry)
    (c,) = report.findings
    assert c.evidence.observed is not None and c.evidence.observed.rounds == 2
    assert c.verdict == Verdict.DIVERGED and c.evidence.mcl_offset == 8  # v2's own MCL


def test_an_entity_written_in_every_round_stays_in_flight(registry: Registry) -> None:
    store = FakeStore([rows(A, tag("a", "v0"))])
    search = FakeSearch({INDEX: {document_id(A): doc(registry, A, tag("a", "old"))}})
    writes = iter(range(100))

    def always(s: FakeStore) -> None:
        s.entities[A] = rows(A, tag("a", f"v{next(writes)}"))

    store.before_read = always
    report = scan(store, search, FakeEvents(committed=10, end=10), registry)
    (c,) = report.findings
    # the quick round and the three waited ones
    assert c.verdict == Verdict.IN_FLIGHT and "changed during each of 4 re-reads" in c.evidence.reason
    assert c.evidence.observed is not None and not c.evidence.observed.settled
    assert report.exit_code == 0


def test_a_pending_mcl_on_a_moving_consumer_is_in_flight_with_an_eta(registry: Registry) -> None:
    store = FakeStore([rows(A, tag("a", "new"))])
    search = FakeSearch({INDEX: {document_id(A): doc(registry, A, tag("a", "old"))}})
    events = FakeEvents(committed=4, end=12, hits=[consumed(A, tag("a", "new"), 9)])
    sample = events.sample

    def moving(topics: Any, group: str) -> Any:
        events.committed += 1
        return sample(topics, group)

    events.sample = moving  # type: ignore[method-assign]
    report = scan(store, search, events, registry)
    (c,) = report.findings
    assert c.verdict == Verdict.IN_FLIGHT and c.evidence.mcl_offset == 9
    assert c.evidence.eta_seconds is not None and c.evidence.eta_seconds > 0


def test_without_kafka_a_fresh_difference_is_in_flight_and_a_reread_still_applies(registry: Registry) -> None:
    store = FakeStore([rows(A, tag("a", "new"), datetime.now(UTC) - timedelta(seconds=5))])
    search = FakeSearch({INDEX: {document_id(A): doc(registry, A, tag("a", "old"))}})
    report = scan(store, search, None, registry)
    (c,) = report.findings
    assert c.verdict == Verdict.IN_FLIGHT and not c.evidence.kafka
    seen = c.evidence.observed
    assert (
        seen is not None and seen.offsets_sampled_at is None and seen.docs_read_at <= seen.rows_confirmed_at
    )


def judged(kind: Kind, verdict: Verdict, urn: str, subkind: str = "", **finding: Any) -> Classified:
    f = Finding("check", kind, urn, "dataset", "datasetindex_v2", **finding)
    return Classified(f, verdict, subkind or kind.value, Evidence(""))


def test_the_plan_maps_each_finding_to_what_fixes_it() -> None:
    gone, left, stale = "urn:li:dataset:gone", "urn:li:dataset:left", "urn:li:dataset:stale"
    replay, rewrite = (RepairKind.REPLAY_ASPECT,), (RepairKind.REWRITE_DOCUMENT,)
    repairs = plan(
        [
            judged(Kind.ORPHAN_DOCUMENT, Verdict.DIVERGED, gone, repairs=(RepairKind.DELETE_DOCUMENT,)),
            judged(
                Kind.STALE_SYSTEM_METADATA,
                Verdict.DIVERGED,
                gone,
                repairs=(RepairKind.REWRITE_SYSTEM_METADATA,),
            ),
            judged(Kind.FIELD_LEFT_BEHIND, Verdict.DIVERGED, left, repairs=rewrite),
            judged(Kind.STALE_FIELDS, Verdict.DIVERGED, left, aspect="globalTags", repairs=replay),
            judged(Kind.STALE_FIELDS, Verdict.DIVERGED, stale, aspect="globalTags", repairs=replay),
            judged(Kind.STALE_FIELDS, Verdict.DIVERGED, stale, aspect="globalTags", repairs=replay),
            judged(Kind.STALE_FIELDS, Verdict.STALLED, "urn:li:dataset:x", repairs=replay),
            judged(Kind.STALE_FIELDS, Verdict.STALLED, "urn:li:dataset:y", repairs=replay),
            judged(Kind.MISSING_DOCUMENT, Verdict.IN_FLIGHT, "urn:li:dataset:z", repairs=replay),
            judged(Kind.MALFORMED_ASPECT, Verdict.INVALID, "urn:li:dataset:bad", aspect="ownership"),
        ]
    )
    kinds = [(a.kind, a.urn) for a in repairs.actions]
    assert kinds == [
        (RepairKind.DELETE_DOCUMENT, gone),  # its rows are gone: nothing to rewrite from
        (RepairKind.REWRITE_DOCUMENT, left),  # covers the replay of the same urn
        (RepairKind.REPLAY_ASPECT, stale),  # two findings, one replay
        (RepairKind.RESTART_CONSUMER, None),  # once for every stalled finding
        (RepairKind.FIX_ROW, "urn:li:dataset:bad"),
    ]
    assert repairs.of(RepairKind.REPLAY_ASPECT)[0] == RepairAction(
        RepairKind.REPLAY_ASPECT, stale, "dataset", "globalTags", "datasetindex_v2", findings=2
    )


def test_an_index_behind_a_restore_is_replayed_from_its_earliest_stale_write() -> None:
    restored = [
        judged(
            Kind.STALE_FIELDS,
            Verdict.DIVERGED,
            f"urn:li:dataset:{i}",
            "index_behind_restore",
            changed_at=T0 + timedelta(minutes=i),
        )
        for i in (3, 1, 2)
    ]
    (window,) = plan(restored).actions
    assert window.kind == RepairKind.REPLAY_WINDOW and window.since == T0 + timedelta(minutes=1)
    assert window.findings == 3 and window.index == "datasetindex_v2"


def test_a_v2_index_missing_where_the_v3_index_holds_the_type_is_a_notice_naming_the_setting() -> None:
    """A type with rows in neither index is a finding; where the V3 index holds it, the deployment
    may be configured without V2 (ELASTICSEARCH_ENTITY_INDEX_V2_ENABLED=false): a notice."""
    found, notices = missing_indices(
        {"dataset": 4, "tag": 2}, lambda t: f"{t}index_v2", {"dataset": "primaryindex_v3"}
    )
    assert [(f.kind, f.index, f.details["entities"]) for f in found] == [
        (Kind.MISSING_INDEX, "tagindex_v2", 2)
    ]
    assert found[0].repairs == (RepairKind.RECREATE_INDEX,)
    [notice] = notices
    assert "ELASTICSEARCH_ENTITY_INDEX_V2_ENABLED=false" in notice and "primaryindex_v3" in notice


def test_after_a_restore_the_window_is_the_restores_section_not_the_worst_kept() -> None:
    """The report keeps the worst findings in detail only: the window of `rebuild after-restore`
    comes from the scan's restores section, counted over every finding."""
    from auditor.rebuild.datahub.after_restore import window

    report = Report(started_at=T0)
    report.findings = [  # the one kept in detail is not the earliest stale write
        judged(
            Kind.STALE_FIELDS,
            Verdict.DIVERGED,
            "urn:li:dataset:9",
            "index_behind_restore",
            changed_at=T0 + timedelta(minutes=9),
        )  # fmt: skip
    ]
    since = T0 + timedelta(minutes=1)
    report.sections["restores"] = [
        {
            "index": "datasetindex_v2",
            "entity_type": "dataset",
            "since": since.isoformat(),
            "behind": 25_000,
            "changed_since": 25_010,
            "repair": "auditor rebuild after-restore --apply",
            "reindex": "",
        }  # fmt: skip
    ]
    evidence = window(report, T0 + timedelta(hours=1), None)
    assert evidence.since == since and evidence.behind == {"datasetindex_v2": 25_000}


def test_an_index_behind_a_restore_is_said_once_in_every_report_escaped() -> None:
    report = Report(started_at=T0)
    report.sections["restores"] = [
        {
            "index": "evil|`index",
            "entity_type": "dataset",
            "since": T0.isoformat(),
            "behind": 1_200_000,
            "changed_since": 1_200_010,
            "repair": "auditor rebuild after-restore --apply",
            "reindex": "",
        }  # fmt: skip
    ]
    md = RENDERERS["markdown"](report)
    assert md.count("holds the state of before") == 1 and "1,200,000 of the 1,200,010 entities" in md
    assert "evil|`index" not in md  # the data escaped (a table or code span cannot be broken)
    data = json.loads(RENDERERS["json"](report))
    assert data["restores"][0]["behind"] == 1_200_000 and data["restores"][0]["index"] == "evil|`index"
