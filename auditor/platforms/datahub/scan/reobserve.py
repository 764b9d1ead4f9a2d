"""Re-observation: a candidate finding is judged only on reads made in causal order.

The scan reads the table, the indices and the consumer's offsets at different moments while
the platform keeps writing, so a finding of the join may be nothing but a document read before
the consumer wrote it. Every candidate's entity is therefore read again, in this order:

    rows (R)  ->  the MAE group's offsets (O)  ->  documents, system metadata, edges (D)  ->  rows (R')

The consumer commits an offset only after applying the messages below it, so at D (plus the
index's visibility delay) every MCL below the offsets sampled at O is in the documents. The
delay is counted from the earliest sample that already showed the same committed offsets on the
candidates' partitions (an earlier round, the window's first sample, or the last scan's sample
in the state file): nothing was consumed there since, so nothing is left to become visible.
A first round reads D without waiting: a candidate whose MCL is pending at O (in flight or
stalled) or that agrees at D is judged there; only the rest, which could be called diverged,
are read again after the wait.

If the rows did not change between R and R', the MCL of the value read at R is either pending at O
(in flight) or below it, and then a document that still disagrees at D will not converge.
An entity whose rows changed between R and R' was written during the observation: it is read
again in the next round, judged on its newer rows. A candidate whose entity agrees now
converged during the scan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from auditor.backends.connect import WEAKER
from auditor.backends.protocols import Events
from auditor.core.classify import CHANGE_KINDS, KafkaEvidence
from auditor.core.model import Finding, Kind, PartitionPosition, Selection
from auditor.core.records import CommitRun, EntityRows, OffsetSample
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.scan.evidence import READ_CAP, ConsumerView, close_window, gather, partition_of
from auditor.platforms.datahub.scan.join import Scanner, ScanPlan
from auditor.scan.reread import BATCH, MAX_ROUNDS, Rereader

# how far back the broker's log of the group's commits is read, and the clock difference between
# the broker and this process allowed for (NTP keeps them far closer)
COMMIT_LOOKBACK = 30.0
COMMIT_CLOCK_MARGIN = 1.0
# the kinds only the urn's own events write (its documents, its system metadata); its edges are
# written by its events and removed by its destination's deletion too
OWN_EVENTS_ONLY = frozenset(
    {
        Kind.ORPHAN_DOCUMENT,
        Kind.MISSING_DOCUMENT,
        Kind.STALE_FIELDS,
        Kind.FIELD_LEFT_BEHIND,
        Kind.SOFT_DELETE_MISMATCH,
        Kind.STALE_SYSTEM_METADATA,
    }
)
EDGE_KINDS = frozenset({Kind.MISSING_EDGE, Kind.ORPHAN_EDGE})
# the most events a partition's read of what the group consumed lately may span (more: the wait)
LATELY_CAP = 50_000
Projections = dict[str, list[tuple[str, Any]]]  # documents, system metadata, edges: (urn, value)


@dataclass
class KafkaSide:
    """The event log and the consumer view a re-observation samples (absent without Kafka)."""

    events: Events
    view: ConsumerView
    topics: Sequence[str]
    topic: str  # the versioned change-log topic, where an aspect's MCL is looked for
    min_window: float  # the first sample closes the scan's sampling window
    previous: dict[tuple[str, int], OffsetSample]
    partitions: int  # partitions of `topic` (an urn's partition is murmur2(urn) % partitions)
    closed: bool = False
    max_window: float | None = None  # sample again until a lagging partition moves, up to this
    watch: set[tuple[str, int]] | None = None  # the partitions `max_window` waits for (None: all)


def _judged_without_wait(f: Finding, evidence: tuple[Any, Any] | None) -> bool:
    """A verdict that does not rest on the documents being current.

    Invalid rows; an MCL pending at O (in flight or stalled); a change with no MCL of its value
    anywhere on the read history (never published, or still within the settle time): no write
    consumed before O can have carried that value, so a later read of the docs changes nothing.
    """
    if f.kind in (Kind.MALFORMED_ASPECT, Kind.STORE_CONFLICT):  # rows alone judge these
        return True
    kafka = evidence[1] if evidence else None
    if not isinstance(kafka, KafkaEvidence):
        return False
    if kafka.pending is not None:
        return True
    return (
        f.kind in CHANGE_KINDS
        and f.changed_at is not None
        and kafka.consumed is None
        and kafka.pending_complete
        and kafka.history_complete
        and kafka.within_retention
    )


def touched(findings: Iterable[Finding]) -> set[str]:
    """The urns and edges' destinations of these findings."""
    out = {f.urn for f in findings}
    out.update(
        str(f.details["destination"])
        for f in findings
        if f.kind in EDGE_KINDS and f.details.get("destination")
    )
    return out


