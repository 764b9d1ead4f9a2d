"""Re-observation: a candidate finding is judged only on reads made in causal order.

The scan reads the table, the indices and the consumer's offsets at different moments while
the platform keeps writing, so a finding of the join may be nothing but a document read before
the consumer wrote it. Every candidate's entity is therefore read again, in this order:

    rows (R)  ->  the MAE group's offsets (O)  ->  documents, system metadata, edges (D)  ->  rows (R')

The consumer commits an offset only after applying the messages below it, so at D (plus the
index's visibility delay) every MCL below the offsets sampled at O is in the documents. If the
rows did not change between R and R', the MCL of the value read at R is either pending at O
(in flight) or below it, and then a document that still disagrees at D will not converge.
An entity whose rows changed between R and R' was written during the observation: it is read
again in the next round, judged on its newer rows. A candidate whose entity agrees now
converged during the scan.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from auditor.backends.connect import WEAKER
from auditor.backends.protocols import Events
from auditor.core.classify import KafkaEvidence
from auditor.core.model import Finding, Kind, Observation, PartitionPosition, Selection
from auditor.core.records import EntityRows, OffsetSample
from auditor.core.urns import urn_partition
from auditor.errors import BackendUnavailable
from auditor.scan.evidence import ConsumerView, close_window, gather
from auditor.scan.join import Scanner

BATCH = 1000  # candidate urns re-read together (one IN list / terms query per 1000 urns)
MAX_ROUNDS = 3  # re-reads of an entity whose rows keep changing before it is left in flight


@dataclass(frozen=True)
class Observed:
    """A finding from an ordered re-observation, with the Kafka evidence sampled inside it."""

    finding: Finding
    observation: Observation
    position: PartitionPosition | None = None
    kafka: KafkaEvidence | None = None


@dataclass
class Reobservation:
    """What the re-observation of the candidates found."""

    observed: list[Observed] = field(default_factory=list)  # still wrong, read in causal order
    converged: list[Observed] = field(default_factory=list)  # candidates that agree now
    unsettled: list[Observed] = field(default_factory=list)  # rows changed in every round
    candidates: int = 0  # findings of the join
    entities: int = 0  # their entities
    rounds: int = 0  # rounds run over all batches
    seconds: float = 0.0  # time the re-observation took


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


def _utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


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
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.scanner = scanner
        self.kafka = kafka
        self.visibility = visibility  # a committed offset's writes are searchable this much later
        self.batch = batch
        self.max_rounds = max_rounds
        self.clock = clock
        self.sleep = sleep
        self.warnings: list[str] = []

    def close_window(self) -> None:
        """Take the sample that closes the scan's window (also when there is nothing to re-read)."""
        k = self.kafka
        if k is not None and not k.closed:
            k.closed = True
            close_window(k.events, k.view, k.topics, k.min_window, k.previous)

    def run(self, candidates: Sequence[Finding]) -> Reobservation:
        out = Reobservation()
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
    def _batch(self, urns: list[str], by_urn: dict[str, list[Finding]], out: Reobservation) -> None:
        pending = urns
        for round_no in range(1, self.max_rounds + 1):
            out.rounds += 1
            settled, observation, findings, evidence = self._round(pending, by_urn, round_no)
            found_by_urn: dict[str, list[Finding]] = {}
            for f in findings:
                found_by_urn.setdefault(f.urn, []).append(f)
            for urn in settled:
                now_found = found_by_urn.get(urn, [])
                checks = {f.check for f in now_found}
                for f in now_found:
                    position, kafka = evidence.get(f.key, (None, None))
                    out.observed.append(Observed(f, observation, position, kafka))
                for f in by_urn[urn]:
                    if f.check not in checks:
                        out.converged.append(Observed(f, observation))
            pending = [u for u in pending if u not in settled]
            if not pending:
                return
        unsettled = Observation(
            observation.rows_read_at,
            observation.offsets_sampled_at,
            observation.docs_read_at,
            observation.rows_confirmed_at,
            rounds=self.max_rounds,
            settled=False,
        )
        for urn in pending:
            out.unsettled.extend(Observed(f, unsettled) for f in by_urn[urn])

    def _round(
        self, urns: list[str], by_urn: dict[str, list[Finding]], round_no: int
    ) -> tuple[set[str], Observation, list[Finding], dict[str, tuple[Any, Any]]]:
        types = tuple(sorted({f.entity_type for u in urns for f in by_urn[u]}))
        plan = self.scanner.plan(Selection(entity_types=types, urns=tuple(urns)))
        rows = list(self.scanner.row_stream(plan))  # R
        rows_read = self.clock()
        sampled = self._sample()  # O
        if sampled is not None:
            wait = sampled + self.visibility - self.clock()
            if wait > 0:
                self.sleep(wait)
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
        try:
            if not k.closed:
                self.close_window()
            else:
                close_window(k.events, k.view, k.topics, 0.0, k.previous)
        except BackendUnavailable as exc:
            self._lost_kafka(exc)
            return None
        return k.view.last[0].taken_at if k.view.last else self.clock()

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
            if f.kind == Kind.MALFORMED_ASPECT or not k.partitions:
                continue
            position = k.view.of(k.topic, urn_partition(f.urn, k.partitions))
            out[f.key] = (position, found.get(f.key))
        return out
