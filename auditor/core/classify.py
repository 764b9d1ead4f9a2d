"""Classification: a finding plus the consumer's position and history -> exactly one verdict."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from auditor.core.model import (
    AnyKind,
    Cause,
    Classified,
    Evidence,
    Finding,
    Kind,
    Observation,
    PartitionHealth,
    PartitionPosition,
    Verdict,
)
from auditor.core.records import MclHit

# differences that follow a write to the table: the write's MCL can be looked for
CHANGE_KINDS = frozenset(
    {
        Kind.MISSING_DOCUMENT,
        Kind.STALE_FIELDS,
        Kind.FIELD_LEFT_BEHIND,
        Kind.SOFT_DELETE_MISMATCH,
        Kind.STALE_SYSTEM_METADATA,
        Kind.MISSING_EDGE,
        Kind.ORPHAN_EDGE,
    }
)
# the clock skew allowed between the database and the Kafka broker
CLOCK_SKEW_SECONDS = 60.0
# an index is "behind a restore" when at least this many entities changed since one instant
# are all stale, and they are at least this share of every entity changed since then
RESTORE_MIN_ENTITIES = 10
RESTORE_MIN_SHARE = 0.9


@dataclass(frozen=True, slots=True)
class History:
    """What earlier scans (the state file) know of a finding."""

    first_seen: datetime
    times_seen: int


@dataclass(frozen=True)
class KafkaEvidence:
    """What the topic says of one finding's urn."""

    pending: MclHit | None  # an MCL for the urn at or past the committed offset
    pending_complete: bool  # the pending range was read to its end
    consumed: MclHit | None = None  # the change's MCL below the committed offset
    history_complete: bool = False  # the range from the change time to the committed offset was read
    within_retention: bool = True  # the change is newer than the oldest message kept
    # (first, last) offsets retention deleted before the group read them, where the change's MCL
    # would be (the change is older than the first message kept): None when it read them all
    lost: tuple[int, int] | None = None


def _age(now: datetime, then: datetime | None) -> float | None:
    return None if then is None else (now - then).total_seconds()


def _progressing(p: PartitionPosition) -> bool:
    return p.health not in (PartitionHealth.STALLED, PartitionHealth.STOPPED)


def classify(
    finding: Finding,
    now: datetime,
    *,
    grace: float,
    settle: float,
    position: PartitionPosition | None,
    kafka: KafkaEvidence | None,
    history: History | None,
    observed: Observation | None = None,
) -> Classified:
    """Exactly one verdict for one finding, with the evidence it rests on.

    `observed`: the causally ordered re-observation the finding comes from (rows, then the
    offsets `position` was sampled at, then the documents). `diverged` rests on that order.
    """
    judge = _Judge(finding, now, grace, settle, position, kafka, history, observed)
    if finding.kind == Kind.MALFORMED_ASPECT:
        return judge.out(Verdict.INVALID, "the stored aspect cannot be read", Kind.MALFORMED_ASPECT.value)
    if finding.kind == Kind.OUTDATED_DOCUMENT:
        return judge.outdated()
    if finding.kind == Kind.STORE_BEHIND:
        return judge.store_behind()
    if position is None or kafka is None:
        return judge.without_kafka()
    return judge.pending(position, kafka) or judge.by_times(position, kafka) or judge.nothing_pending(kafka)


