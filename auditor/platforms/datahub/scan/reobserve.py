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

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from auditor.backends.connect import WEAKER
from auditor.backends.protocols import Events
from auditor.core.classify import CHANGE_KINDS, KafkaEvidence
from auditor.core.model import Finding, Kind, Observation, PartitionPosition, Selection
from auditor.core.records import EntityRows, OffsetSample
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.scan.evidence import ConsumerView, close_window, gather, partition_of
from auditor.platforms.datahub.scan.join import Scanner
from auditor.scan.engine import Observed, Seen

BATCH = 1000  # candidate urns re-read together (one IN list / terms query per 1000 urns)
# how far back the broker's log of the group's commits is read, and the clock difference between
# the broker and this process allowed for (NTP keeps them far closer)
COMMIT_LOOKBACK = 30.0
COMMIT_CLOCK_MARGIN = 1.0
MAX_ROUNDS = 3  # re-reads of an entity whose rows keep changing before it is left in flight


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


def _utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _by_urn(findings: list[Finding]) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in findings:
        out.setdefault(f.urn, []).append(f)
    return out


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


class Observer:
    """Re-reads candidates in causal order (rows -> offsets -> docs -> rows), batch by batch."""

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
        self.scanner = scanner
        self.kafka = kafka
        self.visibility = visibility  # a committed offset's writes are searchable this much later
        self.batch = batch
        self.max_rounds = max_rounds
        self.clock = clock or time.time
        self.sleep = sleep or time.sleep
        self.warnings: list[str] = []
        self._earlier: list[list[OffsetSample]] = []  # this observer's earlier offset samples

    def close_window(self) -> None:
        """Take the sample that closes the scan's window (also when there is nothing to re-read)."""
        k = self.kafka
        if k is not None and not k.closed:
            k.closed = True
            close_window(k.events, k.view, k.topics, k.min_window, k.previous, k.max_window, k.watch)

    def run(self, candidates: Sequence[Finding]) -> Seen:
        out = Seen()
        began = self.clock()
        by_urn: dict[str, list[Finding]] = {}
        for f in candidates:
            by_urn.setdefault(f.urn, []).append(f)
        urns = sorted(by_urn)
        out.candidates, out.entities = len(candidates), len(urns)
        for i in range(0, len(urns), self.batch):
            self._batch(urns[i : i + self.batch], by_urn, out)
        if not urns:
            try:
                self.close_window()
            except BackendUnavailable as exc:
                self._lost_kafka(exc)
        out.seconds = self.clock() - began
        return out

    # -- one batch, round by round ----------------------------------------------------------
    def _batch(self, urns: list[str], by_urn: dict[str, list[Finding]], out: Seen) -> None:
        pending = urns
        first = 1
        if self.kafka is not None:
            # a quick round without the visibility wait: pending MCLs and agreement need no wait
            first = 2
            out.rounds += 1
            settled, observation, findings, evidence = self._round(pending, by_urn, 1, wait=False)
            found_by_urn = _by_urn(findings)
            settled = {
                u
                for u in settled
                if all(_judged_without_wait(f, evidence.get(f.key)) for f in found_by_urn.get(u, []))
            }
            self._accept(settled, found_by_urn, by_urn, observation, evidence, out)
            pending = [u for u in pending if u not in settled]
            if not pending:
                return
        for round_no in range(first, first + self.max_rounds):
            out.rounds += 1
            settled, observation, findings, evidence = self._round(pending, by_urn, round_no)
            self._accept(settled, _by_urn(findings), by_urn, observation, evidence, out)
            pending = [u for u in pending if u not in settled]
            if not pending:
                return
        unsettled = Observation(
            observation.rows_read_at,
            observation.offsets_sampled_at,
            observation.docs_read_at,
            observation.rows_confirmed_at,
            rounds=observation.rounds,
            settled=False,
        )
        for urn in pending:
            out.unsettled.extend(Observed(f, unsettled) for f in by_urn[urn])

    @staticmethod
    def _accept(
        settled: set[str],
        found_by_urn: dict[str, list[Finding]],
        by_urn: dict[str, list[Finding]],
        observation: Observation,
        evidence: dict[str, tuple[Any, Any]],
        out: Seen,
    ) -> None:
        """The settled entities' findings are observed; their other candidates converged."""
        for urn in settled:
            now_found = found_by_urn.get(urn, [])
            checks = {f.check for f in now_found}
            for f in now_found:
                position, kafka = evidence.get(f.key, (None, None))
                out.observed.append(Observed(f, observation, position, kafka))
            for f in by_urn[urn]:
                if f.check not in checks:
                    out.converged.append(Observed(f, observation))

    def _round(
        self, urns: list[str], by_urn: dict[str, list[Finding]], round_no: int, wait: bool = True
    ) -> tuple[set[str], Observation, list[Finding], dict[str, tuple[Any, Any]]]:
        types = tuple(sorted({f.entity_type for u in urns for f in by_urn[u]}))
        plan = self.scanner.plan(Selection(entity_types=types, urns=tuple(urns)))
        rows = list(self.scanner.row_stream(plan))  # R
        rows_read = self.clock()
        sampled = self._sample()  # O
        if sampled is not None and wait:
            left = self._unchanged_since(sampled, urns) + self.visibility - self.clock()
            if left > 0:
                self.sleep(left)
        docs_read = self.clock()  # D
        projections = {name: list(s) for name, s in self.scanner.projection_streams(plan).items()}
        again = dict(self.scanner.row_stream(plan))  # R'
        confirmed = self.clock()
        before = dict(rows)
        settled = {u for u in urns if before.get(u) == again.get(u)}
        observation = Observation(
            _utc(rows_read),
            _utc(sampled) if sampled is not None else None,
            _utc(docs_read),
            _utc(confirmed),
            rounds=round_no,
        )
        streams: dict[str, Iterator[tuple[str, Any]]] = {
            "rows": iter([(u, r) for u, r in rows if u in settled]),
            **{name: iter([(u, v) for u, v in items if u in settled]) for name, items in projections.items()},
        }
        findings = [f for f in self.scanner.join(plan, streams).findings if f.urn in settled]
        return settled, observation, findings, self._evidence(findings, before)

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
            for key, run in (runs or {}).items():
                if run.offset is None or run.offset == now[key].committed:
                    best[key] = min(best[key], run.since + COMMIT_CLOCK_MARGIN)
        return max(best.values(), default=0.0)

    def _lost_kafka(self, exc: BackendUnavailable) -> None:
        """Kafka went away: the comparison goes on, the verdicts rest on time and history."""
        self.kafka = None
        self.warnings.append(f"{exc}: {WEAKER}")

    def _evidence(
        self, findings: list[Finding], rows: dict[str, EntityRows]
    ) -> dict[str, tuple[PartitionPosition | None, KafkaEvidence | None]]:
        """Per finding key: its partition's position at O and what the topic says of its change."""
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
