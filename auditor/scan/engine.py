"""The scan engine every platform runs, in one order:

    join -> re-observe -> judge (the kernel's `classify`) -> the platform's evidence -> remember
    -> finish -> trend

Memory is flat in the findings (a scan after a search restore has millions): the join's
candidates go to a spill on disk (auditor/scan/spill.py) in urn order, come back batch by batch to
be re-read and judged, and their verdicts go to a second spill; every later step (the platform's
whole-scan evidence, the state file, the count and the worst kept for the report, the JSON Lines
of every finding) streams over it. What a step keeps is per index, per type or per kind, never
per finding: only the report's worst `--max-findings` are held.

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
from typing import Any, Protocol

from auditor.backends.protocols import State
from auditor.core.classify import History, KafkaEvidence, classify, in_flight
from auditor.core.model import Classified, Finding, Kind, Observation, PartitionPosition, Report, Selection
from auditor.core.sanity import StoreSmaller, store_smaller
from auditor.scan.finish import finish
from auditor.scan.memory import record_trend, remember
from auditor.scan.options import FindingsOut
from auditor.scan.spill import Spill


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
    with no re-reads and no evidence beyond time and history (each step's contract below).

    Every step streams: the join adds its findings to the engine's sink (a spill on disk), the
    re-reads take them back in urn order and give one `Seen` a batch, the platform's evidence
    reads the verdicts as often as it needs to and gives them back as a stream; what a platform
    keeps across the scan is per index or per type, never per finding."""

    # the trend key's platform (None: DataHub's keys, written before there was another)
    platform: str | None = None

    def types(self, selection: Selection) -> tuple[str, ...]:
        """The entity types this scan covers (the state forgets their findings not seen again)."""
        return selection.entity_types

    def join(self, selection: Selection, progress: Any = None, sink: Sink | None = None) -> Joined:
        """The streaming comparison: every candidate finding (added to `sink` when given, else in
        `Joined.findings`), and what was read."""
        raise NotImplementedError

    def reobserve(self, candidates: Iterable[Finding]) -> Iterator[Seen]:
        """Read the candidates again in causal order, a batch at a time (they come in urn order,
        each urn's together); by default none is read again."""
        batch: list[Finding] = []
        for f in candidates:
            batch.append(f)
            if len(batch) >= REOBSERVE_BATCH:
                yield _unread(batch)
                batch = []
        if batch:
            yield _unread(batch)

    def weigh(self, judged: list[tuple[Observed, Classified]]) -> list[Classified]:
        """The platform's evidence on the verdicts of the findings still wrong (a retry queue, a
        federation's conflict), a batch at a time; returns one verdict per pair, in order."""
        return [c for _, c in judged]

    def gather(self, c: Classified) -> None:
        """Each verdict as it is judged, before `review` (what the whole-scan evidence counts is
        counted here: no pass over the verdicts for it)."""

    def review(self, classified: Iterable[Classified], still: Iterable[Finding]) -> Iterable[Classified]:
        """The platform's evidence on the whole scan (a restore, a reindex job, a confirmation):
        `classified` may be read more than once (a spill), `still` (the findings still wrong)
        too; the verdicts given back are read once, as a stream."""
        return classified

    def tally(self, c: Classified) -> None:
        """Each final verdict, as it is counted (a platform's sections gather from them)."""

    def close(self, report: Report) -> None:
        """Warnings and sections of the report, once every verdict has been counted."""

    def closed(self, report: Report) -> None:
        """After the report is closed (a verdict that depends on the report's sections)."""


class Sink(Protocol):
    """Where the join puts its candidates (the engine's spill, in urn order)."""

    def append(self, f: Finding, /) -> None: ...

    def extend(self, found: Iterable[Finding], /) -> None: ...

    def __len__(self) -> int: ...


REOBSERVE_BATCH = 1000  # the default re-observation's batch (no re-reads: nothing is read)


def _unread(batch: list[Finding]) -> Seen:
    return Seen(observed=[Observed(f) for f in batch], candidates=len(batch),
                entities=len({f.urn for f in batch}))  # fmt: skip


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


