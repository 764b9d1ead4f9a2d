"""The broker's log of a group's commits (`__consumer_offsets`): Kafka's byte layout decoded."""

from __future__ import annotations

import struct

from auditor.backends.commit_log import (
    commits_partition,
    committed_offset,
    java_hash,
    offset_key,
    trailing_runs,
)
from auditor.core.records import CommitRun

TOPIC = "MetadataChangeLog_Versioned_v1"
GROUP = "generic-mae-consumer-job-client"


def _s(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


def key(group: str, topic: str, partition: int, version: int = 1) -> bytes:
    return struct.pack(">h", version) + _s(group) + _s(topic) + struct.pack(">i", partition)


def value(offset: int, version: int = 3) -> bytes:
    # v3: offset, leader epoch, metadata, commit timestamp (the offset comes first in every version)
    return struct.pack(">hqi", version, offset, 7) + _s("") + struct.pack(">q", 1_700_000_000_000)


def test_java_string_hash_and_the_groups_partition() -> None:
    # values of Java's "...".hashCode()
    assert java_hash("") == 0
    assert java_hash("a") == 97
    assert java_hash("hello") == 99162322
    assert java_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE: Utils.abs makes it 0
    assert commits_partition("polygenelubricants", 50) == 0
    assert java_hash("é") == 233  # UTF-16 code units, not UTF-8 bytes
    assert java_hash("😀") == 31 * 0xD83D + 0xDE00  # a surrogate pair: two code units
    h = java_hash(GROUP)
    assert commits_partition(GROUP, 50) == abs(h) % 50


def test_offset_commit_keys_and_values_are_read_and_other_records_ignored() -> None:
    assert offset_key(key(GROUP, TOPIC, 3)) == (GROUP, TOPIC, 3)
    assert offset_key(key(GROUP, TOPIC, 3, version=0)) == (GROUP, TOPIC, 3)
    assert offset_key(struct.pack(">h", 2) + _s(GROUP)) is None  # group metadata
    assert offset_key(b"\x00") is None and offset_key(None) is None
    assert offset_key(struct.pack(">h", 1) + b"\x00\x09ab") is None  # truncated
    assert committed_offset(value(21741)) == 21741
    assert committed_offset(value(5, version=1)) == 5
    assert committed_offset(None) is None  # a tombstone


def test_the_trailing_run_of_the_current_value_dates_it() -> None:
    wanted = {(TOPIC, 0), (TOPIC, 1), (TOPIC, 2)}
    records = [
        (key(GROUP, TOPIC, 0), value(10), 100.0),
        (key("another-group", TOPIC, 0), value(99), 101.0),
        (key(GROUP, TOPIC, 0), value(12), 102.0),
        (key(GROUP, TOPIC, 0), value(12), 104.0),  # re-committed unchanged: still since 102
        (key(GROUP, TOPIC, 1), value(7), 103.0),
        (key(GROUP, TOPIC, 1), None, 105.0),  # deleted
    ]
    runs = trailing_runs(records, GROUP, wanted, window_start=90.0)
    assert runs[(TOPIC, 0)] == CommitRun(12, 102.0, before=10, before_since=100.0)
    assert runs[(TOPIC, 1)] == CommitRun(-1, 105.0)
    assert runs[(TOPIC, 2)] == CommitRun(None, 90.0)  # no commit in the window: older than it
    # the first commit in the window replaced a value the window does not show
    assert trailing_runs(records[:1], GROUP, wanted, 90.0)[(TOPIC, 0)] == CommitRun(10, 100.0)
    # after a deletion there is no earlier value to have moved from
    again = [*records, (key(GROUP, TOPIC, 1), value(3), 106.0)]
    assert trailing_runs(again, GROUP, wanted, 90.0)[(TOPIC, 1)] == CommitRun(3, 106.0)


def test_the_value_held_at_an_instant_is_read_from_every_move_in_the_window() -> None:
    wanted = {(TOPIC, 0), (TOPIC, 1)}
    records = [
        (key(GROUP, TOPIC, 0), value(10), 100.0),
        (key(GROUP, TOPIC, 0), value(12), 102.0),
        (key(GROUP, TOPIC, 0), value(12), 103.0),  # unchanged: 12 since 102
        (key(GROUP, TOPIC, 0), value(15), 104.0),
        (key(GROUP, TOPIC, 1), value(7), 101.0),
        (key(GROUP, TOPIC, 1), None, 102.0),  # deleted: what came before says nothing now
        (key(GROUP, TOPIC, 1), value(9), 103.0),
    ]
    runs = trailing_runs(records, GROUP, wanted, window_start=90.0)
    run = runs[(TOPIC, 0)]
    assert run.moves == ((10, 100.0), (12, 102.0), (15, 104.0))
    assert [run.held_at(t) for t in (99.0, 100.0, 101.5, 103.9, 104.0, 200.0)] == [None, 10, 10, 12, 15, 15]
    assert runs[(TOPIC, 1)].moves == ((9, 103.0),) and runs[(TOPIC, 1)].held_at(102.5) is None
    assert CommitRun(None, 90.0).held_at(95.0) is None  # no commit in the window: the caller knows


class _Msg:
    def __init__(self, offset: int, key: bytes, value: bytes, at_ms: int) -> None:
        self._offset, self._key, self._value, self._at = offset, key, value, at_ms

    def error(self) -> None:
        return None

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes:
        return self._key

    def value(self) -> bytes:
        return self._value

    def timestamp(self) -> tuple[int, int]:
        return (1, self._at)


class _Consumer:
    """Serves `batches` in turn, then nothing (as a consume() that timed out)."""

    def __init__(self, batches: list[list[_Msg]], end: int) -> None:
        self.batches, self.end = batches, end

    def assign(self, partitions: object) -> None:
        pass

    def unassign(self) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[_Msg]:
        return self.batches.pop(0) if self.batches else []

    def get_watermark_offsets(self, tp: object, timeout: float) -> tuple[int, int]:
        return 0, self.end

    def offsets_for_times(self, tps: list, timeout: float) -> list:
        class Found:
            offset = 0

        return [Found()]


def _events(consumer: _Consumer):
    from auditor.platforms.datahub.backends.events import EventLog

    events = EventLog.__new__(EventLog)  # no broker: the reads are what is tested
    events.consumer, events.timeout, events.read_whole = consumer, 0.01, True
    events._partitions = {"__consumer_offsets": 1}
    return events


def test_a_read_cut_short_by_a_timeout_is_no_evidence_of_no_commit() -> None:
    import time as clock

    now = int(clock.time() * 1000)
    commit = _Msg(0, key(GROUP, TOPIC, 0), value(12), now - 500)
    # the log holds 2 records, the read gets 1 and then times out: the second could be a newer commit
    assert _events(_Consumer([[commit]], end=2)).commit_times(GROUP, {(TOPIC, 0)}, 30) is None
    # read to its end: the commit dates the offset
    runs = _events(_Consumer([[commit]], end=1)).commit_times(GROUP, {(TOPIC, 0)}, 30)
    assert runs is not None and runs[(TOPIC, 0)].offset == 12
