"""The scan engine every platform runs, in one order:

    join -> re-observe -> judge (the kernel's `classify`) -> the platform's evidence -> remember
    -> finish -> trend

A platform brings its `Parts` for one scan: its join (its sorted streams and its checks, on the
kernel's merge), its re-reads of the candidates in causal order, and its evidence (a change log,
a retry queue, a reindex job, a restore). The engine owns the order, the verdicts, the state file
(the second sight that makes a finding persistent), the trend and the report. A platform never
builds a verdict itself: `classify` does, and the kernel's `decided`, `explained` and `diverged`
name what the platform's evidence decides (docs/architecture.md, docs/adding-a-platform.md).
After the re-reads the engine also judges the scan as a whole: most documents orphaned is the
store far smaller than the index (the wrong database, a restore that lost rows), the report's
headline and its exit code, on every platform (core/sanity.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from auditor.backends.protocols import State
from auditor.core.classify import History, KafkaEvidence, classify, in_flight
from auditor.core.model import Classified, Finding, Kind, Observation, PartitionPosition, Report, Selection
from auditor.core.sanity import StoreSmaller, store_smaller
from auditor.scan.finish import finish
from auditor.scan.memory import record_trend, remember
from auditor.scan.options import FindingsOut


@dataclass(frozen=True, slots=True)
class Observed:
    """A candidate as its re-reads left it, with the change-log evidence sampled among them."""

    finding: Finding
    observation: Observation | None = None  # None: the platform does not re-read
    position: PartitionPosition | None = None
    kafka: KafkaEvidence | None = None


@dataclass
class Seen:
    """What the re-observation of the join's candidates found."""

    observed: list[Observed] = field(default_factory=list)  # still wrong, read in causal order
    converged: list[Observed] = field(default_factory=list)  # candidates that agree now
    unsettled: list[Observed] = field(default_factory=list)  # rows changed in every round
    candidates: int = 0  # findings of the join
    entities: int = 0  # their entities
    rounds: int = 0  # rounds run
    seconds: float = 0.0  # time the re-observation took

    @property
    def still(self) -> list[Finding]:
        """The findings the next scan should know were seen (observed wrong, or left unsettled)."""
        return [o.finding for o in self.observed + self.unsettled]


@dataclass
class Joined:
    """What the join saw: its candidates and its counts."""

    findings: list[Finding] = field(default_factory=list)
    entities: dict[str, int] = field(default_factory=dict)
    documents: dict[str, int] = field(default_factory=dict)
    unknown: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    stores: dict[str, dict[str, int]] = field(default_factory=dict)  # a federation: per store
    read: dict[str, int] | None = None  # rows and documents fetched (None: what was counted)


@dataclass(frozen=True)
class Judging:
    """How the engine judges: the grace of a change, the settle time of its event, the report's
    size, and whether the state file is read and written."""

    grace: float
    settle: float = 0.0
    max_findings: int = 10_000
    use_state: bool = True
    findings_out: FindingsOut | None = None  # every finding, not only the worst (scan --findings-out)


class Parts:
    """What a platform brings to one scan. `join` is required; the rest default to a platform
    with no re-reads and no evidence beyond time and history (each step's contract below)."""

    # the trend key's platform (None: DataHub's keys, written before there was another)
    platform: str | None = None

    def types(self, selection: Selection) -> tuple[str, ...]:
        """The entity types this scan covers (the state forgets their findings not seen again)."""
        return selection.entity_types

    def join(self, selection: Selection, progress: Any = None) -> Joined:
        """The streaming comparison: every candidate finding, and what was read."""
        raise NotImplementedError

    def reobserve(self, candidates: list[Finding]) -> Seen:
        """Read each candidate again in causal order; by default none is read again. The list is
        the platform's to take (the kernel's re-reads empty it as they go: memory)."""
        return Seen(observed=[Observed(f) for f in candidates], candidates=len(candidates),
                    entities=len({f.urn for f in candidates}))  # fmt: skip

    def weigh(self, judged: list[tuple[Observed, Classified]]) -> list[Classified]:
        """The platform's evidence on the verdicts of the findings still wrong (a retry queue, a
        federation's conflict); returns one verdict per pair, in order."""
        return [c for _, c in judged]

    def review(self, classified: list[Classified]) -> list[Classified]:
        """The platform's evidence on the whole scan (a restore, a reindex job, a confirmation)."""
        return classified

    def close(self, report: Report, classified: list[Classified]) -> None:
        """Warnings and sections of the report, before the engine closes it."""

    def closed(self, report: Report) -> None:
        """After the report is closed (a verdict that depends on the report's sections)."""