class Account:
    """The re-observation's account, summed over its batches: the report's `reobserved`, and the
    orphaned documents still there per index (the store far smaller than the index)."""

    def __init__(self) -> None:
        self.candidates = self.entities = self.converged = self.unsettled = self.rounds = 0
        self.seconds = 0.0
        self.orphans: dict[str, int] = {}

    def add(self, seen: Seen, still: list[Finding]) -> None:
        """One batch's account; `still`: its findings still wrong (`seen.still`, made once)."""
        self.candidates += seen.candidates
        self.entities += seen.entities
        self.converged += len(seen.converged)
        self.unsettled += len(seen.unsettled)
        self.rounds += seen.rounds
        self.seconds += seen.seconds
        for f in still:
            if f.kind == Kind.ORPHAN_DOCUMENT and f.index:
                self.orphans[f.index] = self.orphans.get(f.index, 0) + 1

    def reobserved(self) -> dict[str, float]:
        """The report's account of the re-observation."""
        return {
            "candidates": self.candidates,
            "entities": self.entities,
            "converged": self.converged,
            "unsettled": self.unsettled,
            "rounds": self.rounds,
            "seconds": round(self.seconds, 3),
        }


def smaller(selection: Selection, report: Report, orphans: dict[str, int]) -> StoreSmaller | None:
    """The store far smaller than the index (core/sanity.py), judged on the orphaned documents
    still there after the re-reads; a scan of given urns or of recent writes says nothing of it."""
    if selection.urns or selection.since:
        return None
    return store_smaller(sum(report.entities.values()), report.documents, orphans)


def by_urn(f: Finding) -> str:
    return f.urn


def by_verdict_urn(c: Classified) -> str:
    return c.finding.urn


def run(
    parts: Parts,
    state: State,
    report: Report,
    judging: Judging,
    progress: Any = None,
    log: Callable[[str], None] | None = None,
) -> Report:
    """Scan `report.scope` with the platform's parts: the join's findings are candidates,
    re-observed, judged by the kernel and the platform's evidence, remembered, reported. The
    candidates, the verdicts and the findings still wrong each wait on disk (flat memory)."""
    selection = report.scope
    with Spill(by_urn) as candidates, Spill(by_verdict_urn) as verdicts, Spill[Finding]() as still:
        joined = parts.join(selection, progress, candidates)
        candidates.extend(joined.findings)  # a platform that kept its own (few) findings
        joined.findings = []
        report.entities, report.documents = joined.entities, joined.documents
        report.unknown = joined.unknown
        report.warnings += joined.warnings
        report.stores = joined.stores
        report.read = joined.read if joined.read is not None else {
            "rows": sum(joined.entities.values()), "documents": sum(joined.documents.values())
        }  # fmt: skip
        if log and candidates:
            log(f"re-observing the {len(candidates)} findings' entities in causal order")
        account = Account()
        for seen in parts.reobserve(candidates):
            wrong = seen.still
            account.add(seen, wrong)
            still.extend(wrong)
            # the history of the findings still wrong, read chunk by chunk (none without state)
            judged = judge(seen, state.history, judging, parts.weigh)
            judged.sort(key=by_verdict_urn)  # a batch's verdicts in urn order, as the batches come
            for c in judged:
                parts.gather(c)
                verdicts.append(c)
        candidates.close()
        report.reobserved = account.reobserved()
        report.store_smaller = smaller(selection, report, account.orphans)
        reviewed = parts.review(verdicts, still)
        if judging.use_state:
            remember(state, still, report, parts.types(selection))
        _finish(parts, state, report, judging, reviewed)
    return report


def _finish(
    parts: Parts, state: State, report: Report, judging: Judging, reviewed: Iterable[Classified]
) -> None:
    """Count every verdict (the platform tallies its sections), keep the worst, write every one
    (`--findings-out`), close the report and its trend."""
    out = judging.findings_out(report) if judging.findings_out is not None else None

    def tallied() -> Iterator[Classified]:
        for c in reviewed:
            parts.tally(c)
            yield c

    try:
        finish(report, tallied(), judging.max_findings, out.write if out else None)
        parts.close(report)
        parts.closed(report)
        if judging.use_state:
            record_trend(state, report, parts.platform)
        if out is not None:
            out.close(report)
    finally:
        if out is not None:
            out.discard()
