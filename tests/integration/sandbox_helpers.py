"""Small helpers shared by the sandbox integration tests (independent re-implementations)."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from sqlalchemy import Engine, text


def java_murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2` (seed 0x9747b28c, m 0x5bd1e995, r 24), as a signed 32-bit int."""
    length = len(data)
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = int.from_bytes(data[i * 4 : i * 4 + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = length & ~3
    extra = length % 4
    if extra == 3:
        h ^= data[tail + 2] << 16
    if extra >= 2:
        h ^= data[tail + 1] << 8
    if extra >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def java_partition(key: bytes, partitions: int) -> int:
    """Kafka's default partitioner for a keyed record: toPositive(murmur2(key)) % n."""
    return (java_murmur2(key) & 0x7FFFFFFF) % partitions


def md5_base64(raw: str) -> str:
    return base64.b64encode(hashlib.md5(raw.encode("utf-8")).digest()).decode("ascii")


def rows(engine: Engine, urn: str, aspect: str | None = None) -> list[dict[str, Any]]:
    """Rows of metadata_aspect_v2 for a urn (optionally one aspect), by aspect then version."""
    sql = (
        "SELECT urn, aspect, version, metadata, systemmetadata, createdon, createdby "
        "FROM metadata_aspect_v2 WHERE urn = :urn"
    )
    params = {"urn": urn}
    if aspect is not None:
        sql += " AND aspect = :aspect"
        params["aspect"] = aspect
    with engine.connect() as conn:
        found = conn.execute(text(sql + " ORDER BY aspect, version"), params).mappings().all()
    return [
        {
            **row,
            "metadata": json.loads(row["metadata"]),
            "systemmetadata": json.loads(row["systemmetadata"]) if row["systemmetadata"] else None,
        }
        for row in found
    ]


MCL_TOPIC = "MetadataChangeLog_Versioned_v1"
GROUP = "generic-mae-consumer-job-client"


def _partitions(admin: Any, topic: str) -> list[Any]:
    from confluent_kafka import TopicPartition

    metadata = admin.list_topics(topic, timeout=10)
    return [TopicPartition(topic, p) for p in sorted(metadata.topics[topic].partitions)]


def end_offsets(kafka: str, topic: str = MCL_TOPIC) -> dict[int, int]:
    """Log end offset per partition, straight from the broker."""
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": kafka})
    futures = admin.list_offsets({tp: OffsetSpec.latest() for tp in _partitions(admin, topic)})
    return {tp.partition: f.result().offset for tp, f in futures.items()}


def committed_offsets(kafka: str, group: str = GROUP, topic: str = MCL_TOPIC) -> dict[int, int]:
    """The group's committed offset per partition (negative when none)."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka})
    request = [ConsumerGroupTopicPartitions(group, _partitions(admin, topic))]
    result = admin.list_consumer_group_offsets(request)[group].result()
    return {tp.partition: tp.offset for tp in result.topic_partitions}


def group_members(kafka: str, group: str = GROUP) -> int:
    """How many members the group has right now."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka})
    return len(admin.describe_consumer_groups([group])[group].result().members)
