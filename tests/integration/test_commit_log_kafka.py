"""The broker's log of a group's commits, read from a real Kafka: a commit is found with its
value and time, a re-commit of the same value keeps the time it was first committed, and a
group that committed nothing recently is dated before the window."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from auditor.platforms.datahub.backends.events import EventLog


def _topic(kafka: str, name: str, messages: int) -> tuple[str, str, AdminClient]:
    """A fresh topic of two partitions holding `messages`, a fresh group id, the admin client."""
    topic = f"t{uuid.uuid4().hex[:10]}_{name}"
    group = f"t{uuid.uuid4().hex[:10]}_group"
    admin = AdminClient({"bootstrap.servers": kafka})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": kafka})
    for i in range(messages):
        producer.produce(topic, key=f"k{i}", value=b"v", partition=i % 2)
    producer.flush(10)
    return topic, group, admin


@pytest.mark.integration
def test_commit_times_date_the_groups_committed_offsets(kafka: str) -> None:
    topic, group, admin = _topic(kafka, "commits", 6)
    committer = Consumer({"bootstrap.servers": kafka, "group.id": group, "enable.auto.commit": False})
    events = EventLog({"bootstrap.servers": kafka})
    try:
        before = time.time()
        committer.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
        first = time.time()
        wanted = {(topic, 0), (topic, 1)}
        runs = events.commit_times(group, wanted, lookback=30)
        assert runs is not None
        assert runs[(topic, 0)].offset == 2
        assert before - 1 <= runs[(topic, 0)].since <= first + 1
        # partition 1 was never committed: nothing in the window, dated before it
        assert runs[(topic, 1)].offset is None and runs[(topic, 1)].since <= time.time() - 29
        time.sleep(1.2)
        committer.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)  # unchanged
        committer.commit(offsets=[TopicPartition(topic, 1, 3)], asynchronous=False)
        runs = events.commit_times(group, wanted, lookback=30)
        assert runs is not None
        assert runs[(topic, 0)].offset == 2 and runs[(topic, 0)].since <= first + 1  # the first commit
        assert runs[(topic, 1)].offset == 3 and runs[(topic, 1)].since >= first
        committer.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)  # moved on
        runs = events.commit_times(group, wanted, lookback=30)
        assert runs is not None and runs[(topic, 0)].offset == 3 and runs[(topic, 0)].since > first
        assert runs[(topic, 0)].before == 2  # the value it moved from, first committed then:
        assert runs[(topic, 0)].before_since is not None and runs[(topic, 0)].before_since <= first + 1
        assert runs[(topic, 1)].before is None  # its first commit: moved from nothing the log shows
        # the offsets a sample reads are the ones the log ends with
        sampled = {(s.topic, s.partition): s.committed for s in events.sample([topic], group)}
        assert sampled == {(topic, 0): 3, (topic, 1): 3}
    finally:
        committer.close()
        events.close()
        admin.delete_topics([topic])


@pytest.mark.integration
def test_reading_a_groups_offsets_never_joins_it_nor_moves_its_member(kafka: str) -> None:
    """The sample reads the group's offsets through a consumer of the group (the admin client's
    call crashes librdkafka on NOT_COORDINATOR): it must not join the group, rebalance its live
    member, or commit."""
    topic, group, admin = _topic(kafka, "member", 4)
    revoked: list[int] = []
    member = Consumer(
        {
            "bootstrap.servers": kafka,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    member.subscribe([topic], on_revoke=lambda _c, parts: revoked.append(len(parts)))
    events = EventLog({"bootstrap.servers": kafka})
    try:
        deadline = time.monotonic() + 30
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        assert len(member.assignment()) == 2
        member.commit(offsets=[TopicPartition(topic, 0, 1), TopicPartition(topic, 1, 2)], asynchronous=False)
        for _ in range(3):
            samples = events.sample([topic], group)
            assert {(s.topic, s.partition): s.committed for s in samples} == {(topic, 0): 1, (topic, 1): 2}
            member.poll(0.5)  # the member keeps its session (and would see a rebalance)
        # one member, the live one, owns both partitions (what tells a quiet partition of a busy
        # member from a stalled one)
        assert {s.members for s in samples} == {1}
        assert {s.owner for s in samples} == {member.memberid()}
        assert revoked == [] and len(member.assignment()) == 2  # never rebalanced
        committed = {(tp.topic, tp.partition): tp.offset for tp in member.committed(member.assignment(), 10)}
        assert committed == {(topic, 0): 1, (topic, 1): 2}  # nothing committed by the reader
    finally:
        member.close()
        events.close()
        admin.delete_topics([topic])
