"""Kafka plumbing for the sandbox: MCL topics, the consumer group's committed and end offsets."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from sandbox.naming import MAE_CONSUMER_GROUP, MCL_TOPICS, TOPIC_PARTITIONS

OFFSET_UNSET = -1001  # librdkafka's OFFSET_INVALID: the group never committed this partition


# librdkafka's own log lines go to this logger, not to stderr (nothing but the tool on screen)
CLIENT_LOG = logging.getLogger("sandbox.kafka")


def admin_client(bootstrap: str) -> AdminClient:
    """AdminClient with short timeouts (loopback broker)."""
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000, "logger": CLIENT_LOG})


def topic_partitions(admin: AdminClient, topics: Iterable[str]) -> list[TopicPartition]:
    """Every partition of the given topics that exist."""
    metadata = admin.list_topics(timeout=10)
    found: list[TopicPartition] = []
    for topic in topics:
        info = metadata.topics.get(topic)
        if info is None or info.error is not None:
            continue
        found.extend(TopicPartition(topic, p) for p in sorted(info.partitions))
    return found


def ensure_topics(bootstrap: str, partitions: dict[str, int] | None = None) -> None:
    """Create the MCL topics when missing (same partition counts as sandbox/stack)."""
    wanted_counts = partitions or TOPIC_PARTITIONS
    admin = admin_client(bootstrap)
    existing = admin.list_topics(timeout=10).topics
    wanted = [
        NewTopic(name, num_partitions=count, replication_factor=1)
        for name, count in wanted_counts.items()
        if name not in existing
    ]
    if not wanted:
        return
    for future in admin.create_topics(wanted, request_timeout=15).values():
        try:
            future.result()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    wait_ready(bootstrap, [topic.topic for topic in wanted])


def wait_ready(bootstrap: str, topics: Iterable[str], timeout: float = 30.0) -> None:
    """Wait until every partition of the topics has a leader that answers offset requests."""
    admin = admin_client(bootstrap)
    topics = tuple(topics)
    deadline = time.monotonic() + timeout
    while True:
        try:
            partitions = topic_partitions(admin, topics)
            if {tp.topic for tp in partitions} == set(topics):
                futures = admin.list_offsets({tp: OffsetSpec.latest() for tp in partitions})
                for future in futures.values():
                    future.result()
                return
        except KafkaException:
            pass  # leader election still running right after a create
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics {list(topics)} not ready within {timeout}s")
        time.sleep(0.2)


def partition_count(bootstrap: str, topic: str) -> int:
    """Number of partitions of a topic."""
    return len(topic_partitions(admin_client(bootstrap), [topic]))


@dataclass(frozen=True)
class PartitionLag:
    """Committed offset of the group vs the partition's end offset."""

    topic: str
    partition: int
    committed: int  # OFFSET_UNSET when the group never committed here
    end: int

    @property
    def lag(self) -> int:
        """Messages the group has not committed past."""
        return self.end - max(self.committed, 0)


def committed_offsets(
    bootstrap: str, group: str = MAE_CONSUMER_GROUP, topics: Iterable[str] = MCL_TOPICS
) -> dict[tuple[str, int], int]:
    """The group's committed offset per (topic, partition), OFFSET_UNSET if none."""
    admin = admin_client(bootstrap)
    partitions = topic_partitions(admin, topics)
    if not partitions:
        return {}
    # a consumer of the group that never subscribes (never joins) and never commits, not the
    # admin client's list_consumer_group_offsets: that one crashes the process (SIGSEGV, librdkafka
    # issue 5040) when the coordinator answers NOT_COORDINATOR, as it does after a broker restart
    reader = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False, "logger": CLIENT_LOG}
    )
    try:
        result = reader.committed(partitions, timeout=30)
    finally:
        reader.close()
    return {(tp.topic, tp.partition): tp.offset for tp in result}


def end_offsets(bootstrap: str, topics: Iterable[str] = MCL_TOPICS) -> dict[tuple[str, int], int]:
    """Log end offset (next offset to be written) per (topic, partition)."""
    admin = admin_client(bootstrap)
    partitions = topic_partitions(admin, topics)
    if not partitions:
        return {}
    futures = admin.list_offsets({tp: OffsetSpec.latest() for tp in partitions})
    return {(tp.topic, tp.partition): fut.result().offset for tp, fut in futures.items()}


def group_lag(
    bootstrap: str, group: str = MAE_CONSUMER_GROUP, topics: Iterable[str] = MCL_TOPICS
) -> list[PartitionLag]:
    """Committed vs end offsets for every partition of the topics."""
    topics = tuple(topics)
    ends = end_offsets(bootstrap, topics)
    committed = committed_offsets(bootstrap, group, topics)
    return [
        PartitionLag(topic, partition, committed.get((topic, partition), OFFSET_UNSET), end)
        for (topic, partition), end in sorted(ends.items())
    ]


def delete_group(bootstrap: str, group: str = MAE_CONSUMER_GROUP, timeout: float = 30.0) -> bool:
    """Delete the group and its committed offsets; False if it did not exist.

    Fails (after `timeout`) while a member of the group is still running.
    """
    admin = admin_client(bootstrap)
    deadline = time.monotonic() + timeout
    while True:
        try:
            admin.delete_consumer_groups([group], request_timeout=10)[group].result()
            return True
        except KafkaException as exc:
            code = exc.args[0].code()
            if code in (KafkaError.GROUP_ID_NOT_FOUND, KafkaError._UNKNOWN_GROUP):
                return False
            if code != KafkaError.NON_EMPTY_GROUP or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def recreate_topics(bootstrap: str, partitions: dict[str, int] | None = None, timeout: float = 60.0) -> None:
    """Delete the MCL topics (all their messages) and create them again, empty."""
    counts = partitions or TOPIC_PARTITIONS
    admin = admin_client(bootstrap)
    doomed = [name for name in counts if name in admin.list_topics(timeout=10).topics]
    if doomed:
        for future in admin.delete_topics(doomed, operation_timeout=30).values():
            try:
                future.result()
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise
    deadline = time.monotonic() + timeout
    while any(name in admin.list_topics(timeout=10).topics for name in doomed):
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics {doomed} were not deleted within {timeout}s")
        time.sleep(0.2)
    while True:  # deletion finishes asynchronously: a create can still collide with the old topic
        ensure_topics(bootstrap, counts)
        present = admin.list_topics(timeout=10).topics
        if all(name in present for name in counts):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics {sorted(counts)} were not recreated within {timeout}s")
        time.sleep(0.5)
