"""The verdict of a change the index did not show within an SLO (the watch's rule).

The change's event sits at an offset of the change log; the consumer's committed offset, sampled
at least the index's visibility delay before the read that still disagrees, decides: not past
it, the change is in flight (or stalled, when the group does not move); past it, it was consumed
but not applied (diverged). A platform brings the event and the consumer's position; the
verdict is this module's.
"""

from __future__ import annotations

from dataclasses import dataclass

from auditor.core.model import Classified, Evidence, Finding, PartitionHealth, Verdict


@dataclass(frozen=True)
class LateEvent:
    """A change's event on the change log, and how late its document is."""

    topic: str
    partition: int
    offset: int
    age: float  # seconds since the event was produced
    read: bool  # the document was read this round (False: behind older events)
    said: str  # what the read saw (or why it did not read)


@dataclass(frozen=True)
class GroupPosition:
    """The consumer group on the event's partition, at its last sample."""

    committed: int
    lag: int
    health: PartitionHealth
    stalled: bool  # the group does not move (Burrow's STALL / STOP)
    settled: bool  # sampled at least the visibility delay before the read


def judge_late(finding: Finding, event: LateEvent, group: GroupPosition | None) -> Classified:
    """One verdict for a late change; its subkind is the difference's kind (`unread` when the
    document was not read this round)."""
    kind = finding.kind.value
    late = f"not in the index {event.age:.1f}s after its MCL"
    if group is None:
        why = f"{late}; no sample of the MAE group"
        evidence = Evidence(
            why, event.partition, event.topic, kafka=False, mcl_found=True, mcl_offset=event.offset
        )
        return Classified(finding, Verdict.IN_FLIGHT, kind, evidence)
    health = group.health
    if group.committed <= event.offset or not group.settled:
        why = f"{late}; the MAE group is at offset {group.committed}, "
        why += "not moving" if group.stalled else "not past it yet"
        verdict = Verdict.STALLED if group.stalled else Verdict.IN_FLIGHT
        evidence = Evidence(why, event.partition, event.topic, health, lag=group.lag, mcl_found=True,
                            mcl_offset=event.offset)  # fmt: skip
        return Classified(finding, verdict, kind, evidence)
    if not event.read:  # nothing to call diverged
        evidence = Evidence(f"{late}; {event.said}", event.partition, event.topic, health, lag=group.lag,
                            mcl_found=True, mcl_offset=event.offset)  # fmt: skip
        return Classified(finding, Verdict.IN_FLIGHT, "unread", evidence)
    why = (
        f"the MAE group passed offset {event.offset} (committed {group.committed}) and the index still "
        f"does not show it {event.age:.1f}s after its MCL: consumed but not applied"
    )
    health = PartitionHealth.OK if group.lag == 0 else group.health
    evidence = Evidence(why, event.partition, event.topic, health, lag=group.lag, mcl_found=True,
                        mcl_offset=event.offset)  # fmt: skip
    return Classified(finding, Verdict.DIVERGED, kind, evidence)
