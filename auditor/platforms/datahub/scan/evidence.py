"""Kafka evidence for findings: partition positions, pending MCLs and the changes' own MCLs."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from auditor.backends.protocols import Events
from auditor.core.classify import CHANGE_KINDS, CLOCK_SKEW_SECONDS, KafkaEvidence
from auditor.core.consumer import owner_of, owner_rates, position
from auditor.core.model import Finding, Kind, PartitionHealth, PartitionPosition
from auditor.core.records import MclHit, OffsetSample, json_loads
from auditor.platforms.datahub.urns import urn_partition

# how many messages one partition's look-up reads at most before falling back on times
READ_CAP = 200_000


@dataclass
class ConsumerView:
    """The MAE group's positions on every change-log partition, over the sampling window."""

    group: str
    first: list[OffsetSample]
    last: list[OffsetSample] = field(default_factory=list)
    positions: dict[tuple[str, int], PartitionPosition] = field(default_factory=dict)

    def of(self, topic: str, partition: int) -> PartitionPosition | None:
        return self.positions.get((topic, partition))


def partition_of(events: Events) -> Callable[[str, int], int]:
    """How the transport routes a urn to a partition (Kafka's murmur2, pgQueue's CRC32)."""
    return getattr(events, "partition_of", urn_partition)


def start_window(events: Events, topics: Sequence[str], group: str) -> ConsumerView:
    return ConsumerView(group, events.sample(topics, group))


# how often a window that has not seen a lagging partition move is sampled again
RESAMPLE_SECONDS = 0.25


def _unmoved(first: list[OffsetSample], last: list[OffsetSample], watch: set[tuple[str, int]] | None) -> bool:
    """A watched partition with lag, members and no committed progress since the window opened."""
    before = {(s.topic, s.partition): s.committed for s in first}
    return any(
        (watch is None or (s.topic, s.partition) in watch)
        and s.members
        and s.committed is not None
        and s.end > s.committed
        and before.get((s.topic, s.partition)) == s.committed
        for s in last
    )


def close_window(
    events: Events,
    view: ConsumerView,
    topics: Sequence[str],
    min_window: float,
    previous: dict[tuple[str, int], OffsetSample],
    max_window: float | None = None,
    watch: set[tuple[str, int]] | None = None,
) -> ConsumerView:
    """Second sample, at least `min_window` seconds after the first; then the positions.

    With `max_window`, a window in which a lagging partition has not moved yet is sampled
    again (every RESAMPLE_SECONDS) up to `max_window`: a consumer that commits once a
    second is told from a stalled one without making every short window long. `watch`: the
    partitions that matter (None: all).
    """
    if view.first:
        wait = min_window - (time.time() - view.first[0].taken_at)
        if wait > 0:
            time.sleep(wait)
    view.last = events.sample(topics, view.group)
    if view.first and max_window is not None:
        while _unmoved(view.first, view.last, watch) and time.time() - view.first[0].taken_at < max_window:
            time.sleep(RESAMPLE_SECONDS)
            view.last = events.sample(topics, view.group)
    first = {(s.topic, s.partition): s for s in view.first}
    rates = owner_rates(first, view.last)
    lagging: dict[str, int] = {}
    for s in view.last:
        if s.members and s.end > (s.committed if s.committed is not None else s.start):
            lagging[owner_of(s)] = lagging.get(owner_of(s), 0) + 1
    for s in view.last:
        key = (s.topic, s.partition)
        at = None
        if s.committed is not None and s.committed < s.end:
            at = events.message_time(s.topic, s.partition, s.committed)
        owner = owner_of(s)
        owner_rate = rates.get(owner, 0.0) / lagging[owner] if owner in lagging else None
        view.positions[key] = position(first.get(key, s), s, previous.get(key), at, owner_rate)
    _moved_before_window(events, view, first)
    return view


# how far back the broker's log of the group's commits is read for a partition that did not
# move in the window: a consumer that commits every few seconds (Kafka's auto-commit: 5 s)
# while it works through a backlog is lagging, not stalled
STALL_LOOKBACK_SECONDS = 15.0


def _moved_before_window(
    events: Events, view: ConsumerView, first: dict[tuple[str, int], OffsetSample]
) -> None:
    """A partition that looks stalled, re-judged on the group's recent commits (after Burrow,
    which judges on a window of commits, not of samples): if the broker logged it moving to the
    offset it holds while a backlog waited (the message at that offset is older than the move),
    and that last move is no older than twice the step between its last two moves (the group's
    cadence), it is lagging; that commit is the earlier sample the window lacked (the rate is
    its step over the time since). A consumer that had caught up at its last move and has not
    taken what arrived since, one that moved often and then stopped, or one whose moves the log
    does not show, stays stalled."""
    stuck = {k for k, p in view.positions.items() if p.health == PartitionHealth.STALLED}
    if not stuck:
        return
    runs = events.commit_times(view.group, stuck, STALL_LOOKBACK_SECONDS) or {}
    last = {(s.topic, s.partition): s for s in view.last}
    for key in stuck:
        run, s = runs.get(key), last[key]
        if (
            run is not None
            and run.offset is not None
            and s.committed is not None
            and run.offset > s.committed
        ):
            # it committed past the sample between the sample and this read of its log: moving
            later = replace(s, committed=run.offset, taken_at=max(run.since, s.taken_at + 1.0))
            view.positions[key] = position(first.get(key, s), later, s, view.positions[key].position_time)
            continue
        if run is None or run.before is None or run.before_since is None or run.offset != s.committed:
            continue
        waiting_since = view.positions[key].position_time
        if waiting_since is None or waiting_since.timestamp() >= run.since:
            continue  # caught up at its last move: what arrived since is not being taken
        if s.taken_at - run.since > 2 * (run.since - run.before_since):
            continue  # quiet for longer than its cadence explains
        earlier = replace(s, committed=run.before, taken_at=run.since)
        view.positions[key] = position(first.get(key, s), s, earlier, waiting_since)


