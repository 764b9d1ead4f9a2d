"""The MCL of each aspect's latest change, found from the change time on the urn's partition.

Offsets-for-times gives the first offset at the earliest change (less the clock skew); from
there to the log end the partition is read once, keyed by urn (only the urn's messages are
decoded), at most READ_CAP messages, the newest ones first kept when the range is longer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from auditor.backends.protocols import Events
from auditor.core.classify import CLOCK_SKEW_SECONDS
from auditor.core.records import EntityRows, MclHit
from auditor.platforms.datahub.scan.evidence import same_value

READ_CAP = 50_000


@dataclass
class Published:
    """What the topic holds for one entity's latest changes."""

    topic: str
    partition: int
    read_from: int  # first offset read
    read_to: int  # log end at the read
    complete: bool  # every message since the earliest change was read
    decoded: bool  # the values could be decoded (schema registry reachable)
    own: dict[str, MclHit] = field(default_factory=dict)  # aspect -> the MCL of its latest change
    missing: list[str] = field(default_factory=list)  # aspects whose change has no MCL in the window
    older: list[str] = field(default_factory=list)  # aspects changed before the window (not looked for)
    hits: int = 0  # MCLs of the urn in the window


def look_up(
    events: Events,
    topic: str,
    partition: int,
    low: int,
    end: int,
    rows: EntityRows,
    aspects: list[str],
    cap: int = READ_CAP,
) -> Published:
    """The MCL of each of `aspects`' version-0 change among the urn's MCLs since the earliest change."""
    changes = {a: rows.rows[a].createdon for a in aspects if a in rows.rows}
    earliest = min(changes.values()) - timedelta(seconds=CLOCK_SKEW_SECONDS) if changes else None
    start = events.offset_for_time(topic, partition, earliest) if earliest is not None else None
    start = end if start is None else max(start, low)
    complete = end - start <= cap
    if not complete:
        start = end - cap
    hits, whole = events.find(topic, partition, {rows.urn}, start, end, cap)
    decoded = any(h.aspect is not None for h in hits) or not hits
    out = Published(topic, partition, start, end, complete and whole, decoded, hits=len(hits))
    times: dict[int, datetime | None] = {}

    def time_at(offset: int) -> datetime | None:
        """A message's timestamp, read only when an aspect's MCL is missing (one fetch each)."""
        if offset not in times:
            times[offset] = events.message_time(topic, partition, offset) if offset < end else None
        return times[offset]

    for aspect, changed in sorted(changes.items()):
        metadata = rows.rows[aspect].metadata
        own = None
        for hit in hits:
            if hit.aspect is None:  # undecoded: the newest MCL of the urn since the change
                if hit.timestamp >= changed - timedelta(seconds=1):
                    own = hit
            elif hit.aspect == aspect and same_value(hit, metadata):
                own = hit
        if own is not None:
            out.own[aspect] = own
            continue
        window = time_at(start) if not out.complete else None
        # messages older than the earliest change are kept: the change is within retention
        oldest = time_at(low) if start <= low else None
        if (window is not None and changed < window) or (oldest is not None and changed < oldest):
            out.older.append(aspect)
        else:
            out.missing.append(aspect)
    return out
