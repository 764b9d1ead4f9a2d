"""DataHub's pgQueue (the Kafka-less transport, `DATAHUB_MESSAGING_TRANSPORT=pgqueue`) in PostgreSQL.

What GMS and the MAE consumer do to the queue tables, written from DataHub's sources
(`metadata-io/.../queue/postgres/EbeanPostgresMetadataQueueStore.java`, `PgQueueEventProducer`,
`MetadataQueueRouting`, `sqlsetup/pgqueue/migrations/V001__schema.sql` and
`R__maintenance_functions.sql`):

- the tables live in schema `queue`, named `metadata_queue_{content_type,topic,message,
  consumer_offset,message_group_lease,consumer_registration}`; the message table is partitioned
  by range of `enqueued_at` (pg_partman's; here one default partition);
- a message's partition is CRC32(routing key, the urn) % the topic's `partition_count`;
  `enqueue_seq` is MAX(enqueue_seq)+1 of the rows present in that partition, taken under
  `pg_advisory_xact_lock(key(topic id, partition))`; the first message of a partition is 1;
- the payload is the Kafka value's bytes (Confluent framing: magic 0, schema id, Avro binary),
  Snappy-compressed (raw block, xerial's `Snappy.compress`) when `payload_compression` = 1,
  DataHub's default; `content_type_id` names `application/vnd.confluent.avro+binary`; no headers;
- a consumer group leases a partition's head (`message_group_lease`, `locked_until`), acks by
  setting the lease's owner to `__acked__`, and moves `consumer_offset.offset_value` over the
  contiguous run of acked sequences: `offset_value` is the last sequence consumed;
- retention deletes by age, and (aggressive retention) every message all registered groups
  have passed; the last message of each partition is always kept (its sequence anchors the next).
"""

from __future__ import annotations

import hashlib
import uuid
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, text

from sandbox.naming import MAE_CONSUMER_GROUP, MCL_TOPICS

SCHEMA = "queue"
PREFIX = "metadata_queue"
# DataHub's default partition count for a topic (DATAHUB_PGQUEUE_TOPIC_DEFAULT_PARTITION_COUNT)
DEFAULT_PARTITIONS = 2
CONFLUENT_AVRO = "application/vnd.confluent.avro+binary"
TOPIC_DEFAULT_MIME = "application/avro"
NONE, SNAPPY = 0, 1  # payload_compression wire codes
ACKED = "__acked__"  # lock_owner of an acked lease (PgQueueLeaseMarkers)
ACKED_UNTIL = "1970-01-01T00:00:00+00:00"
WEEK = 604_800  # retention_max_age_seconds default
VISIBILITY_SECONDS = 600.0  # a lease's visibility timeout


def stable_partition(routing_key: str, partitions: int) -> int:
    """MetadataQueueRouting.stablePartitionId: unsigned CRC32 of the UTF-8 key, modulo."""
    if partitions <= 0:
        raise ValueError("partition_count must be positive")
    return zlib.crc32(routing_key.encode("utf-8")) % partitions