@dataclass(frozen=True)
class _Judge:
    """The rules of `classify`, one method per situation."""

    finding: Finding
    now: datetime
    grace: float
    settle: float
    position: PartitionPosition | None
    kafka: KafkaEvidence | None
    history: History | None
    observed: Observation | None

    def out(self, verdict: Verdict, reason: str, subkind: str | None = None, **ev: Any) -> Classified:
        p, h = self.position, self.history
        where: dict[str, Any] = {}
        if p is not None:
            where = {
                "topic": p.topic,
                "partition": p.partition,
                "partition_health": p.health,
                "position_time": p.position_time,
                "lag": p.lag,
                "rate": p.rate,
            }
        evidence = Evidence(
            reason=sys.intern(reason),  # one string per distinct reason: a restore has millions alike
            seen_before=h.times_seen if h else 0,
            first_seen=h.first_seen if h else None,
            kafka=p is not None,
            observed=self.observed,
            **where,
            **ev,
        )
        default = self.finding.kind.value if verdict == Verdict.DIVERGED else verdict.value
        return Classified(self.finding, verdict, subkind or default, evidence)

    @property
    def age(self) -> float | None:
        return _age(self.now, self.finding.changed_at)

    def outdated(self) -> Classified:
        """Written by an older release: no event will rewrite it, and nothing is lost."""
        d = self.finding.details
        missing = ", ".join(d.get("missing") or ())
        newest, oldest = d.get("written_by"), d.get("written_since") or d.get("written_by")
        # releases that index the document alike cannot be told apart: the range, never its newest
        # alone (1.0.0 to 1.2.0 read as "1.2.0" said a deployment that ran 1.0.0 ran 1.2.0)
        span = f"{oldest} to {newest}" if oldest != newest else f"{newest}"
        older = " or an older one" if d.get("or_older", True) else ""
        why = (
            f"written by DataHub {span}{older}: it lacks only {missing}, which "
            f"{d.get('judged_by')} indexes; no event rewrites it until the entity changes or its type "
            "is reindexed"
        )
        subkind = f"written_by_{oldest}_to_{newest}" if oldest != newest else f"written_by_{newest}"
        return self.out(Verdict.OUTDATED, why, subkind)

    def store_behind(self) -> Classified:
        """The index holds a later write than the store: the store is behind. A replica's write
        younger than its lag is on its way (in flight); anything older is not coming (a restored
        database, or a replica further behind than it says): the store is behind, never repaired
        by writing its older state unless asked."""
        d = self.finding.details
        lag, at = d.get("store_lag"), _instant(d.get("index_updated"))
        age = _age(self.now, at)
        if isinstance(lag, int | float) and age is not None and age <= lag + CLOCK_SKEW_SECONDS:
            why = (
                f"the store is a replica {lag:.0f}s behind its primary and the index's write of "
                f"{_aspects(d)} is {age:.0f}s old: within the lag, the replica will catch up"
            )
            return self.out(Verdict.IN_FLIGHT, why)
        ahead = d.get("ahead_seconds")
        how = f"{ahead:.0f}s " if isinstance(ahead, int | float) else ""
        why = (
            f"the index holds a write of {_aspects(d)} {how}later than the store's row, with content "
            "the row does not have: the store is behind (a lagging replica, a database restored "
            f"from an older backup); no repair writes the older row over it unless given "
            f"{d.get('prefer_store') or '--prefer-store'}"
        )
        return self.out(Verdict.STORE_BEHIND, why, Kind.STORE_BEHIND.value)

    def without_kafka(self) -> Classified:
        """No Kafka evidence: time and history only."""
        age, h = self.age, self.history
        persisted = h is not None and (self.now - h.first_seen).total_seconds() >= self.grace
        if age is not None and age < self.grace and not persisted:
            return self.out(Verdict.IN_FLIGHT, f"changed {age:.0f}s ago, within the {self.grace:.0f}s grace")
        if age is None and not persisted:
            why = "no change time and no Kafka evidence: unconfirmed until a later scan past the grace"
            return self.out(Verdict.IN_FLIGHT, why)
        if persisted and h is not None:
            why = f"still wrong {(self.now - h.first_seen).total_seconds():.0f}s after it was first seen"
        else:
            why = f"changed {age:.0f}s ago, longer than the {self.grace:.0f}s grace"
        return self.out(Verdict.DIVERGED, why + " (no Kafka evidence)")

    def pending(self, position: PartitionPosition, kafka: KafkaEvidence) -> Classified | None:
        """An MCL for the urn waits at or past the consumer's position."""
        hit = kafka.pending
        if hit is None:
            return None
        if not _progressing(position):
            why = f"its MCL waits at offset {hit.offset}, but the consumer is {position.health.value}"
            return self.out(Verdict.STALLED, why, mcl_found=True, mcl_offset=hit.offset)
        ahead = hit.offset - (position.committed if position.committed is not None else position.start)
        eta = (ahead + 1) / position.rate if position.rate else None
        why = f"its MCL waits at offset {hit.offset}, {ahead} behind the consumer's position"
        return self.out(Verdict.IN_FLIGHT, why, mcl_found=True, mcl_offset=hit.offset, eta_seconds=eta)

    def by_times(self, position: PartitionPosition, kafka: KafkaEvidence) -> Classified | None:
        """The backlog was too long to read: fall back on the time of the consumer's position."""
        if kafka.pending_complete:
            return None
        changed, at = self.finding.changed_at, position.position_time
        if (
            changed is not None
            and at is not None
            and changed.timestamp() >= at.timestamp() - CLOCK_SKEW_SECONDS
        ):
            if not _progressing(position):
                return self.out(Verdict.STALLED, f"the consumer is {position.health.value} before the change")
            why = "the consumer has not reached the change's time yet"
            return self.out(Verdict.IN_FLIGHT, why, eta_seconds=position.eta_seconds)
        return self.out(
            Verdict.DIVERGED, "the consumer is past the change's time and the projection is wrong"
        )

    def nothing_pending(self, kafka: KafkaEvidence) -> Classified:
        """Nothing pending for this urn: the consumer will not touch it again."""
        f, age = self.finding, self.age
        if age is not None and age < self.settle:
            return self.out(Verdict.IN_FLIGHT, f"written {age:.1f}s ago: its MCL may not be produced yet")
        absent = f.details.get("absent_aspects") if f.kind == Kind.FIELD_LEFT_BEHIND else None
        if absent:  # fields of aspects with no row: no MCL to find, none to publish
            return self.out(Verdict.DIVERGED, ABSENT.format(", ".join(map(str, absent))))
        if f.kind in CHANGE_KINDS and f.changed_at is not None:
            if kafka.consumed is not None:
                offset = kafka.consumed.offset
                why = f"its MCL (offset {offset}) was consumed but not applied"
                return self.out(Verdict.DIVERGED, why, mcl_found=True, mcl_offset=offset)
            if kafka.lost is not None:
                first, last = kafka.lost
                why = LOST.format(first, last, last + 1)
                return self.out(Verdict.DIVERGED, why, Cause.LOST_TO_RETENTION.value, mcl_found=False)
            if kafka.history_complete and kafka.within_retention:
                why = "no MCL for this change exists on the topic: it was never published"
                return self.out(Verdict.DIVERGED, why, Cause.EVENT_NEVER_PUBLISHED.value, mcl_found=False)
            if not kafka.within_retention:  # e.g. pgQueue's aggressive retention: consumed = deleted
                why = (
                    "nothing pending, and retention has deleted the topic's messages from before the "
                    "change: whether its MCL was published and consumed cannot be told"
                )
                return self.out(Verdict.DIVERGED, why)
        return self.out(Verdict.DIVERGED, LEFT_OVER.get(f.kind, NOTHING_PENDING))


