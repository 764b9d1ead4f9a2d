"""An event late past the SLO becomes a finding, with the scan's verdicts and the MAE group's say."""

from __future__ import annotations

from datetime import UTC, datetime

from auditor.core.lag_table import GroupStatus
from auditor.core.model import Classified, Evidence, Finding, Kind, PartitionHealth, Verdict
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
    """The verdict of an event the index did not show within the SLO.

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
    if sample is None:
        return Classified(
            finding,
            Verdict.IN_FLIGHT,
            kind.value,
            Evidence(
                f"not in the index {age:.1f}s after its MCL; no sample of the MAE group",
                event.partition,
                event.topic,
                kafka=False,
                mcl_found=True,
                mcl_offset=event.offset,
            ),
        )
    committed = sample.committed if sample.committed is not None else sample.start
    health = _HEALTH.get(status, PartitionHealth.UNKNOWN) if status is not None else PartitionHealth.UNKNOWN
    lag = max(0, sample.end - committed)
    if committed <= event.offset or read_at - sample.taken_at < visibility_seconds:
        stalled = status in (GroupStatus.STALL, GroupStatus.STOP)
        return Classified(
            finding,
            Verdict.STALLED if stalled else Verdict.IN_FLIGHT,
            kind.value,
            Evidence(
                f"not in the index {age:.1f}s after its MCL; the MAE group is at offset {committed}, "
                f"{'not moving' if stalled else 'not past it yet'}",
                event.partition,
                event.topic,
                health,
                lag=lag,
                mcl_found=True,
                mcl_offset=event.offset,
            ),
        )
    if seen.kind is None:  # not read this round (behind older events): nothing to call diverged
        return Classified(
            finding,
            Verdict.IN_FLIGHT,
            "unread",
            Evidence(
                f"not in the index {age:.1f}s after its MCL; {seen.detail}",
                event.partition,
                event.topic,
                health,
                lag=lag,
                mcl_found=True,
                mcl_offset=event.offset,
            ),
        )
    return Classified(
        finding,
        Verdict.DIVERGED,
        kind.value,
        Evidence(
            f"the MAE group passed offset {event.offset} (committed {committed}) and the index still "
            f"does not show it {age:.1f}s after its MCL: consumed but not applied",
            event.partition,
            event.topic,
            PartitionHealth.OK if lag == 0 else health,
            lag=lag,
            mcl_found=True,
            mcl_offset=event.offset,
        ),
    )