def advisory_key(topic_id: int, partition: int) -> int:
    """MetadataQueueRouting.advisoryLockKey: the first 8 bytes of SHA-256("id:partition") mod 2^62."""
    digest = hashlib.sha256(f"{topic_id}:{partition}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % (1 << 62)


def compress(inner: bytes, codec: int) -> bytes:
    if codec == NONE:
        return inner
    import cramjam

    return bytes(cramjam.snappy.compress_raw(inner))


def decompress(stored: bytes, codec: int) -> bytes:
    if codec == NONE:
        return stored
    if codec != SNAPPY:
        raise ValueError(f"unknown pgQueue payload_compression {codec}")
    import cramjam

    return bytes(cramjam.snappy.decompress_raw(stored))


def ddl(schema: str = SCHEMA, prefix: str = PREFIX) -> list[str]:
    """The queue's tables as V001__schema.sql creates them (the message table with a default
    partition where pg_partman would add daily ones)."""
    p = f"{schema}.{prefix}"
    return [
        f"CREATE SCHEMA IF NOT EXISTS {schema}",
        f"CREATE TABLE IF NOT EXISTS {p}_content_type ("
        " id smallint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, mime text NOT NULL UNIQUE)",
        f"INSERT INTO {p}_content_type (mime) VALUES ('{TOPIC_DEFAULT_MIME}') ON CONFLICT (mime) DO NOTHING",
        f"CREATE TABLE IF NOT EXISTS {p}_topic ("
        " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, topic_name text NOT NULL UNIQUE,"
        " partition_count int NOT NULL CHECK (partition_count >= 1 AND partition_count <= 4096),"
        " retention_max_age_seconds int NOT NULL CHECK (retention_max_age_seconds >= 0),"
        " max_rows_per_topic bigint NOT NULL CHECK (max_rows_per_topic >= 0),"
        " max_total_payload_bytes bigint NOT NULL CHECK (max_total_payload_bytes >= 0),"
        f" default_content_type_id smallint REFERENCES {p}_content_type (id),"
        " aggressive_retention boolean NOT NULL DEFAULT false,"
        " created_at timestamptz NOT NULL DEFAULT now())",
        f"CREATE TABLE IF NOT EXISTS {p}_consumer_offset ("
        " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, consumer_group text NOT NULL,"
        f" topic_id bigint NOT NULL REFERENCES {p}_topic (id) ON DELETE CASCADE,"
        " partition_id int NOT NULL CHECK (partition_id >= 0),"
        " offset_value bigint NOT NULL DEFAULT 0, epoch bigint NOT NULL DEFAULT 0,"
        " UNIQUE (consumer_group, topic_id, partition_id))",
        f"CREATE TABLE IF NOT EXISTS {p}_message ("
        " id bigint GENERATED ALWAYS AS IDENTITY,"
        f" topic_id bigint NOT NULL REFERENCES {p}_topic (id) ON DELETE CASCADE,"
        " partition_id int NOT NULL, routing_key text NOT NULL, enqueue_seq bigint NOT NULL,"
        " priority smallint NOT NULL DEFAULT 5, payload bytea NOT NULL,"
        f" content_type_id smallint REFERENCES {p}_content_type (id),"
        " payload_compression smallint NOT NULL DEFAULT 0 CHECK (payload_compression >= 0),"
        " headers jsonb,"
        " payload_bytes bigint GENERATED ALWAYS AS (octet_length(payload)) STORED,"
        " enqueued_at timestamptz NOT NULL DEFAULT now(),"
        " PRIMARY KEY (id, enqueued_at), UNIQUE (topic_id, partition_id, enqueue_seq, enqueued_at),"
        f" CONSTRAINT {prefix}_message_priority_range CHECK (priority BETWEEN 0 AND 9)"
        ") PARTITION BY RANGE (enqueued_at)",
        f"CREATE TABLE IF NOT EXISTS {p}_message_default PARTITION OF {p}_message DEFAULT",
        f"CREATE INDEX IF NOT EXISTS idx_{prefix}_message_dequeue"
        f" ON {p}_message (topic_id, partition_id, priority, enqueue_seq)",
        f"CREATE INDEX IF NOT EXISTS idx_{prefix}_message_enqueued_brin"
        f" ON {p}_message USING brin (enqueued_at)",
        f"CREATE TABLE IF NOT EXISTS {p}_message_group_lease ("
        " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, message_id bigint NOT NULL,"
        " message_enqueued_at timestamptz NOT NULL, consumer_group text NOT NULL,"
        " lock_owner text NOT NULL, locked_until timestamptz NOT NULL,"
        " UNIQUE (message_id, message_enqueued_at, consumer_group),"
        f" FOREIGN KEY (message_id, message_enqueued_at) REFERENCES {p}_message (id, enqueued_at)"
        " ON DELETE CASCADE)",
        f"CREATE INDEX IF NOT EXISTS idx_{prefix}_message_group_lease_group_unlocked"
        f" ON {p}_message_group_lease (consumer_group, locked_until)",
        f"CREATE TABLE IF NOT EXISTS {p}_consumer_registration ("
        " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, consumer_group text NOT NULL,"
        f" topic_id bigint NOT NULL REFERENCES {p}_topic (id) ON DELETE CASCADE,"
        " registered_at timestamptz NOT NULL DEFAULT now(),"
        " last_heartbeat_at timestamptz NOT NULL DEFAULT now(),"
        " UNIQUE (consumer_group, topic_id))",
    ]


@dataclass(frozen=True)
class Handle:
    """One message of the queue (QueueMessageHandle), with what a consumer reads of it."""

    id: int
    enqueued_at: datetime
    topic: str
    topic_id: int
    partition: int
    seq: int
    routing_key: str = ""
    payload: bytes = b""  # decompressed: the Kafka value's bytes


@dataclass(frozen=True)
class QueueLag:
    """A group's watermark against a partition's last sequence."""

    topic: str
    partition: int
    committed: int  # offset_value: the last sequence consumed (0: none)
    end: int  # MAX(enqueue_seq) of the rows present (0: none)

    @property
    def lag(self) -> int:
        return max(0, self.end - self.committed)


class QueueStore:
    """The queue tables of one database: what GMS's producer and the consumers' poll loops do."""

    def __init__(self, engine: Engine, schema: str = SCHEMA, prefix: str = PREFIX) -> None:
        self.engine = engine
        self.p = f"{schema}.{prefix}"
        self.schema, self.prefix = schema, prefix
        self._topics: dict[str, tuple[int, int]] = {}

    # ------------------------------------------------------------------ DDL and topics

    def create(self) -> None:
        with self.engine.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('sandbox-pgqueue-ddl'))"))
            for statement in ddl(self.schema, self.prefix):
                conn.execute(text(statement))

    def ensure_topic(
        self,
        topic: str,
        partitions: int = DEFAULT_PARTITIONS,
        *,
        retention_seconds: int = WEEK,
        aggressive: bool = False,
    ) -> tuple[int, int]:
        """The topic's row (seeded as SqlSetup does); (id, partition_count)."""
        with self.engine.begin() as conn:
            ct = conn.execute(
                text(f"SELECT id FROM {self.p}_content_type WHERE mime = :m"), {"m": TOPIC_DEFAULT_MIME}
            ).scalar_one()
            conn.execute(
                text(
                    f"INSERT INTO {self.p}_topic AS t (topic_name, partition_count, "
                    "retention_max_age_seconds, max_rows_per_topic, max_total_payload_bytes, "
                    "default_content_type_id, aggressive_retention) VALUES (:n, :pc, :age, 0, 0, :ct, :ag) "
                    "ON CONFLICT (topic_name) DO UPDATE SET partition_count = "
                    "GREATEST(1, EXCLUDED.partition_count, t.partition_count), "
                    "retention_max_age_seconds = EXCLUDED.retention_max_age_seconds, "
                    "aggressive_retention = EXCLUDED.aggressive_retention"
                ),
                {"n": topic, "pc": partitions, "age": retention_seconds, "ct": ct, "ag": aggressive},
            )
        self._topics.pop(topic, None)
        return self.topic(topic)

    def topic(self, topic: str) -> tuple[int, int]:
        if topic not in self._topics:
            with self.engine.connect() as conn:
                row = conn.execute(
                    text(f"SELECT id, partition_count FROM {self.p}_topic WHERE topic_name = :n"),
                    {"n": topic},
                ).first()
            if row is None:
                raise LookupError(f"no pgQueue topic {topic} in {self.p}_topic")
            self._topics[topic] = (int(row[0]), int(row[1]))
        return self._topics[topic]

    def _content_type(self, conn: Connection, mime: str) -> int:
        conn.execute(
            text(f"INSERT INTO {self.p}_content_type (mime) VALUES (:m) ON CONFLICT (mime) DO NOTHING"),
            {"m": mime},
        )
        return int(
            conn.execute(
                text(f"SELECT id FROM {self.p}_content_type WHERE mime = :m"), {"m": mime}
            ).scalar_one()
        )

    # ------------------------------------------------------------------ producing

    def enqueue(self, topic: str, routing_key: str, value: bytes, codec: int = SNAPPY) -> tuple[int, int]:
        """PgQueueEventProducer.enqueueConfluentPayload: one row; (partition, enqueue_seq)."""
        topic_id, partitions = self.topic(topic)
        partition = stable_partition(routing_key, partitions)
        with self.engine.begin() as conn:
            ct = self._content_type(conn, CONFLUENT_AVRO)
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": advisory_key(topic_id, partition)})
            seq = conn.execute(
                text(
                    f"WITH mx AS (SELECT COALESCE(MAX(enqueue_seq), 0) AS s FROM {self.p}_message "
                    "WHERE topic_id = :t AND partition_id = :p) "
                    f"INSERT INTO {self.p}_message (topic_id, partition_id, routing_key, enqueue_seq, "
                    "priority, payload, content_type_id, payload_compression, headers) "
                    "SELECT :t, :p, :k, mx.s + 1, 5, :payload, :ct, :codec, NULL FROM mx "
                    "RETURNING enqueue_seq"
                ),
                {
                    "t": topic_id,
                    "p": partition,
                    "k": routing_key,
                    "payload": compress(value, codec),
                    "ct": ct,
                    "codec": codec,
                },
            ).scalar_one()
        return partition, int(seq)

    # ------------------------------------------------------------------ consuming

    def register(self, group: str, topic: str) -> None:
        """registerConsumer: the heartbeat each poll cycle writes."""
        topic_id, _ = self.topic(topic)
        with self.engine.begin() as conn:
            conn.execute(
                text(
                    f"INSERT INTO {self.p}_consumer_registration (consumer_group, topic_id) VALUES (:g, :t) "
                    "ON CONFLICT (consumer_group, topic_id) DO UPDATE SET last_heartbeat_at = now()"
                ),
                {"g": group, "t": topic_id},
            )

    def receive(
        self, group: str, topic: str, owner: str, limit: int, visibility: float = VISIBILITY_SECONDS
    ) -> list[Handle]:
        """receiveBatchForGroup over every partition: lease each partition's head in sequence order
        (one priority: producers all write 5), stopping at a head leased by another worker."""
        topic_id, partitions = self.topic(topic)
        out: list[Handle] = []
        with self.engine.begin() as conn:
            for partition in range(partitions):
                floor = self._committed(conn, group, topic_id, partition)
                while len(out) < limit:
                    head = conn.execute(
                        text(
                            f"SELECT m.id, m.enqueued_at, m.enqueue_seq, m.routing_key, m.payload, "
                            f"m.payload_compression FROM {self.p}_message m LEFT JOIN "
                            f"{self.p}_message_group_lease l ON l.message_id = m.id "
                            "AND l.message_enqueued_at = m.enqueued_at AND l.consumer_group = :g "
                            "WHERE m.topic_id = :t AND m.partition_id = :p AND m.enqueue_seq > :f "
                            "AND m.priority = 5 AND (l.id IS NULL OR l.lock_owner <> :acked) "
                            "ORDER BY m.enqueue_seq LIMIT 1"
                        ),
                        {"g": group, "t": topic_id, "p": partition, "f": floor, "acked": ACKED},
                    ).first()
                    if head is None:
                        break
                    won = conn.execute(
                        text(
                            f"INSERT INTO {self.p}_message_group_lease AS l "
                            "(message_id, message_enqueued_at, "
                            "consumer_group, lock_owner, locked_until) VALUES (:id, :at, :g, :o, "
                            "now() + (:v * interval '1 second')) "
                            "ON CONFLICT (message_id, message_enqueued_at, "
                            "consumer_group) DO UPDATE SET lock_owner = EXCLUDED.lock_owner, "
                            "locked_until = EXCLUDED.locked_until "
                            "WHERE l.locked_until < now() AND l.lock_owner <> :acked RETURNING l.message_id"
                        ),
                        {
                            "id": head[0],
                            "at": head[1],
                            "g": group,
                            "o": owner,
                            "v": visibility,
                            "acked": ACKED,
                        },
                    ).first()
                    if won is None:
                        break  # head of line leased elsewhere: do not skip past it
                    out.append(
                        Handle(
                            int(head[0]),
                            head[1],
                            topic,
                            topic_id,
                            partition,
                            int(head[2]),
                            head[3],
                            decompress(bytes(head[4]), int(head[5])),
                        )
                    )
                    floor = int(head[2])
        return out

    def _committed(self, conn: Connection, group: str, topic_id: int, partition: int) -> int:
        value = conn.execute(
            text(
                f"SELECT offset_value FROM {self.p}_consumer_offset "
                "WHERE consumer_group = :g AND topic_id = :t AND partition_id = :p"
            ),
            {"g": group, "t": topic_id, "p": partition},
        ).scalar()
        return int(value or 0)

    def ack(self, group: str, handles: Iterable[Handle]) -> None:
        """commitForGroup: mark the leases acked, then advance each partition's contiguous watermark."""
        handles = list(handles)
        if not handles:
            return
        with self.engine.begin() as conn:
            for h in handles:
                conn.execute(
                    text(
                        f"INSERT INTO {self.p}_message_group_lease (message_id, message_enqueued_at, "
                        "consumer_group, lock_owner, locked_until) VALUES (:id, :at, :g, :acked, :until) "
                        "ON CONFLICT (message_id, message_enqueued_at, consumer_group) DO UPDATE SET "
                        "lock_owner = EXCLUDED.lock_owner, locked_until = EXCLUDED.locked_until"
                    ),
                    {"id": h.id, "at": h.enqueued_at, "g": group, "acked": ACKED, "until": ACKED_UNTIL},
                )
            for topic_id, partition in sorted({(h.topic_id, h.partition) for h in handles}):
                current = self._committed(conn, group, topic_id, partition)
                acked = conn.execute(
                    text(
                        f"SELECT m.enqueue_seq FROM {self.p}_message m JOIN {self.p}_message_group_lease l "
                        "ON l.message_id = m.id AND l.message_enqueued_at = m.enqueued_at "
                        "AND l.consumer_group = :g WHERE m.topic_id = :t AND m.partition_id = :p "
                        "AND m.enqueue_seq > :c AND l.lock_owner = :acked ORDER BY m.enqueue_seq"
                    ),
                    {"g": group, "t": topic_id, "p": partition, "c": current, "acked": ACKED},
                ).scalars()
                watermark = current
                for seq in acked:  # PgQueueContiguousOffset.advanceWatermark
                    if int(seq) != watermark + 1:
                        break
                    watermark = int(seq)
                if watermark > current:
                    conn.execute(
                        text(
                            f"INSERT INTO {self.p}_consumer_offset AS co (consumer_group, topic_id, "
                            "partition_id, offset_value, epoch) VALUES (:g, :t, :p, :o, 0) "
                            "ON CONFLICT (consumer_group, topic_id, partition_id) "
                            "DO UPDATE SET offset_value = EXCLUDED.offset_value"
                        ),
                        {"g": group, "t": topic_id, "p": partition, "o": watermark},
                    )

    def lag(self, group: str = MAE_CONSUMER_GROUP, topics: Iterable[str] = MCL_TOPICS) -> list[QueueLag]:
        out = []
        with self.engine.connect() as conn:
            for topic in topics:
                try:
                    topic_id, partitions = self.topic(topic)
                except LookupError:
                    continue
                ends: dict[int, int] = dict(
                    conn.execute(
                        text(
                            f"SELECT partition_id, MAX(enqueue_seq) FROM {self.p}_message "
                            "WHERE topic_id = :t GROUP BY partition_id"
                        ),
                        {"t": topic_id},
                    ).all()
                )
                for p in range(partitions):
                    out.append(
                        QueueLag(topic, p, self._committed(conn, group, topic_id, p), int(ends.get(p, 0)))
                    )
        return out

    # ------------------------------------------------------------------ maintenance

    def apply_retention(self) -> int:
        """The retention maintenance DataHub runs (age, then aggressive): the messages deleted.
        The last message of each partition is kept, as DataHub's anchor."""
        p = self.p
        anchor = (
            f"ms.enqueue_seq < (SELECT MAX(a.enqueue_seq) FROM {p}_message a "
            "WHERE a.topic_id = ms.topic_id AND a.partition_id = ms.partition_id)"
        )
        by_age = (
            f"DELETE FROM {p}_message m USING {p}_message ms JOIN {p}_topic t ON t.id = ms.topic_id "
            "WHERE m.id = ms.id AND m.enqueued_at = ms.enqueued_at AND t.retention_max_age_seconds > 0 "
            f"AND ms.enqueued_at < now() - t.retention_max_age_seconds * interval '1 second' AND {anchor}"
        )
        aggressive = (
            f"DELETE FROM {p}_message m USING {p}_message ms JOIN {p}_topic t ON t.id = ms.topic_id "
            "WHERE m.id = ms.id AND m.enqueued_at = ms.enqueued_at AND t.aggressive_retention "
            f"AND EXISTS (SELECT 1 FROM {p}_consumer_registration r WHERE r.topic_id = ms.topic_id) "
            f"AND NOT EXISTS (SELECT 1 FROM {p}_consumer_registration r WHERE r.topic_id = ms.topic_id "
            f"AND NOT EXISTS (SELECT 1 FROM {p}_consumer_offset co "
            "WHERE co.consumer_group = r.consumer_group "
            "AND co.topic_id = ms.topic_id AND co.partition_id = ms.partition_id "
            "AND co.offset_value >= ms.enqueue_seq)) "
            f"AND NOT EXISTS (SELECT 1 FROM {p}_consumer_registration r JOIN {p}_consumer_offset co "
            "ON co.consumer_group = r.consumer_group AND co.topic_id = ms.topic_id "
            "AND co.partition_id = ms.partition_id WHERE r.topic_id = ms.topic_id AND co.offset_value > "
            f"(SELECT COALESCE(MAX(x.enqueue_seq), 0) FROM {p}_message x WHERE x.topic_id = ms.topic_id "
            f"AND x.partition_id = ms.partition_id)) AND {anchor}"
        )
        with self.engine.begin() as conn:
            return int(conn.execute(text(by_age)).rowcount or 0) + int(
                conn.execute(text(aggressive)).rowcount or 0
            )

    def reset(self) -> None:
        """Empty the queue (messages, leases, offsets, registrations); the topics stay."""
        with self.engine.begin() as conn:
            conn.execute(
                text(
                    f"TRUNCATE {self.p}_message_group_lease, {self.p}_message, {self.p}_consumer_offset, "
                    f"{self.p}_consumer_registration"
                )
            )


def new_owner(group: str) -> str:
    """A poll worker's lock owner: `{group}:{uuid}`."""
    return f"{group}:{uuid.uuid4()}"


def queue_for(engine: Engine, topics: Iterable[str] = MCL_TOPICS, *, aggressive: bool = True) -> QueueStore:
    """The queue of a PostgreSQL store, its tables and topics created as System Update does
    (aggressive retention on the change-log topics, as DataHub enables it on high-throughput ones)."""
    if engine.dialect.name != "postgresql":
        raise ValueError(f"pgQueue lives in PostgreSQL, not in {engine.dialect.name}")
    queue = QueueStore(engine)
    queue.create()
    for topic in topics:
        queue.ensure_topic(topic, aggressive=aggressive)
    return queue