def _instant(value: object) -> datetime | None:
    """An ISO timestamp a finding's details carry (None: none, or not one)."""
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _aspects(details: Any) -> str:
    return ", ".join(map(str, details.get("aspects") or ())) or "the entity"


ABSENT = (
    "the document holds fields of {}, which the entity has no row for: no event can bring them "
    "back or clear them (the aspect's delete never reached the document); rewrite the document"
)
LOST = (
    "lost to retention: the MAE group's committed offset {0} is below the first offset the topic "
    "keeps ({2}): retention deleted offsets {0} to {1} before the group read them, and the change "
    "is older than every message kept, so its MCL would have been among them. Look at the "
    "consumer, not GMS's producer: it will never apply this change; replay or reindex it"
)
NOTHING_PENDING = "nothing pending for this urn and the projection still disagrees with the rows"
# what is left behind when no event for it is pending, said plainly
LEFT_OVER: dict[AnyKind, str] = {
    Kind.ORPHAN_DOCUMENT: "its rows are gone and no delete is pending: the document outlived the entity",
    Kind.STALE_SYSTEM_METADATA: "nothing pending: its system-metadata doc disagrees with the row",
    Kind.ORPHAN_EDGE: "nothing pending: the edge outlived the aspect that implied it",
}


def in_flight(
    finding: Finding, reason: str, observed: Observation | None = None, eta_seconds: float | None = None
) -> Classified:
    """A candidate the re-observation did not confirm (it converged, or kept changing)."""
    evidence = Evidence(reason, observed=observed, eta_seconds=eta_seconds)
    return Classified(finding, Verdict.IN_FLIGHT, Verdict.IN_FLIGHT.value, evidence)


def diverged(
    finding: Finding, reason: str, observed: Observation | None = None, *, kafka: bool = False
) -> Classified:
    """A finding whose own evidence is the verdict (a conflict between federated stores, what a
    repair's verification still sees): diverged, its subkind its kind. `kafka`: whether the
    change log was among the evidence."""
    evidence = Evidence(reason, observed=observed, kafka=kafka)
    return Classified(finding, Verdict.DIVERGED, finding.kind.value, evidence)


def decided(
    c: Classified, verdict: Verdict, evidence: Evidence, finding: Finding | None = None
) -> Classified:
    """A verdict a platform's own evidence decides over the first one (OpenMetadata's retry queue
    or its reindex job): the kernel names its subkind, `in_flight` for a delay and the finding's
    kind for a divergence. `finding`: the finding with what that evidence adds to its details."""
    f = finding or c.finding
    subkind = Verdict.IN_FLIGHT.value if verdict == Verdict.IN_FLIGHT else f.kind.value
    return Classified(f, verdict, subkind, evidence)


