"""Consumer health: a change-log partition's status over a sampling window (after Burrow)."""

from __future__ import annotations

from datetime import datetime

from auditor.core.model import PartitionHealth, PartitionPosition
from auditor.core.records import OffsetSample


def partition_health(
    first: OffsetSample, last: OffsetSample, previous: OffsetSample | None = None
) -> tuple[PartitionHealth, float | None]:
    """Burrow's rules over the window [first, last], widened by an earlier scan's sample."""
    lag = last.end - (last.committed if last.committed is not None else last.start)
    if last.committed is None:
        if lag <= 0:
            return PartitionHealth.OK, None
        return (PartitionHealth.STOPPED if last.members == 0 else PartitionHealth.UNKNOWN), None
    base = first
    if first.committed is None:
        base = last
    elapsed = max(last.taken_at - base.taken_at, 1e-3)
    moved = last.committed - (base.committed if base.committed is not None else last.committed)
    if moved < 0:
        return PartitionHealth.REWOUND, None
    rate = moved / elapsed if moved > 0 else None
    if lag <= 0:
        return PartitionHealth.OK, rate
    if moved > 0:
        return PartitionHealth.LAGGING, rate
    # not moving with lag: an earlier scan that saw it move keeps us honest about short windows
    if previous is not None and previous.committed is not None and previous.committed < last.committed:
        span = max(last.taken_at - previous.taken_at, 1e-3)
        return PartitionHealth.LAGGING, (last.committed - previous.committed) / span
    if last.members == 0:
        return PartitionHealth.STOPPED, None
    return PartitionHealth.STALLED, None


def owner_rates(first: dict[tuple[str, int], OffsetSample], last: list[OffsetSample]) -> dict[str, float]:
    """Offsets per second each group member consumed over the window, all its partitions together."""
    moved: dict[str, float] = {}
    for s in last:
        f = first.get((s.topic, s.partition))
        if f is None or f.committed is None or s.committed is None or not s.members:
            continue
        span = max(s.taken_at - f.taken_at, 1e-3)
        key = owner_of(s)
        moved[key] = moved.get(key, 0.0) + max(0, s.committed - f.committed) / span
    return moved


def owner_of(sample: OffsetSample) -> str:
    """The member that owns a partition; the whole group when the broker does not say."""
    return sample.owner or "(group)"


def position(
    first: OffsetSample,
    last: OffsetSample,
    previous: OffsetSample | None,
    position_time: datetime | None,
    owner_rate: float | None = None,
) -> PartitionPosition:
    """A partition's position; a quiet partition whose owner is busy elsewhere is not stalled.

    `owner_rate`: this partition's share of its owner's consumption rate over the window.
    """
    health, rate = partition_health(first, last, previous)
    if health == PartitionHealth.STALLED and owner_rate:
        # the member works through its other partitions first (one poll loop, many partitions)
        health, rate = PartitionHealth.LAGGING, owner_rate
    return PartitionPosition(
        topic=last.topic,
        partition=last.partition,
        committed=last.committed,
        end=last.end,
        start=last.start,
        position_time=position_time,
        health=health,
        rate=rate,
        members=last.members,
        first_committed=first.committed,
        window_seconds=last.taken_at - first.taken_at,
        first_end=first.end,
    )