def writers(findings: list[Finding]) -> set[str] | None:
    """The urns whose events write what these findings compare (the urn's own; an edge's
    destination too, whose deletion removes it); None when a finding's writers are not known."""
    known = all(
        f.kind in OWN_EVENTS_ONLY or (f.kind in EDGE_KINDS and isinstance(f.details.get("destination"), str))
        for f in findings
    )
    return touched(findings) if known else None


class Observer(Rereader):
    """DataHub's reads for the engine's causal re-observation: the rows, the MAE group's offsets
    (O), the documents, system metadata and edges, and the change log's evidence."""

    def __init__(
        self,
        scanner: Scanner,
        kafka: KafkaSide | None,
        *,
        visibility: float = 3.0,
        batch: int = BATCH,
        max_rounds: int = MAX_ROUNDS,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        super().__init__(visibility=visibility, batch=batch, max_rounds=max_rounds, clock=clock, sleep=sleep)
        self.scanner = scanner
        self.kafka = kafka
        self.warnings: list[str] = []
        self._earlier: list[list[OffsetSample]] = []  # this observer's earlier offset samples
        self._runs: dict[tuple[str, int], CommitRun] = {}  # the broker's log of the group's commits
        self._writers: set[str] | None = None  # whose events write what the round's candidates compare
        self._sampled: float | None = None  # this round's sample of the group's offsets (O)
        self._lately: dict[str, bool] = {}  # urn -> an event of it may have been consumed lately
        self._found: set[str] = set()  # the urns (and edges' destinations) of the round's findings
        self._changed: dict[
            str, float
        ] = {}  # urn -> its newest change seen (epoch s), candidates' and findings'

    def close_window(self) -> None:
        """Take the sample that closes the scan's window (also when there is nothing to re-read)."""
        k = self.kafka
        if k is not None and not k.closed:
            k.closed = True
            close_window(k.events, k.view, k.topics, k.min_window, k.previous, k.max_window, k.watch)

    # -- the reads of a round -----------------------------------------------------------------
    @property
    def quick(self) -> bool:
        return self.kafka is not None  # a pending MCL and agreement need no visibility wait

    def prepare(self, candidates: dict[str, list[Finding]]) -> ScanPlan:
        self._writers = writers([f for found in candidates.values() for f in found])
        # an earlier round's findings of these urns kept (their rows may be newer than the join's);
        # another batch's dropped: bounded by the batch
        self._changed = {u: t for u, t in self._changed.items() if u in candidates}
        self._note_changes(f for found in candidates.values() for f in found)
        types = tuple(sorted({f.entity_type for found in candidates.values() for f in found}))
        return self.scanner.plan(Selection(entity_types=types, urns=tuple(candidates)))

    def rows(self, batch: ScanPlan) -> dict[str, EntityRows]:
        return dict(self.scanner.row_stream(batch))

    def mark(self) -> float | None:
        self._sampled = self._sample()
        self._lately, self._runs = {}, {}  # what the group committed lately: asked again each round
        return self._sampled

    def wait(self, sampled: float | None, urns: Sequence[str]) -> None:
        if sampled is None:
            return  # no Kafka: nothing says when the writes were made
        left = self._unchanged_since(sampled, urns) + self.visibility - self.clock()
        if left > 0 and (
            self._writers is None
            or self._changed_since(sampled, urns)
            or self._consumed_lately(self._writers | set(urns))
        ):
            self.sleep(left)

    def docs(self, batch: ScanPlan) -> Projections:
        return {name: list(s) for name, s in self.scanner.projection_streams(batch).items()}

    def check(
        self,
        batch: ScanPlan,
        settled: set[str],
        rows: dict[str, EntityRows],
        docs: dict[str, list[tuple[str, Any]]],
    ) -> list[Finding]:
        if self.scanner.witness is not None:  # a triage shows the settled urn as judged here
            self.scanner.witness.judging(batch, settled)
        streams: dict[str, Iterator[tuple[str, Any]]] = {
            "rows": iter([(u, r) for u, r in rows.items() if u in settled]),
            **{name: iter([(u, v) for u, v in items if u in settled]) for name, items in docs.items()},
        }
        return self.scanner.join(batch, streams).findings

    def without_wait(self, finding: Finding, evidence: tuple[Any, Any] | None) -> bool:
        if _judged_without_wait(finding, evidence):
            return True
        if self._younger_than_visibility(finding, evidence):
            return False
        mine = writers([finding])  # nothing of its writers consumed lately: all visible at D
        if not self._lately:
            self._consumed_lately(self._found)  # the round's findings' at once: one read a partition
        return mine is not None and not self._consumed_lately(mine)

    def _younger_than_visibility(self, finding: Finding, evidence: tuple[Any, Any] | None) -> bool:
        """Its change (the rows' newest write) or its own MCL came within the visibility delay
        before this round's sample: whatever the broker's log of commits says, a write cannot be
        searchable before it was made, so the documents are read again after the wait. (A
        verification right after a repair, under live writes, judged an entity written 0.15 s
        before the sample without the wait, and called the consumer's write not applied.)"""
        sampled = self._sampled
        if sampled is None:
            return False
        kafka = evidence[1] if evidence else None
        consumed = kafka.consumed if isinstance(kafka, KafkaEvidence) else None
        times = [finding.changed_at, consumed.timestamp if consumed is not None else None]
        return any(t is not None and t.timestamp() > self._horizon(sampled) for t in times)

    def _horizon(self, sampled: float) -> float:
        """Writes made after this may not be searchable at a read right after `sampled`."""
        return sampled - self.visibility - COMMIT_CLOCK_MARGIN

    def _note_changes(self, findings: Iterable[Finding]) -> None:
        for f in findings:
            if f.changed_at is not None:
                at = f.changed_at.timestamp()
                self._changed[f.urn] = max(at, self._changed.get(f.urn, at))

    def _changed_since(self, sampled: float, urns: Sequence[str]) -> bool:
        """One of `urns` changed within the visibility delay before `sampled` (its newest change
        as the join or an earlier round read it): the wait is taken, as `_younger_than_visibility`."""
        horizon = self._horizon(sampled)
        return any(self._changed.get(u, horizon) > horizon for u in urns)

    def idle(self) -> None:
        try:
            self.close_window()
        except BackendUnavailable as exc:
            self._lost_kafka(exc)

    def _sample(self) -> float | None:
        """Sample the group's offsets now; the sample's time (None without Kafka)."""
        k = self.kafka
        if k is None:
            return None
        if k.view.last:
            self._earlier.append(k.view.last)
        try:
            if not k.closed:
                self.close_window()
            else:
                close_window(k.events, k.view, k.topics, 0.0, k.previous)
        except BackendUnavailable as exc:
            self._lost_kafka(exc)
            return None
        return k.view.last[0].taken_at if k.view.last else self.clock()

    def _unchanged_since(self, sampled: float, urns: Sequence[str]) -> float:
        """The earliest time the urns' partitions already had the committed offsets sampled now.

        Committed offsets only move forward: a partition whose committed offset equals an
        earlier sample's consumed nothing since, so its writes have been visible since then.
        The earlier samples are this observer's, the window's and the last scan's (the state
        file); when they would still mean a wait, the broker's own log of the group's commits
        (`__consumer_offsets`) is asked when the sampled value was first committed.
        """
        k = self.kafka
        if k is None or not k.partitions:
            return sampled
        now = {(s.topic, s.partition): s for s in k.view.last}
        earlier = [
            k.previous,
            *({(s.topic, s.partition): s for s in x} for x in [k.view.first, *self._earlier]),
        ]
        best: dict[tuple[str, int], float] = {}
        for p in {partition_of(k.events)(u, k.partitions) for u in urns}:
            key = (k.topic, p)
            current = now.get(key)
            if current is None or current.committed is None:
                return sampled
            times = [
                e[key].taken_at
                for e in earlier
                if key in e and e[key].committed == current.committed and e[key].taken_at <= sampled
            ]
            best[key] = min(times, default=sampled)
        if best and max(best.values()) + self.visibility > sampled:
            runs = k.events.commit_times(k.view.group, set(best), max(COMMIT_LOOKBACK, 2 * self.visibility))
            self._runs.update(runs or {})
            for key, run in (runs or {}).items():
                if run.offset is None or run.offset == now[key].committed:
                    best[key] = min(best[key], run.since + COMMIT_CLOCK_MARGIN)
        return max(best.values(), default=0.0)

    def _consumed_lately(self, urns: set[str]) -> set[str]:
        """Those of `urns` an event of which the group may have consumed within the visibility
        delay before this round's sample, and so may not be searchable yet: what a wait is for.

        An urn is cleared when the group's position before that delay is known on its partition
        (an earlier sample, or the broker's log of its commits) and none of the offsets the group
        committed since holds an event of it: what it applied since was other entities', what
        it applied before is visible. So an orphan behind a busy consumer is judged without a
        wait unless an event of its own (or of an edge's destination) was just consumed.
        Answered once per urn a round.
        """
        k, sampled, known = self.kafka, self._sampled, self._lately
        asked = {u for u in urns if u not in known}
        if not asked:
            return {u for u in urns if known[u]}
        if k is None or sampled is None or not k.partitions:
            known.update(dict.fromkeys(asked, True))
            return set(urns)
        before = sampled - self.visibility - COMMIT_CLOCK_MARGIN
        now = {(s.topic, s.partition): s for s in k.view.last}
        by_partition: dict[tuple[str, int], set[str]] = {}
        part = partition_of(k.events)
        for urn in asked:
            by_partition.setdefault((k.topic, part(urn, k.partitions)), set()).add(urn)
        unread = set(by_partition) - self._runs.keys()
        if unread:  # one read of the broker's log of the group's commits, for every partition asked
            lookback = max(COMMIT_LOOKBACK, 2 * self.visibility)
            self._runs.update(k.events.commit_times(k.view.group, unread, lookback) or {})
        known.update(dict.fromkeys(asked, True))  # until a partition's read clears them
        for key, mine in sorted(by_partition.items()):
            current = now.get(key)
            start = None if current is None else self._committed_at(key, before, current.committed)
            if current is None or current.committed is None or start is None:
                continue
            if current.committed - start > LATELY_CAP:
                continue  # a read longer than the wait it would spare
            hits: list[Any] = []
            if start < current.committed:  # something consumed there since
                try:
                    hits, whole = k.events.find(key[0], key[1], mine, start, current.committed, READ_CAP)
                except BackendUnavailable as exc:
                    self._lost_kafka(exc)
                    break
                if not whole:
                    continue
            known.update(dict.fromkeys(mine - {h.urn for h in hits}, False))
        return {u for u in urns if known[u]}

    def _sampled_before(self, key: tuple[str, int], when: float) -> int | None:
        """The latest committed offset on `key` an earlier sample saw by `when` (None: none did)."""
        k = self.kafka
        assert k is not None
        earlier = [
            k.previous,
            *({(s.topic, s.partition): s for s in x} for x in [k.view.first, *self._earlier]),
        ]
        known = [
            committed
            for e in earlier
            if key in e and (committed := e[key].committed) is not None and e[key].taken_at <= when
        ]
        return max(known, default=None)

    def _committed_at(self, key: tuple[str, int], when: float, committed: int | None) -> int | None:
        """An offset the group had committed on `key` by `when` (committed offsets only move
        forward: at most what it held then), from the earlier samples and the broker's log of
        its commits; None when neither says."""
        known = [x for x in [self._sampled_before(key, when)] if x is not None]
        run = self._runs.get(key)
        if run is not None and run.offset is None and committed is not None:
            known.append(committed)  # no commit in the log's window: held since before it
        elif run is not None and (held := run.held_at(when)) is not None:
            known.append(held)
        return max(known, default=None)

    def _lost_kafka(self, exc: BackendUnavailable) -> None:
        """Kafka went away: the comparison goes on, the verdicts rest on time and history."""
        self.kafka = None
        self.warnings.append(f"{exc}: {WEAKER}")

    def evidence(
        self, findings: list[Finding], rows: dict[str, EntityRows]
    ) -> dict[str, tuple[PartitionPosition | None, KafkaEvidence | None]]:
        """Per finding key: its partition's position at O and what the topic says of its change."""
        self._found = touched(findings)  # what `without_wait` asks of, answered at once
        self._note_changes(findings)
        k = self.kafka
        if k is None or not findings:
            return {}
        metadata = {
            (urn, aspect): row.metadata for urn, entity in rows.items() for aspect, row in entity.rows.items()
        }
        try:
            found = gather(k.events, k.view, k.topic, findings, metadata, k.partitions)
        except BackendUnavailable as exc:
            self._lost_kafka(exc)
            return {}
        out: dict[str, tuple[PartitionPosition | None, KafkaEvidence | None]] = {}
        for f in findings:
            if f.kind in (Kind.MALFORMED_ASPECT, Kind.STORE_CONFLICT) or not k.partitions:
                continue
            position = k.view.of(k.topic, partition_of(k.events)(f.urn, k.partitions))
            out[f.key] = (position, found.get(f.key))
        return out
