"""The scan engine's order and its contract with a platform's parts (pure logic: fake parts)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from auditor.core.classify import History, diverged
from auditor.core.model import Classified, Finding, Kind, Observation, Report, Selection, Verdict
from auditor.reports.jsonl import FindingsWriter, findings, header_of, load
from auditor.scan import engine
from auditor.scan.engine import Joined, Judging, Observed, Parts, Seen
from tests.unit.fakes import FakeState

NOW = datetime.now(UTC)
OLD = NOW - timedelta(hours=2)


def finding(urn: str, kind: Kind = Kind.MISSING_DOCUMENT, changed: datetime | None = OLD) -> Finding:
    return Finding("t.check", kind, urn, "thing", "things", None, changed, {"platform": "t"}, ())


class Recording(Parts):
    """Parts that say what the engine asked of them, in order."""

    platform = "t"

    def __init__(self, found: list[Finding], seen: Seen | None = None) -> None:
        self.found, self.seen = found, seen
        self.calls: list[str] = []
        self.weighed: list[str] | None = None  # None: never asked
        self.tallied = 0

    def join(self, selection: Selection, progress: Any = None, sink: Any = None) -> Joined:
        self.calls.append("join")
        return Joined(list(self.found), {"thing": 3}, {"things": 2}, warnings=["joined"])

    def reobserve(self, candidates: Iterable[Finding]) -> Iterator[Seen]:
        self.calls.append("reobserve")
        if self.seen is None:
            yield from super().reobserve(candidates)
        else:
            yield self.seen

    def weigh(self, judged: list[tuple[Observed, Classified]]) -> list[Classified]:
        self.calls.append("weigh")
        self.weighed = [o.finding.urn for o, _ in judged]
        # the platform's evidence decides one: the kernel names it
        return [
            diverged(o.finding, "the platform's queue gave up") if o.finding.urn == "b" else c
            for o, c in judged
        ]

    def review(self, classified: Iterable[Classified], still: Iterable[Finding]) -> Iterable[Classified]:
        self.calls.append("review")
        return classified

    def tally(self, c: Classified) -> None:
        self.tallied += 1

    def close(self, report: Report) -> None:
        self.calls.append(f"close:{self.tallied}")

    def closed(self, report: Report) -> None:
        self.calls.append(f"closed:{len(report.findings)}")


class Remembering(FakeState):
    def __init__(self, history: dict[str, History] | None = None) -> None:
        super().__init__()
        self.known = history or {}
        self.asked: list[str] = []
        self.lookups: list[int] = []  # keys per look-up

    def history(self, keys: Iterable[str]) -> dict[str, History]:
        keys = list(keys)
        self.asked += keys
        self.lookups.append(len(keys))
        return {k: v for k, v in self.known.items() if k in keys}


def scan(parts: Parts, state: FakeState, use_state: bool = True) -> Report:
    report = Report(started_at=NOW, scope=Selection(entity_types=("thing",)))
    return engine.run(parts, state, report, Judging(grace=300.0, use_state=use_state))


def test_the_engine_runs_the_parts_in_order_and_closes_the_report() -> None:
    parts = Recording([finding("a"), finding("b")])
    state = Remembering()
    report = scan(parts, state)
    assert parts.calls == ["join", "reobserve", "weigh", "review", "close:2", "closed:2"]
    assert report.entities == {"thing": 3} and report.documents == {"things": 2}
    assert report.read == {"rows": 3, "documents": 2} and report.warnings == ["joined"]
    assert report.reobserved["candidates"] == 2 and report.reobserved["entities"] == 2
    assert state.asked == [f.key for f in parts.found]  # the history of what is still wrong
    assert [f.urn for f in state.recorded] == ["a", "b"]  # remembered for the next sight
    assert len(state.runs_recorded) == 1 and report.trend == [state.runs_recorded[0][1]]
    assert state.runs_recorded[0][0].startswith("platform=t;")  # the trend is the platform's
    assert report.finished_at is not None and report.exit_code == 1


def test_verdicts_come_from_the_kernel_and_the_platforms_evidence() -> None:
    report = scan(Recording([finding("a"), finding("b", changed=NOW)]), Remembering())
    by_urn = {c.finding.urn: c for c in report.findings}
    assert by_urn["a"].verdict == Verdict.DIVERGED and "no Kafka evidence" in by_urn["a"].evidence.reason
    assert (
        by_urn["b"].verdict == Verdict.DIVERGED
        and by_urn["b"].evidence.reason == "the platform's queue gave up"
    )


def test_a_second_sight_past_the_grace_is_persistent() -> None:
    orphan = finding("o", Kind.ORPHAN_DOCUMENT, changed=None)
    first = scan(Recording([orphan]), Remembering())
    assert first.findings[0].verdict == Verdict.IN_FLIGHT
    seen_before = Remembering({orphan.key: History(OLD, 1)})
    again = scan(Recording([orphan]), seen_before)
    assert again.findings[0].verdict == Verdict.DIVERGED and again.findings[0].evidence.seen_before == 1


def test_the_history_is_read_chunk_by_chunk_and_each_chunk_judged_with_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(engine, "HISTORY_CHUNK", 10)
    orphans = [finding(f"o{i:02}", Kind.ORPHAN_DOCUMENT, changed=None) for i in range(25)]
    state = Remembering({orphans[3].key: History(OLD, 1), orphans[22].key: History(OLD, 2)})
    report = scan(Recording(orphans), state)
    assert state.lookups == [10, 10, 5] and sorted(state.asked) == sorted(f.key for f in orphans)
    persistent = {
        c.finding.urn: c.evidence.seen_before for c in report.findings if c.verdict == Verdict.DIVERGED
    }
    assert persistent == {"o03": 1, "o22": 2}  # a second sight in the first chunk and in the last
    assert sum(c.verdict == Verdict.IN_FLIGHT for c in report.findings) == 23


def test_converged_and_unsettled_candidates_are_in_flight_and_only_the_unsettled_remembered() -> None:
    at = Observation(NOW, None, NOW, NOW, rounds=3)
    seen = Seen(
        converged=[Observed(finding("c"), at)],
        unsettled=[Observed(finding("u"), Observation(NOW, None, NOW, NOW, rounds=3, settled=False))],
        candidates=2,
        entities=2,
    )
    parts = Recording([finding("c"), finding("u")], seen)
    state = Remembering()
    report = scan(parts, state)
    reasons = {c.finding.urn: c.evidence.reason for c in report.findings}
    assert all(c.verdict == Verdict.IN_FLIGHT for c in report.findings)
    assert "converged during the scan" in reasons["c"] and "each of 3 re-reads" in reasons["u"]
    assert parts.weighed == []  # nothing still wrong to weigh, and it was asked all the same
    assert [f.urn for f in state.recorded] == ["u"]
    assert report.reobserved["converged"] == 1 and report.reobserved["unsettled"] == 1


def test_a_scan_without_state_remembers_nothing_and_records_no_trend() -> None:
    state = Remembering()
    report = scan(Recording([finding("a")]), state, use_state=False)
    assert state.recorded == [] and state.runs_recorded == [] and report.trend == []
    assert report.findings[0].verdict == Verdict.DIVERGED


def of(urn: str, kind: Kind = Kind.MISSING_DOCUMENT, changed: datetime | None = OLD) -> Finding:
    """A finding of a platform whose JSON form names its repairs (DataHub's)."""
    return Finding("t.check", kind, urn, "dataset", "things", None, changed, {"platform": "datahub"}, ())


def test_only_the_worst_are_held_yet_every_finding_is_counted_and_written_as_json_lines(
    tmp_path: Path,
) -> None:
    # an orphan first seen is in flight: it sorts first by urn, last by verdict
    found = [of("urn:!", Kind.ORPHAN_DOCUMENT, None)] + [
        of(f"urn:{i:03}", Kind.MISSING_DOCUMENT) for i in range(199)
    ]
    out = tmp_path / "all.jsonl.gz"
    report = Report(started_at=NOW, scope=Selection(entity_types=("dataset",)))
    engine.run(
        Recording(found),
        Remembering(),
        report,
        Judging(grace=300.0, max_findings=5, findings_out=partial(FindingsWriter, out)),
    )
    assert len(report.findings) == 5 and report.findings_dropped == 195
    assert sum(report.counts.values()) == 200
    # the worst first, as a sort of all would keep them: the diverged, by urn
    assert [c.finding.urn for c in report.findings] == ["urn:000", "urn:001", "urn:002", "urn:003", "urn:004"]
    header = header_of(out)
    assert header is not None and header["findings_total"] == 200 and "findings" not in header
    assert header["counts"] and header["findings_dropped"] == 195
    read = list(findings(out, header))
    assert sorted(c.finding.urn for c in read) == sorted(f.urn for f in found)
    again = load(out, keep=3)  # `report render` and the console: the worst 3 of the stream, all counted
    assert [c.finding.urn for c in again.findings] == ["urn:000", "urn:001", "urn:002"]
    assert again.findings_dropped == 197 and again.counts == report.counts
    assert [p.name for p in tmp_path.iterdir()] == ["all.jsonl.gz"]  # no spill left behind


def test_a_scan_that_fails_leaves_no_json_lines_file(tmp_path: Path) -> None:
    class Failing(Recording):
        def closed(self, report: Report) -> None:
            raise RuntimeError("the platform failed")

    out = tmp_path / "all.jsonl"
    report = Report(started_at=NOW, scope=Selection(entity_types=("thing",)))
    with pytest.raises(RuntimeError):
        engine.run(
            Failing([of("a")]),
            Remembering(),
            report,
            Judging(grace=300.0, findings_out=partial(FindingsWriter, out)),
        )
    assert list(tmp_path.iterdir()) == []
