"""An event late past the SLO becomes a finding, with the scan's verdicts and the MAE group's say."""

from __future__ import annotations

from datetime import UTC, datetime

from auditor.core.lag_table import GroupStatus
from auditor.core.late import GroupPosition, LateEvent, judge_late
from auditor.core.model import Classified, Finding, Kind, PartitionHealth
from auditor.core.records import OffsetSample
from auditor.platforms.datahub.naming import PLATFORM, entity_index, system_metadata_index
from auditor.platforms.datahub.watch.reflect import Reflection, WatchedEvent

CHECK_ID = "watch.propagation"

_HEALTH = {
    GroupStatus.OK: PartitionHealth.LAGGING,
    GroupStatus.WARN: PartitionHealth.LAGGING,
    GroupStatus.STALL: PartitionHealth.STALLED,
    GroupStatus.STOP: PartitionHealth.STOPPED,
    GroupStatus.REWIND: PartitionHealth.REWOUND,
}


def late_finding(
    event: WatchedEvent,
    seen: Reflection,
    age: float,
    read_at: float,
    sample: OffsetSample | None,
    status: GroupStatus | None,
    visibility_seconds: float,
    prefix: str = "",
) -> Classified:
    """The verdict of an event the index did not show within the SLO: DataHub's evidence (the
    finding, the MAE group's sample and Burrow's status), the kernel's rule (`core/late.py`).

    The MAE group has not passed its offset: `in_flight` (the group moves) or `stalled` (Burrow's
    STALL/STOP). The group had passed it at a sample taken at least the visibility delay before
    the read that still disagrees: `diverged` (consumed but not applied), subkind the kind of
    the difference. No sample of the group: `in_flight`, said to rest on time only.
    """
    kind = seen.kind or Kind.STALE_FIELDS
    index = (
        system_metadata_index(prefix)
        if kind == Kind.STALE_SYSTEM_METADATA
        else entity_index(event.entity_type, prefix)
    )
    finding = Finding(
        CHECK_ID,
        kind,
        event.urn,
        event.entity_type,
        index=index,
        aspect=event.aspect,
        changed_at=datetime.fromtimestamp(event.produced_at, tz=UTC),
        details={
            "platform": PLATFORM,
            "topic": event.topic,
            "partition": event.partition,
            "offset": event.offset,
            "change_type": event.change,
            "late_seconds": round(age, 3),
            "seen": seen.detail,
        },
    )
    read = seen.kind is not None  # not read this round (behind older events): nothing to call diverged
    late = LateEvent(event.topic, event.partition, event.offset, age, read, seen.detail)
    if sample is None:
        return judge_late(finding, late, None)
    committed = sample.committed if sample.committed is not None else sample.start
    health = _HEALTH.get(status, PartitionHealth.UNKNOWN) if status is not None else PartitionHealth.UNKNOWN
    stalled = status in (GroupStatus.STALL, GroupStatus.STOP)
    settled = read_at - sample.taken_at >= visibility_seconds
    group = GroupPosition(committed, max(0, sample.end - committed), health, stalled, settled)
    return judge_late(finding, late, group)
