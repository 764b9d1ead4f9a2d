"""The event log on pgQueue: DataHub's Kafka-less transport (`DATAHUB_MESSAGING_TRANSPORT=pgqueue`).

The change-log topics, the MAE group's position and a urn's MCLs read from the PostgreSQL queue
tables (`<schema>.<prefix>_{topic,message,consumer_offset,consumer_registration}`, `queue` and
`metadata_queue` by default), behind the same `Events` protocol as the Kafka `EventLog`. Read-only:
it never leases, acks or registers. How the tables map onto Kafka's terms:

- a topic's partitions: `metadata_queue_topic.partition_count`; a urn's partition is
  CRC32(urn) % that count (DataHub's `MetadataQueueRouting`), not Kafka's murmur2;
- a message's offset is its `enqueue_seq - 1` (sequences start at 1, offsets at 0), so the
  log's end is MAX(enqueue_seq) and its start MIN(enqueue_seq) - 1 of the rows present;
- the group's committed offset (the next to read) is `consumer_offset.offset_value`, the last
  sequence it consumed; a group registered on the topic that never acked there has 0, one
  never seen has none;
- the group's members: 1 while its registration's heartbeat (`last_heartbeat_at`, written every
  poll cycle) is recent, else 0 (a consumer gone);
- a message's timestamp is its `enqueued_at`; its value the Confluent-framed Avro bytes, Snappy-
  decompressed when `payload_compression` says so;
- no log of the group's commits exists (Kafka's `__consumer_offsets`): `commit_times` says none.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from auditor.backends.protocols import Capability
from auditor.backends.registry import Registry
from auditor.core.records import CommitRun, MclHit, OffsetSample
from auditor.errors import AccessRefused, BackendUnavailable, ConfigError
from auditor.platforms.datahub.backends.mcl_decoding import HitDecoding
from auditor.redact import redact_url

# a registration whose heartbeat is older than this is a consumer gone (DataHub heartbeats every
# poll cycle, a second or so apart; a handler busy with a large batch can take longer)
HEARTBEAT_SECONDS = 60.0
SNAPPY = 1


def crc32_partition(urn: str, partitions: int) -> int:
    """The logical partition DataHub's pgQueue routes a urn-keyed message to."""
    if partitions <= 0:
        raise ValueError("partitions must be positive")
    return zlib.crc32(urn.encode("utf-8")) % partitions


def payload_bytes(stored: bytes, codec: int) -> bytes:
    """The Kafka value's bytes of a stored payload (`payload_compression`: 0 none, 1 Snappy)."""
    if codec == 0:
        return stored
    if codec != SNAPPY:
        raise ValueError(f"unknown pgQueue payload_compression {codec}")
    import cramjam

    return bytes(cramjam.snappy.decompress_raw(stored))


def queue_engine(url: str) -> Engine:
    engine = create_engine(url, pool_pre_ping=True)
    if engine.dialect.name != "postgresql":
        engine.dispose()
        raise ConfigError(
            f"pgQueue lives in PostgreSQL, and {redact_url(url)} is {engine.dialect.name}",
            hint="set [pgqueue] url (AUDITOR_PGQUEUE_URL) to the PostgreSQL database DataHub queues in",
        )
    return engine


def queue_error(where: str, exc: SQLAlchemyError) -> BackendUnavailable:
    """A refused privilege is a setting to fix (exit 3); anything else an outage."""
    first = str(getattr(exc, "orig", None) or exc).splitlines()[0][:300]
    if isinstance(exc, DBAPIError) and "permission denied" in first.lower():
        return AccessRefused(
            f"pgQueue {where}: {first}", hint="grant SELECT on the queue tables (USAGE on their schema)"
        )
    if "password authentication failed" in first or "no pg_hba.conf entry" in first:
        return AccessRefused(f"pgQueue {where}: {first}", hint="check the user and password of [pgqueue] url")
    return BackendUnavailable(f"pgQueue {where}: {first}")


