"""Producing MCLs into DataHub's pgQueue (repairs only), as GMS's `PgQueueEventProducer` does.

One row per MCL in `<schema>.<prefix>_message`: routing key the urn, partition CRC32(urn) %
partition_count, `enqueue_seq` MAX+1 of the partition under `pg_advisory_xact_lock` of (topic id,
partition), priority 5, the Confluent-framed Avro value (the registered schema's id: GMS's
embedded registry or the one it points at) Snappy-compressed (`payload_compression` 1, DataHub's
default), content type `application/vnd.confluent.avro+binary`, no headers. A batch is one
transaction: committed, every row of it is delivered; failed, none is.

It never creates a topic (DataHub's System Update seeds them) and refuses to produce where a
registered group's offset is past the end of the log (STUCK_AHEAD, left by retention or a reset
of the queue): that group would skip the new rows, so nothing could be replayed through it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.exc import SQLAlchemyError

from auditor.backends.protocols import Capability
from auditor.backends.registry import Registry
from auditor.errors import ConfigError
from auditor.platforms.datahub.backends.pgqueue import PgQueueEvents, crc32_partition, queue_error
from auditor.platforms.datahub.backends.producer import Deliveries, MclProducer

CONFLUENT_AVRO = "application/vnd.confluent.avro+binary"
DEFAULT_PRIORITY = 5


def advisory_key(topic_id: int, partition: int) -> int:
    """DataHub's lock key of a partition: SHA-256("id:partition")'s first 8 bytes mod 2^62."""
    digest = hashlib.sha256(f"{topic_id}:{partition}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % (1 << 62)


def snappy(data: bytes) -> bytes:
    import cramjam

    return bytes(cramjam.snappy.compress_raw(data))


class PgQueueProducer(MclProducer):
    """Inserts RESTATE MCLs into one pgQueue topic; delivery = the batch's transaction committed."""

    capabilities = frozenset({Capability.PRODUCE})

    def __init__(self, events: PgQueueEvents, registry_url: Registry | str | None, topic: str) -> None:
        self.topic = topic
        self.events = events
        self.description = events.description
        found = events._topic(topic)
        if found is None:
            raise ConfigError(
                f"{events.description}: no topic {topic} in {events.p}_topic: nothing to replay into",
                hint="check [pgqueue] schema/table_prefix and the topic name (DataHub seeds its topics "
                "at System Update)",
            )
        self.topic_id, self.partition_count = found
        stuck = events.stuck_ahead(topic)
        if stuck:
            said = "; ".join(
                f"group {g} partition {p}: offset {o}, last sequence {m}" for g, p, o, m in stuck[:5]
            )
            raise ConfigError(
                f"replay impossible on pgQueue topic {topic}: a consumer's offset is past the end of the "
                f"log (STUCK_AHEAD, after retention or a reset of the queue: {said}); it would skip the "
                "replayed messages",
                hint="repair with `auditor rebuild reindex` (writes the documents from the rows), or reset "
                "the group's offset in DataHub first",
            )
        self._load_schema(registry_url)
        self._rows: list[tuple[str, bytes]] = []

    def produce(self, urn: str, record: dict[str, Any]) -> None:
        self._rows.append((urn, snappy(self.encode(record))))

    def flush(self, timeout: float = 60.0) -> Deliveries:
        rows, self._rows = self._rows, []
        out = Deliveries()
        if not rows:
            return out
        try:
            with self.events.engine.begin() as conn:
                conn.execute(text(f"SET LOCAL statement_timeout = {int(timeout * 1000)}"))
                ct = self._content_type(conn)
                for urn, payload in rows:
                    partition, seq = self._insert(conn, ct, urn, payload)
                    out.confirmed.append((urn, partition, seq - 1))
        except SQLAlchemyError as exc:
            raise queue_error(f"insert into {self.topic}", exc) from None
        return out

    def _content_type(self, conn: Connection) -> int:
        p = self.events.p
        conn.execute(
            text(f"INSERT INTO {p}_content_type (mime) VALUES (:m) ON CONFLICT (mime) DO NOTHING"),
            {"m": CONFLUENT_AVRO},
        )
        return int(
            conn.execute(
                text(f"SELECT id FROM {p}_content_type WHERE mime = :m"), {"m": CONFLUENT_AVRO}
            ).scalar_one()
        )

    def _insert(self, conn: Connection, ct: int, urn: str, payload: bytes) -> tuple[int, int]:
        p = self.events.p
        partition = crc32_partition(urn, self.partition_count)
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": advisory_key(self.topic_id, partition)})
        seq = conn.execute(
            text(
                f"WITH mx AS (SELECT COALESCE(MAX(enqueue_seq), 0) AS s FROM {p}_message "
                "WHERE topic_id = :t AND partition_id = :p) "
                f"INSERT INTO {p}_message (topic_id, partition_id, routing_key, enqueue_seq, priority, "
                "payload, "
                "content_type_id, payload_compression, headers) "
                "SELECT :t, :p, :k, mx.s + 1, :prio, :payload, :ct, 1, NULL FROM mx RETURNING enqueue_seq"
            ),
            {
                "t": self.topic_id,
                "p": partition,
                "k": urn,
                "prio": DEFAULT_PRIORITY,
                "payload": payload,
                "ct": ct,
            },
        ).scalar_one()
        return partition, int(seq)

    def close(self) -> None:
        self._rows = []
        self.events.close()
