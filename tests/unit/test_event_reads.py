"""Reading a partition's range a fetched batch at a time (`EventLog._batches`, `find`): exactly the
messages in [start, stop), in order; a partition's end, an error or a timeout inside a batch
handled where it sits."""

from __future__ import annotations

from typing import Any

import pytest

from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.backends.events import EventLog


class _Error:
    def __init__(self, code: int) -> None:
        self._code = code

    def code(self) -> int:
        return self._code

    def __str__(self) -> str:
        return f"broker error {self._code}"


class _Msg:
    def __init__(self, offset: int, key: bytes | None = b"k", error: _Error | None = None) -> None:
        self._offset, self._key, self._error = offset, key, error

    def error(self) -> _Error | None:
        return self._error

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes:
        return b"v%d" % self._offset

    def timestamp(self) -> tuple[int, int]:
        return (1, 1_700_000_000_000 + self._offset)


class _Consumer:
    """Serves `batches` in turn, then nothing (a consume() that timed out)."""

    def __init__(self, batches: list[list[_Msg]]) -> None:
        self.batches, self.assigned, self.asked = batches, None, []

    def assign(self, partitions: list[Any]) -> None:
        self.assigned = partitions[0].offset

    def unassign(self) -> None:
        self.assigned = None

    def consume(self, num_messages: int, timeout: float) -> list[_Msg]:
        self.asked.append(num_messages)
        if not self.batches:
            return []
        batch, rest = self.batches[0][:num_messages], self.batches[0][num_messages:]
        self.batches[0:1] = [rest] if rest else []
        return batch


class _Admin:
    def poll(self, timeout: float) -> None:
        pass


def _events(batches: list[list[_Msg]]) -> EventLog:
    events = EventLog.__new__(EventLog)  # no broker: the reads are what is tested
    events.consumer, events.timeout, events.read_whole = _Consumer(batches), 0.01, True
    events.admin, events.refused, events.bootstrap = _Admin(), None, "broker:9092"
    return events


def offsets(messages: Any) -> list[int]:
    return [m.offset() for m in messages]


def test_the_range_is_read_whole_and_what_lies_past_its_end_is_left() -> None:
    events = _events([[_Msg(o) for o in range(10, 15)], [_Msg(o) for o in range(15, 22)]])
    assert offsets(events._read("t", 0, 10, 18, 100)) == list(range(10, 18))
    assert events.read_whole and events.consumer.assigned is None  # unassigned after the read
    assert events.consumer.asked == [8, 3]  # never more than is left


def test_the_cap_bounds_the_read() -> None:
    events = _events([[_Msg(o) for o in range(0, 4)], [_Msg(o) for o in range(4, 8)]])
    assert offsets(events._read("t", 0, 0, 100, 6)) == list(range(6))
    assert events.consumer.asked == [6, 2]  # 4 and the 2 left


def test_a_partition_end_inside_a_batch_ends_the_read_after_what_came_before_it() -> None:
    batch = [_Msg(3), _Msg(4), _Msg(5, error=_Error(-191)), _Msg(6)]
    events = _events([batch])
    assert offsets(events._read("t", 0, 3, 10, 100)) == [3, 4]
    assert events.read_whole


def test_an_error_inside_a_batch_fails_the_read_after_what_came_before_it() -> None:
    events = _events([[_Msg(3), _Msg(4, error=_Error(-185)), _Msg(5)]])
    got: list[int] = []
    with pytest.raises(BackendUnavailable, match=r"reading t\[0\].*broker error -185"):
        for m in events._read("t", 0, 3, 10, 100):
            got.append(m.offset())
    assert got == [3] and events.consumer.assigned is None


def test_a_timeout_short_of_the_end_is_not_a_whole_read() -> None:
    events = _events([[_Msg(0), _Msg(1)]])
    assert offsets(events._read("t", 0, 0, 5, 100)) == [0, 1]
    assert not events.read_whole


def test_find_decodes_only_the_urn_s_messages_and_says_whether_it_read_the_range_whole() -> None:
    keys = [b"urn:a", b"urn:b", None, b"urn:a", b"urn:c"]
    events = _events([[_Msg(o, k) for o, k in enumerate(keys)]])
    decoded: list[tuple[Any, ...]] = []

    def hit(where: tuple[str, int, int], urn: str, at: Any, value: bytes) -> tuple[str, int] | None:
        decoded.append((where, urn, value))
        return (urn, where[2])

    events._hit = hit  # type: ignore[method-assign]
    hits, whole = events.find("t", 0, {"urn:a"}, 0, 5)
    assert hits == [("urn:a", 0), ("urn:a", 3)] and whole
    assert [d[2] for d in decoded] == [b"v0", b"v3"]
    events = _events([[_Msg(o, k) for o, k in enumerate(keys)]])
    events._hit = hit  # type: ignore[method-assign]
    _, whole = events.find("t", 0, {"urn:a"}, 0, 5, cap=3)  # stopped at the cap: not whole
    assert not whole


class _Gone(_Consumer):
    """The client raising, as confluent-kafka does when the broker went away mid-run."""

    def __init__(self, on: str) -> None:
        super().__init__([[_Msg(0), _Msg(1)]])
        self.on = on

    def assign(self, partitions: list[Any]) -> None:
        if self.on == "assign":
            raise RuntimeError('KafkaError{code=_STATE,str="Erroneous state"}')
        super().assign(partitions)

    def consume(self, num_messages: int, timeout: float) -> list[_Msg]:
        if self.on == "consume":
            raise RuntimeError('KafkaError{code=_FATAL,str="Fatal error"}')
        return super().consume(num_messages, timeout)

    def unassign(self) -> None:
        if self.on == "unassign":
            raise RuntimeError("KafkaError{code=_TRANSPORT}")
        super().unassign()


@pytest.mark.parametrize("on", ["assign", "consume"])
def test_the_client_raising_mid_read_is_an_outage_said_as_one(on: str) -> None:
    events = _events([])
    events.consumer = _Gone(on)
    with pytest.raises(BackendUnavailable, match=r"Kafka broker:9092: reading t\[0\] failed: KafkaError"):
        list(events._read("t", 0, 0, 2, 100))


def test_an_unassign_that_fails_after_a_whole_read_loses_nothing() -> None:
    events = _events([])
    events.consumer = _Gone("unassign")
    assert offsets(events._read("t", 0, 0, 2, 100)) == [0, 1]