class PgQueueEvents(HitDecoding):
    """Read-only access to the change-log topics in DataHub's PostgreSQL queue."""

    capabilities = frozenset({Capability.READ})

    def __init__(
        self,
        url: str,
        schema: str = "queue",
        prefix: str = "metadata_queue",
        registry_url: Registry | str | None = None,
        timeout: float = 10.0,
        *,
        engine: Engine | None = None,
    ) -> None:
        self.engine = engine or queue_engine(url)
        self.p = f"{schema}.{prefix}"
        self.description = f"pgQueue {redact_url(url)} {self.p}_*"
        self.topic_errors: dict[str, str] = {}
        self._topics: dict[str, tuple[int, int]] = {}
        self.description += self._init_decoding(registry_url, timeout)

    def close(self) -> None:
        self.engine.dispose()

    def partition_of(self, urn: str, partitions: int) -> int:
        return crc32_partition(urn, partitions)

    def _rows(self, where: str, sql: str, **params: Any) -> list[Any]:
        try:
            with self.engine.connect() as conn:
                return list(conn.execute(text(sql), params).all())
        except SQLAlchemyError as exc:
            raise queue_error(where, exc) from None

    def _topic(self, topic: str) -> tuple[int, int] | None:
        if topic not in self._topics:
            try:
                with self.engine.connect() as conn:
                    row = conn.execute(
                        text(f"SELECT id, partition_count FROM {self.p}_topic WHERE topic_name = :n"),
                        {"n": topic},
                    ).first()
            except SQLAlchemyError as exc:
                error = queue_error(f"topic {topic}", exc)
                if isinstance(error, AccessRefused) or "does not exist" not in str(error):
                    raise error from None
                self.topic_errors[topic] = f"no pgQueue tables {self.p}_* in this database"
                return None
            if row is None:
                return None
            self._topics[topic] = (int(row[0]), int(row[1]))
        return self._topics[topic]

    def partitions(self, topic: str) -> int:
        found = self._topic(topic)
        return found[1] if found else 0

    def sample(self, topics: Iterable[str], group: str) -> list[OffsetSample]:
        out: list[OffsetSample] = []
        for topic in topics:
            found = self._topic(topic)
            if found is None:
                continue
            topic_id, count = found
            # the bounds by index probes, one per partition and priority (the dequeue index is
            # (topic_id, partition_id, priority, enqueue_seq)): MIN/MAX over the partition's rows
            # would read every row kept (measured: 0.3 s a sample at 600k rows, and linear)
            probe = (
                f"(SELECT m.enqueue_seq FROM {self.p}_message m WHERE m.topic_id = :t AND m.partition_id = p "
                "AND m.priority = k ORDER BY m.enqueue_seq {} LIMIT 1)"
            )
            rows = self._rows(
                f"the offsets of group {group} on {topic}",
                f"SELECT 'bounds', p, MIN({probe.format('ASC')}), MAX({probe.format('DESC')}), NULL, now() "
                "FROM generate_series(0, :n - 1) p, generate_series(0, 9) k GROUP BY p "
                "UNION ALL SELECT 'offset', partition_id, NULL, NULL, offset_value, now() "
                f"FROM {self.p}_consumer_offset WHERE consumer_group = :g AND topic_id = :t "
                "UNION ALL SELECT 'member', -1, NULL, NULL, "
                "CASE WHEN last_heartbeat_at > now() - :hb * interval '1 second' THEN 1 ELSE 0 END, now() "
                f"FROM {self.p}_consumer_registration WHERE consumer_group = :g AND topic_id = :t",
                t=topic_id,
                g=group,
                hb=HEARTBEAT_SECONDS,
                n=count,
            )
            bounds = {
                int(r[1]): (int(r[2]), int(r[3])) for r in rows if r[0] == "bounds" and r[2] is not None
            }
            offsets = {int(r[1]): int(r[4]) for r in rows if r[0] == "offset"}
            registered = [int(r[4]) for r in rows if r[0] == "member"]
            members = registered[0] if registered else 0
            taken = rows[0][5].timestamp() if rows else datetime.now(UTC).timestamp()
            for p in range(count):
                low, high = bounds.get(p, (0, 0))
                end = high
                start = low - 1 if low else end
                committed: int | None = offsets.get(p, 0 if registered else None)
                if committed is not None and committed > end:
                    committed = end  # STUCK_AHEAD (offset past the log): nothing left to take
                out.append(OffsetSample(topic, p, committed, start, end, members, taken))
        return out

    def stuck_ahead(self, topic: str) -> list[tuple[str, int, int, int]]:
        """(group, partition, offset_value, last sequence) of every registered group whose offset
        is past the end of the log (DataHub's STUCK_AHEAD): it skips what is enqueued below it."""
        found = self._topic(topic)
        if found is None:
            return []
        rows = self._rows(
            f"the offsets on {topic}",
            f"SELECT co.consumer_group, co.partition_id, co.offset_value, COALESCE(MAX(m.enqueue_seq), 0) "
            f"FROM {self.p}_consumer_offset co JOIN {self.p}_consumer_registration r "
            "ON r.consumer_group = co.consumer_group AND r.topic_id = co.topic_id "
            f"LEFT JOIN {self.p}_message m ON m.topic_id = co.topic_id AND m.partition_id = co.partition_id "
            "WHERE co.topic_id = :t GROUP BY co.consumer_group, co.partition_id, co.offset_value "
            "HAVING co.offset_value > COALESCE(MAX(m.enqueue_seq), 0) ORDER BY 1, 2",
            t=found[0],
        )
        return [(str(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in rows]

    def _of_partition(self, topic: str, partition: int, what: str, where: str, value: Any) -> Any:
        """One value of a partition's messages (None: no topic, no row)."""
        found = self._topic(topic)
        if found is None:
            return None
        rows = self._rows(
            f"{topic}[{partition}]",
            f"SELECT {what} FROM {self.p}_message WHERE topic_id = :t AND partition_id = :p AND {where}",
            t=found[0],
            p=partition,
            v=value,
        )
        return rows[0][0] if rows else None

    def message_time(self, topic: str, partition: int, offset: int) -> datetime | None:
        at: datetime | None = self._of_partition(
            topic, partition, "enqueued_at", "enqueue_seq = :v", offset + 1
        )
        return at

    def offset_for_time(self, topic: str, partition: int, when: datetime) -> int | None:
        seq = self._of_partition(topic, partition, "MIN(enqueue_seq)", "enqueued_at >= :v", when)
        return int(seq) - 1 if seq is not None else None

    def commit_times(
        self, group: str, wanted: set[tuple[str, int]], lookback: float
    ) -> dict[tuple[str, int], CommitRun] | None:
        return None  # pgQueue keeps no log of a group's commits

    def find(
        self, topic: str, partition: int, urns: set[str], start: int, stop: int, cap: int = 200_000
    ) -> tuple[list[MclHit], bool]:
        """MCLs keyed by one of `urns` at offsets [start, stop); whole unless `cap` of them came."""
        found = self._topic(topic)
        if found is None or start >= stop or not urns:
            return [], True
        rows = self._rows(
            f"{topic}[{partition}]",
            "SELECT enqueue_seq, enqueued_at, routing_key, payload, payload_compression "
            f"FROM {self.p}_message "
            "WHERE topic_id = :t AND partition_id = :p AND enqueue_seq > :a AND enqueue_seq <= :b "
            "AND routing_key = ANY(:k) ORDER BY enqueue_seq LIMIT :cap",
            t=found[0],
            p=partition,
            a=start,
            b=stop,
            k=sorted(urns),
            cap=cap,
        )
        hits = []
        for seq, at, urn, stored, codec in rows:
            where = (topic, partition, int(seq) - 1)
            try:
                value = payload_bytes(bytes(stored), int(codec))
            except Exception as exc:  # a codec it does not know, a corrupt block: matched by time, said
                self.decode_failures += where not in self._counted
                self._counted.add(where)
                self.decode_error = self.decode_error or f"pgQueue payload: {str(exc)[:180]}"
                hits.append(MclHit(str(urn), where[2], at, None, None))
                continue
            hit = self._hit(where, str(urn), at, value)
            if hit is not None:
                hits.append(hit)
        return hits, len(rows) < cap
