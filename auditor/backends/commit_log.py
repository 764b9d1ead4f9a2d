"""The broker's own record of a group's commits: `__consumer_offsets`, read (never written).

Every offset commit is a record of that compacted topic, on the partition
`abs(java_hash(group)) % partitions`, keyed by (group, topic, partition), its value starting
with the committed offset, its timestamp the commit's time (both coordinators, Kafka 2 to 4).
So the broker can say since when a group's committed offset has had the value an offset
sample shows: the first record of the trailing run of that value. A re-observation uses it as
an earlier sample of the same offsets (`auditor.platforms.datahub.scan.reobserve`): a group that committed its
offset long ago consumed nothing since, and every write below it is visible already, so no
visibility wait is needed — on the first scan or triage too, without a state file.

Pure decoding here; the read itself is `EventLog.commit_times`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from auditor.core.records import CommitRun

COMMITS_TOPIC = "__consumer_offsets"


def java_hash(text: str) -> int:
    """Java's `String.hashCode` (signed 32-bit, over UTF-16 code units)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def commits_partition(group: str, partitions: int) -> int:
    """The `__consumer_offsets` partition of a group (Kafka's `Utils.abs(hash) % n`)."""
    h = java_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def _string(buf: bytes, at: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">h", buf, at)
    at += 2
    return buf[at : at + n].decode("utf-8"), at + n


def offset_key(key: bytes | None) -> tuple[str, str, int] | None:
    """(group, topic, partition) of an offset-commit key; None for any other record."""
    if not key or len(key) < 2:
        return None
    try:
        (version,) = struct.unpack_from(">h", key, 0)
        if version not in (0, 1):  # 2: group metadata; 3 and up: the new coordinator's records
            return None
        group, at = _string(key, 2)
        topic, at = _string(key, at)
        (partition,) = struct.unpack_from(">i", key, at)
    except (struct.error, UnicodeDecodeError):
        return None
    return group, topic, partition


def committed_offset(value: bytes | None) -> int | None:
    """The offset of an offset-commit value (version, then offset, in every version); None for a
    tombstone (the offset expired or was deleted)."""
    if not value or len(value) < 10:
        return None
    return struct.unpack_from(">q", value, 2)[0]


def trailing_runs(
    records: Iterable[tuple[bytes | None, bytes | None, float]],
    group: str,
    wanted: set[tuple[str, int]],
    window_start: float,
) -> dict[tuple[str, int], CommitRun]:
    """Per wanted (topic, partition): the last committed value in `records` (key, value, time,
    in log order), the time of the first record of its trailing run, and the value before it
    with the time of its own first record (and every value since the last deletion, `moves`)."""
    runs: dict[tuple[str, int], CommitRun] = {}
    for key, value, at in records:
        parsed = offset_key(key)
        if parsed is None or parsed[0] != group or (parsed[1], parsed[2]) not in wanted:
            continue
        where = (parsed[1], parsed[2])
        offset = committed_offset(value)
        run = runs.get(where)
        if offset is None:  # a tombstone: nothing is known to have held since
            runs[where] = CommitRun(-1, at)
        elif run is None or run.offset != offset:
            if run is not None and run.offset is not None and run.offset >= 0:
                moves = (*run.moves, (offset, at))
                runs[where] = CommitRun(offset, at, run.offset, run.since, moves)
            else:
                runs[where] = CommitRun(offset, at, moves=((offset, at),))
    return {w: runs.get(w, CommitRun(None, window_start)) for w in wanted}
