"""Classification: a finding plus the consumer's position and history -> exactly one verdict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from auditor.core.model import (
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


@dataclass(frozen=True)
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

    def out(verdict: Verdict, reason: str, subkind: str | None = None, **ev: Any) -> Classified:
        where: dict[str, Any] = {}
        if position is not None:
            where = {
                "topic": position.topic,
                "partition": position.partition,
                "partition_health": position.health,
                "position_time": position.position_time,
                "lag": position.lag,
                "rate": position.rate,
            }
        evidence = Evidence(
            reason=reason,
            seen_before=history.times_seen if history else 0,
            first_seen=history.first_seen if history else None,
            kafka=position is not None,
            observed=observed,
            **where,
            **ev,
        )
        return Classified(
            finding,
            verdict,
            subkind or (finding.kind.value if verdict == Verdict.DIVERGED else verdict.value),
            evidence,
        )

    if finding.kind == Kind.MALFORMED_ASPECT:
        return out(Verdict.INVALID, "the stored aspect cannot be read", Kind.MALFORMED_ASPECT.value)

    age = _age(now, finding.changed_at)
    persisted = history is not None and (now - history.first_seen).total_seconds() >= grace

    if position is None or kafka is None:
        # no Kafka evidence: time and history only
        if age is not None and age < grace and not persisted:
            return out(Verdict.IN_FLIGHT, f"changed {age:.0f}s ago, within the {grace:.0f}s grace")
        if age is None and not persisted:
            return out(
                Verdict.IN_FLIGHT,
                "no change time and no Kafka evidence: unconfirmed until a later scan past the grace",
            )
        why = (
            f"still wrong {((now - history.first_seen).total_seconds()):.0f}s after it was first seen"
            if persisted and history
            else f"changed {age:.0f}s ago, longer than the {grace:.0f}s grace"
        )
        return out(Verdict.DIVERGED, why + " (no Kafka evidence)")

    if kafka.pending is not None:
        hit = kafka.pending
        ahead = hit.offset - (position.committed if position.committed is not None else position.start)
        if not _progressing(position):
            return out(
                Verdict.STALLED,
                f"its MCL waits at offset {hit.offset}, but the consumer is {position.health.value}",
                mcl_found=True,
                mcl_offset=hit.offset,
            )
        eta = (ahead + 1) / position.rate if position.rate else None
        return out(
            Verdict.IN_FLIGHT,
            f"its MCL waits at offset {hit.offset}, {ahead} behind the consumer's position",
            mcl_found=True,
            mcl_offset=hit.offset,
            eta_seconds=eta,
        )

    if not kafka.pending_complete:
        # the backlog was too long to read: fall back on the position's time
        if (
            finding.changed_at is not None
            and position.position_time is not None
            and finding.changed_at.timestamp() >= position.position_time.timestamp() - CLOCK_SKEW_SECONDS
        ):
            if not _progressing(position):
                return out(Verdict.STALLED, f"the consumer is {position.health.value} before the change")
            return out(
                Verdict.IN_FLIGHT,
                "the consumer has not reached the change's time yet",
                eta_seconds=position.eta_seconds,
            )
        return out(Verdict.DIVERGED, "the consumer is past the change's time and the projection is wrong")

    # nothing pending for this urn: the consumer will not touch it again
    if age is not None and age < settle:
        return out(Verdict.IN_FLIGHT, f"written {age:.1f}s ago: its MCL may not be produced yet")
    if finding.kind in CHANGE_KINDS and finding.changed_at is not None:
        if kafka.consumed is not None:
            return out(
                Verdict.DIVERGED,
                f"its MCL (offset {kafka.consumed.offset}) was consumed but not applied",
                mcl_found=True,
                mcl_offset=kafka.consumed.offset,
            )
        if kafka.history_complete and kafka.within_retention:
            return out(
                Verdict.DIVERGED,
                "no MCL for this change exists on the topic: it was never published",
                Cause.EVENT_NEVER_PUBLISHED.value,
                mcl_found=False,
            )
        return out(Verdict.DIVERGED, "nothing pending for this urn and the projection is wrong")
    return out(Verdict.DIVERGED, "nothing pending for this urn and the projection is wrong")


def in_flight(
    finding: Finding, reason: str, observed: Observation | None = None, eta_seconds: float | None = None
) -> Classified:
    """A candidate the re-observation did not confirm (it converged, or kept changing)."""
    evidence = Evidence(reason, observed=observed, eta_seconds=eta_seconds)
    return Classified(finding, Verdict.IN_FLIGHT, Verdict.IN_FLIGHT.value, evidence)


def mark_restores(
    classified: Sequence[Classified], changed_since: dict[str, tuple[datetime, int]]
) -> list[Classified]:
    """Re-label diverged findings of an index whose state is that of an older snapshot.

    `changed_since[index] = (instant, entities changed at or after it)`, computed by the caller
    for the earliest change among the index's stale findings (see `restore_candidates`).
    """
    out = list(classified)
    for index, (instant, total) in changed_since.items():
        members = [
            i
            for i, c in enumerate(out)
            if c.verdict == Verdict.DIVERGED
            and c.finding.index == index
            and c.finding.kind in (Kind.MISSING_DOCUMENT, Kind.STALE_FIELDS, Kind.SOFT_DELETE_MISMATCH)
            and c.finding.changed_at is not None
            and c.finding.changed_at >= instant
        ]
        urns = {out[i].finding.urn for i in members}
        if len(urns) < RESTORE_MIN_ENTITIES or len(urns) < RESTORE_MIN_SHARE * total:
            continue
        reason = (
            f"{index} holds the state of before {instant.isoformat(timespec='seconds')}: "
            f"{len(urns)} of the {total} entities changed since are behind (a restored snapshot?)"
        )
        for i in members:
            c = out[i]
            out[i] = replace(
                c,
                subkind=Cause.INDEX_BEHIND_RESTORE.value,
                evidence=replace(c.evidence, reason=reason + "; " + c.evidence.reason),
            )
    return out


def restore_candidates(classified: Sequence[Classified]) -> dict[str, datetime]:
    """Per index with enough stale diverged findings, the earliest change among them."""
    earliest: dict[str, datetime] = {}
    counts: dict[str, set[str]] = {}
    for c in classified:
        f = c.finding
        if (
            c.verdict == Verdict.DIVERGED
            and f.index
            and f.changed_at is not None
            and f.kind in (Kind.MISSING_DOCUMENT, Kind.STALE_FIELDS, Kind.SOFT_DELETE_MISMATCH)
        ):
            counts.setdefault(f.index, set()).add(f.urn)
            if f.index not in earliest or f.changed_at < earliest[f.index]:
                earliest[f.index] = f.changed_at
    return {i: t for i, t in earliest.items() if len(counts[i]) >= RESTORE_MIN_ENTITIES}