Weigh = Callable[[list[tuple[Observed, Classified]]], list[Classified]]
# what earlier scans know of the findings: by key, or the state's look-up of some keys
HistoryOf = Mapping[str, History] | Callable[[Iterable[str]], Mapping[str, History]]
HISTORY_CHUNK = 10_000  # findings judged per look-up of their history


def judge(seen: Seen, history: HistoryOf, judging: Judging, weigh: Weigh) -> list[Classified]:
    """One verdict per re-observed candidate, from the kernel: the still wrong by `classify` (then
    the platform's evidence), the converged and the unsettled in flight. `history`: what earlier
    scans know, by finding key; or the state's look-up, asked chunk by chunk as the judging goes
    (a scan after a restore holds no history for millions of findings at once)."""
    now = datetime.now(UTC)
    judged: list[tuple[Observed, Classified]] = []
    observed = seen.observed
    for i in range(0, len(observed), HISTORY_CHUNK):
        chunk = observed[i : i + HISTORY_CHUNK]
        known = history if isinstance(history, Mapping) else history(o.finding.key for o in chunk)
        judged += [
            (
                o,
                classify(
                    o.finding,
                    now,
                    grace=judging.grace,
                    settle=judging.settle,
                    position=o.position,
                    kafka=o.kafka if o.position is not None else None,
                    history=known.get(o.finding.key),
                    observed=o.observation,
                ),
            )
            for o in chunk
        ]
    out = weigh(judged)
    for o in seen.converged:
        at = o.observation.docs_read_at.isoformat(timespec="seconds") if o.observation else "the re-read"
        why = f"converged during the scan: the re-read at {at} agrees"
        out.append(in_flight(o.finding, why, o.observation, eta_seconds=0.0))
    for o in seen.unsettled:
        rounds = o.observation.rounds if o.observation else 0
        why = f"its rows changed during each of {rounds} re-reads (live writes): "
        why += "judged again by the next scan"
        out.append(in_flight(o.finding, why, o.observation))
    return out


def reobserved(seen: Seen) -> dict[str, float]:
    """The report's account of the re-observation."""
    return {
        "candidates": seen.candidates,
        "entities": seen.entities,
        "converged": len(seen.converged),
        "unsettled": len(seen.unsettled),
        "rounds": seen.rounds,
        "seconds": round(seen.seconds, 3),
    }


def smaller(selection: Selection, report: Report, seen: Seen) -> StoreSmaller | None:
    """The store far smaller than the index (core/sanity.py), judged on the orphaned documents
    still there after the re-reads; a scan of given urns or of recent writes says nothing of it."""
    if selection.urns or selection.since:
        return None
    orphans: dict[str, int] = {}
    for f in seen.still:
        if f.kind == Kind.ORPHAN_DOCUMENT and f.index:
            orphans[f.index] = orphans.get(f.index, 0) + 1
    return store_smaller(sum(report.entities.values()), report.documents, orphans)


def run(
    parts: Parts,
    state: State,
    report: Report,
    judging: Judging,
    progress: Any = None,
    log: Callable[[str], None] | None = None,
) -> Report:
    """Scan `report.scope` with the platform's parts: the join's findings are candidates,
    re-observed, judged by the kernel and the platform's evidence, remembered, reported."""
    selection = report.scope
    joined = parts.join(selection, progress)
    report.entities, report.documents = joined.entities, joined.documents
    report.unknown = joined.unknown
    report.warnings += joined.warnings
    report.stores = joined.stores
    report.read = joined.read if joined.read is not None else {
        "rows": sum(joined.entities.values()), "documents": sum(joined.documents.values())
    }  # fmt: skip
    if log and joined.findings:
        log(f"re-observing {len({f.urn for f in joined.findings})} entities in causal order")
    candidates, joined.findings = joined.findings, []  # the re-observation takes them (memory)
    seen = parts.reobserve(candidates)
    report.reobserved = reobserved(seen)
    report.store_smaller = smaller(selection, report, seen)
    # the history of the findings still wrong, read chunk by chunk (a scan without state reads none)
    classified = parts.review(judge(seen, state.history, judging, parts.weigh))
    if judging.use_state:
        remember(state, seen.still, report, parts.types(selection))
    parts.close(report, classified)
    out = judging.findings_out(report) if judging.findings_out is not None else None
    try:
        # counted one by one as the list is let go: only the worst --max-findings are kept
        finish(report, _taken(classified), judging.max_findings, out.write if out else None)
        parts.closed(report)
        if judging.use_state:
            record_trend(state, report, parts.platform)
        if out is not None:
            out.close(report)
    finally:
        if out is not None:
            out.discard()
    return report


def _taken(classified: list[Classified]) -> Iterator[Classified]:
    """The verdicts, each let go once counted (the list is emptied from its end, in its order)."""
    classified.reverse()
    while classified:
        yield classified.pop()