def explained(c: Classified, reason: str, finding: Finding | None = None) -> Classified:
    """The same verdict, its reason told with what a platform's evidence adds."""
    return Classified(finding or c.finding, c.verdict, c.subkind, replace(c.evidence, reason=reason))


RESTORABLE = (Kind.MISSING_DOCUMENT, Kind.STALE_FIELDS, Kind.SOFT_DELETE_MISMATCH)


def _restorable(c: Classified) -> bool:
    f = c.finding
    return (
        c.verdict == Verdict.DIVERGED and bool(f.index) and f.changed_at is not None and f.kind in RESTORABLE
    )


@dataclass(frozen=True)
class RestoredIndex:
    """An index found holding an older snapshot's state: since when, how many of the entities
    changed since are behind, and the reason each of its re-labelled findings gives."""

    instant: datetime
    behind: int
    changed: int
    reason: str


def restored_indices(
    classified: Iterable[Classified],
    changed_since: dict[str, tuple[datetime, int]],
    behind: dict[str, int] | None = None,
) -> dict[str, RestoredIndex]:
    """The indices whose stale diverged findings cover most of what changed since their earliest
    (`changed_since[index] = (instant, entities changed at or after it)`, computed by the caller
    for the earliest change among the index's stale findings: see `RestoreCounter`). One pass
    over the verdicts, each urn's together (a list, or the scan's spill), to count the entities
    behind since each instant; none when the caller counted them (`behind`: `RestoreCounter`,
    whose instants are the earliest, so every stale entity counts)."""
    if behind is None:
        behind = {}
        last: dict[str, str] = {}
        for c in classified:
            f = c.finding
            index = f.index or ""
            if index in changed_since and _restorable(c) and f.changed_at >= changed_since[index][0]:  # type: ignore[operator]
                if last.get(index) != f.urn:  # each urn's verdicts come together: counted once
                    last[index] = f.urn
                    behind[index] = behind.get(index, 0) + 1
    out: dict[str, RestoredIndex] = {}
    for index, (instant, total) in changed_since.items():
        n = behind.get(index, 0)
        if n < RESTORE_MIN_ENTITIES or n < RESTORE_MIN_SHARE * total:
            continue
        reason = (
            f"{index} holds the state of before {instant.isoformat(timespec='seconds')}: "
            f"{n} of the {total} entities changed since are behind (a restored snapshot?)"
        )
        out[index] = RestoredIndex(instant, n, total, reason)
    return out


def relabel_restored(
    classified: Iterable[Classified], restored: dict[str, RestoredIndex]
) -> Iterator[Classified]:
    """The verdicts, those of a restored index's stale entities re-labelled, as a stream."""
    for c in classified:
        f = c.finding
        found = restored.get(f.index or "")
        if found is not None and _restorable(c) and f.changed_at >= found.instant:  # type: ignore[operator]
            c = replace(
                c,
                subkind=Cause.INDEX_BEHIND_RESTORE.value,
                evidence=replace(c.evidence, reason=found.reason + "; " + c.evidence.reason),
            )
        yield c


def mark_restores(
    classified: Iterable[Classified], changed_since: dict[str, tuple[datetime, int]]
) -> Iterator[Classified]:
    """Re-label diverged findings of an index whose state is that of an older snapshot
    (`classified` is read twice: a list, or the scan's spill)."""
    return relabel_restored(classified, restored_indices(classified, changed_since))


class RestoreCounter:
    """Per index with stale diverged findings, the earliest change among them and how many
    entities they are, counted a verdict at a time as a scan judges them (each urn's together)."""

    def __init__(self) -> None:
        self.earliest: dict[str, datetime] = {}
        self.entities: dict[str, int] = {}
        self.last: dict[str, str] = {}

    def add(self, c: Classified) -> None:
        if not _restorable(c):
            return
        f = c.finding
        index, changed = f.index or "", f.changed_at
        assert changed is not None
        if self.last.get(index) != f.urn:
            self.last[index] = f.urn
            self.entities[index] = self.entities.get(index, 0) + 1
        if index not in self.earliest or changed < self.earliest[index]:
            self.earliest[index] = changed

    def counts(self) -> dict[str, tuple[datetime, int]]:
        return {i: (t, self.entities[i]) for i, t in self.earliest.items()}
