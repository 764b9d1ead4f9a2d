"""The shared verification of a repair: batches, what counts as still wrong, the repair's sight."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from auditor.core.classify import classify, in_flight
from auditor.core.model import Classified, Finding, Kind, Report, Selection, Verdict
from auditor.rebuild.verify import RepairSight, selections, still_wrong

NOW = datetime.now(UTC)


def judged(urn: str, verdict: Verdict) -> Classified:
    kind = Kind.MALFORMED_ASPECT if verdict == Verdict.INVALID else Kind.STALE_FIELDS
    f = Finding("t", kind, urn, "thing", "things", None, NOW - timedelta(hours=1), {"platform": "t"}, ())
    if verdict == Verdict.IN_FLIGHT:
        return in_flight(f, "its event waits")
    return classify(f, NOW, grace=300, settle=0, position=None, kafka=None, history=None)


def test_the_touched_urns_are_scanned_in_batches_and_only_diverged_or_invalid_kept() -> None:
    asked: list[tuple[str, ...]] = []
    verdicts = {"a": Verdict.DIVERGED, "b": Verdict.IN_FLIGHT, "c": Verdict.INVALID}

    def scan(scope: Selection) -> Report:
        asked.append(scope.urns)
        report = Report(started_at=NOW, scope=scope)
        report.findings = [judged(u, verdicts[u]) for u in scope.urns if u in verdicts]
        return report

    found = still_wrong(scan, ["c", "b", "a", "d", "a"], batch=2)
    assert asked == [("a", "b"), ("c", "d")]  # sorted, once each, two a batch
    assert [(c.finding.urn, c.verdict) for c in found] == [("a", Verdict.DIVERGED), ("c", Verdict.INVALID)]
    asked.clear()
    still_wrong(scan, ["b", "a"], batch=0)
    assert asked == [("a", "b")]  # 0: one batch


def test_a_selection_repair_counts_the_entities_it_scanned() -> None:
    def scan(scope: Selection) -> Report:
        report = Report(started_at=NOW, scope=scope)
        report.entities = {"thing": 5}
        report.findings = [judged("x", Verdict.DIVERGED)] if scope.urn_like else []
        return report

    entities, found = selections(scan, [Selection(urn_like="x%"), Selection(entity_types=("thing",))])
    assert entities == 10 and [c.finding.urn for c in found] == ["x"]


def test_the_repairs_sight_makes_an_orphan_without_a_change_time_persistent_at_once() -> None:
    orphan = Finding("t", Kind.ORPHAN_DOCUMENT, "o", "thing", "things", None, None, {"platform": "t"}, ())
    first = classify(orphan, NOW, grace=0, settle=0, position=None, kafka=None, history=None)
    assert first.verdict == Verdict.IN_FLIGHT  # a scan's first sight: unconfirmed
    sight = RepairSight(NOW - timedelta(seconds=1))
    history = sight.history([orphan.key])
    again = classify(orphan, NOW, grace=0, settle=0, position=None, kafka=None, history=history[orphan.key])
    assert again.verdict == Verdict.DIVERGED
