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


@pytest.mark.integration
def test_commit_times_date_the_groups_committed_offsets(kafka: str) -> None:
    topic = f"t{uuid.uuid4().hex[:10]}_commits"
    group = f"t{uuid.uuid4().hex[:10]}_group"
    admin = AdminClient({"bootstrap.servers": kafka})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": kafka})
    for i in range(6):
        producer.produce(topic, key=f"k{i}", value=b"v", partition=i % 2)
    producer.flush(10)
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
