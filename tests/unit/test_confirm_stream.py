"""`--confirm` over a stream: the in-flight urns and what the re-check still finds wait on disk in
urn order and are merged with the verdicts, so memory stays flat however many are in flight."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from auditor.core.classify import diverged, in_flight
from auditor.core.model import CONVERGED_LISTED, Classified, Finding, Kind, Report, Selection
from auditor.platforms.datahub.scan import judge
from auditor.platforms.datahub.scan.judge import still_in_flight, unconverged


def finding(urn: str, kind: Kind = Kind.MISSING_DOCUMENT, aspect: str | None = None) -> Finding:
    return Finding("t.check", kind, urn, "thing", "things", aspect, None, {"platform": "t"}, ())


class Joins:
    """A scanner whose re-check finds `still` (urn -> findings) and records each batch asked."""

    def __init__(self, still: dict[str, list[Finding]]) -> None:
        self.still, self.batches = still, list[tuple[str, ...]]()

    def run(self, selection: Selection) -> Any:
        self.batches.append(selection.urns)

        class Joined:
            findings = [f for u in selection.urns for f in self.still.get(u, [])]

        return Joined()


def test_the_recheck_asks_each_urn_once_in_batches_and_keeps_what_it_still_finds_in_urn_order(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(judge, "CONFIRM_BATCH", 3)
    urns = ["u1", "u1", "u2", "u3", "u3", "u4", "u5"]
    scanner = Joins({"u4": [finding("u4", aspect="b"), finding("u4", aspect="a")], "u2": [finding("u2")]})
    still = still_in_flight(urns, 0, scanner)  # type: ignore[arg-type]
    assert still is not None
    assert scanner.batches == [("u1", "u2", "u3"), ("u4", "u5")]
    assert [u for u, _ in still] == ["u2", "u4", "u4"]
    assert {k for _, k in still} == {
        finding("u2").key,
        finding("u4", aspect="a").key,
        finding("u4", aspect="b").key,
    }
    assert still_in_flight([], 0, scanner) is None  # type: ignore[arg-type]


def test_in_flight_verdicts_not_found_again_converge_the_rest_pass_through() -> None:
    report = Report(datetime.now(UTC))
    stays, goes = finding("u2", aspect="a"), finding("u2", aspect="b")
    verdicts: list[Classified] = [
        in_flight(finding("u1"), "lag"),  # not found again: converged
        diverged(finding("u1", Kind.ORPHAN_DOCUMENT), "gone"),  # not in flight: passes
        in_flight(stays, "lag"),
        in_flight(goes, "lag"),
        in_flight(finding("u3"), "lag"),
    ]
    still = [("u2", stays.key), ("u3", finding("u3").key), ("u9", "elsewhere")]
    out = list(unconverged(verdicts, still, report))
    assert [c.finding.key for c in out] == [verdicts[1].finding.key, stays.key, finding("u3").key]
    assert report.converged == [finding("u1").key, goes.key] and report.converged_total == 2


def test_an_in_flight_verdict_out_of_urn_order_is_kept_not_taken_for_converged() -> None:
    report = Report(datetime.now(UTC))
    late = in_flight(finding("u1"), "lag")
    out = list(unconverged([in_flight(finding("u5"), "lag"), late], [("u1", finding("u1").key)], report))
    assert late in out and report.converged_total == 1  # u5 converged; u1 came after u5: kept


def test_the_report_names_the_first_converged_and_counts_them_all() -> None:
    report = Report(datetime.now(UTC))
    report.add_converged([f"k{i}" for i in range(CONVERGED_LISTED - 1)])
    report.add_converged(["a", "b", "c"])
    report.add_converged(["d"], total=5)  # a merged report's: 5 converged, 1 named
    assert len(report.converged) == CONVERGED_LISTED and report.converged[-1] == "a"
    assert report.converged_total == CONVERGED_LISTED - 1 + 3 + 5