def same_value(hit: MclHit, metadata: str | None) -> bool:
    """The MCL carries the row's value (compared as JSON)."""
    if hit.value is None or metadata is None:
        return False
    try:
        return bool(json_loads(hit.value) == json_loads(metadata))
    except ValueError:
        return False


# how far before the row's createdon an MCL's `created.time` may be and still be the same write's
# (one AuditStamp gives both; the database keeps microseconds, the MCL milliseconds)
OWN_STAMP_SECONDS = 1.0


def gather(
    events: Events,
    view: ConsumerView,
    topic: str,
    findings: Sequence[Finding],
    metadata: dict[tuple[str, str], str],
    partitions: int,
) -> dict[str, KafkaEvidence]:
    """Per finding key: is its MCL pending, was it consumed, or was it never published?

    `metadata[(urn, aspect)]` is the version-0 JSON, to recognise the change's own MCL.
    """
    if partitions == 0:
        return {}
    by_partition: dict[int, list[Finding]] = defaultdict(list)
    for f in findings:
        if f.kind != Kind.MALFORMED_ASPECT:
            by_partition[partition_of(events)(f.urn, partitions)].append(f)
    out: dict[str, KafkaEvidence] = {}
    for p, group in by_partition.items():
        pos = view.of(topic, p)
        if pos is not None:
            out.update(_partition_evidence(events, topic, pos, group, metadata))
    return out


def _by_urn(hits: Sequence[MclHit]) -> dict[str, list[MclHit]]:
    out: dict[str, list[MclHit]] = defaultdict(list)
    for hit in hits:
        out[hit.urn].append(hit)
    return out


def _partition_evidence(
    events: Events,
    topic: str,
    pos: PartitionPosition,
    group: list[Finding],
    metadata: dict[tuple[str, str], str],
) -> dict[str, KafkaEvidence]:
    """The evidence of one partition's findings: one read of its pending range, one of its history."""
    # pending = at or past the committed offset of this sample: the documents were read
    # after it (see reobserve.py), so everything below it had been applied by then
    committed = pos.committed if pos.committed is not None else pos.start
    hits, pending_complete = events.find(
        topic, pos.partition, {f.urn for f in group}, committed, pos.end, READ_CAP
    )
    pending = _by_urn(hits)
    changes = [f for f in group if f.kind in CHANGE_KINDS and f.changed_at is not None]
    consumed: dict[str, list[MclHit]] = {}
    history_complete = False
    oldest: datetime | None = None
    if changes:
        since = min(f.changed_at for f in changes if f.changed_at) - timedelta(seconds=CLOCK_SKEW_SECONDS)
        begin = events.offset_for_time(topic, pos.partition, since)
        begin = committed if begin is None else min(begin, committed)
        urns = {f.urn for f in changes}
        found, history_complete = events.find(topic, pos.partition, urns, begin, committed, READ_CAP)
        consumed = _by_urn(found)
        oldest = events.message_time(topic, pos.partition, pos.start) if pos.start < pos.end else None
    out: dict[str, KafkaEvidence] = {}
    lost = pos.lost_to_retention
    for f in group:
        waiting = [h for h in pending.get(f.urn, []) if f.aspect is None or h.aspect in (None, f.aspect)]
        within = oldest is None or f.changed_at is None or f.changed_at >= oldest
        out[f.key] = KafkaEvidence(
            pending=waiting[0] if waiting else None,
            pending_complete=pending_complete,
            consumed=_own_mcl(f, consumed.get(f.urn, []), metadata),
            history_complete=history_complete,
            within_retention=within or pos.start == 0,
            lost=lost if lost is not None and _before_kept(f, oldest) else None,
        )
    return out


def _before_kept(f: Finding, oldest: datetime | None) -> bool:
    """The change is older than the first message the partition keeps (or it keeps none): its MCL
    would be among the offsets retention deleted. A change after it would be in the log kept."""
    if f.kind not in CHANGE_KINDS or f.changed_at is None:
        return False
    skew = timedelta(seconds=CLOCK_SKEW_SECONDS)
    return oldest is None or f.changed_at.timestamp() < (oldest + skew).timestamp()


def _own_mcl(f: Finding, hits: list[MclHit], metadata: dict[tuple[str, str], str]) -> MclHit | None:
    """The change's own MCL among the consumed ones: the same value, stamped at the change or later
    (GMS stamps the row's createdon and the MCL's `created.time` from one AuditStamp; a RESTATE is
    stamped when it is made), or, undecoded, one published as new. The history is read from a
    minute before the change (clock skew): an earlier write of the same value in that minute
    published its own MCL, stamped before the change, which is not this change's (the change's
    may never have been published)."""
    if f.kind not in CHANGE_KINDS or f.changed_at is None:
        return None
    own = None
    for hit in hits:
        if f.aspect is not None and hit.aspect not in (None, f.aspect):
            continue
        if hit.value is not None and f.aspect is not None:
            # stamped before the change: an earlier write's (a later one, a RESTATE say, carries it too)
            stamped = (
                hit.created is None or hit.created.timestamp() >= f.changed_at.timestamp() - OWN_STAMP_SECONDS
            )
            if stamped and same_value(hit, metadata.get((f.urn, f.aspect))):
                own = hit
        elif hit.timestamp.timestamp() >= f.changed_at.timestamp() - 1.0:
            own = hit
    return own
