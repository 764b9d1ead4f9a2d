"""Tailing the change-log topics in the watch's own consumer group (never the MAE group's)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from auditor.backends import kafka_clients
from auditor.backends.avro_wire import WireDecoder
from auditor.backends.registry import Registry, as_registry
from auditor.errors import BackendUnavailable, ConfigError


@dataclass(frozen=True)
class TailedMessage:
    """One change-log message: where it sits, its Kafka timestamp, and its decoded value."""

    topic: str
    partition: int
    offset: int
    timestamp: float  # epoch seconds (CreateTime as the producer set it, or LogAppendTime)
    value: dict[str, Any] | None  # None: not decodable (`error` says why), or sampled out
    error: str | None = None
    sampled_out: bool = False  # not decoded: a burst's sample left it out (Watch.every)


def refuse_mae_group(group: str, mae_group: str) -> None:
    """The watch must never join, move or commit for the MAE consumer's group."""
    if not group or group == mae_group:
        raise ConfigError(
            f"consumer group {group!r} is the MAE consumer's: the watch would steal its partitions "
            "and move its offsets",
            hint="pass --group with a group of the watch's own, e.g. auditor-watch",
        )


class MclTail:
    """A subscribed consumer of its own group: reads MCLs, commits only what it is told."""

    def __init__(
        self,
        config: dict[str, Any],
        registry_url: Registry | str | None,
        group: str,
        topics: Sequence[str],
        mae_group: str,
        start: str = "latest",
    ) -> None:
        from confluent_kafka import Consumer

        refuse_mae_group(group, mae_group)
        registry = as_registry(registry_url)
        if registry is None:
            raise ConfigError(
                "the watch decodes MCLs: no schema registry configured",
                hint="pass --schema-registry or set KAFKA_SCHEMAREGISTRY_URL",
            )
        self.group = group
        self.topics = tuple(topics)
        self.decode = WireDecoder(registry)
        self.assigned: dict[tuple[str, int], tuple[int, str | None]] = {}  # committed, metadata
        self.revoked: list[tuple[str, int]] = []
        self.start = start
        self.consumer = Consumer(
            {
                "logger": logging.getLogger("auditor.kafka"),
                **config,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": start,
                "enable.partition.eof": False,
            }
        )
        kafka_clients.track(self)  # closed at exit at the latest (backends/kafka_clients.py)
        self.consumer.subscribe(list(self.topics), on_assign=self._on_assign, on_revoke=self._on_revoke)

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        committed = consumer.committed(partitions, timeout=10)
        for tp in committed:
            if tp.offset < 0 and self.start == "latest":
                # a new group starts at the end as of now, not at the first fetch: an event
                # produced in between is seen
                tp.offset = consumer.get_watermark_offsets(tp, timeout=10)[1]
            self.assigned[(tp.topic, tp.partition)] = (tp.offset, getattr(tp, "metadata", None))
        consumer.assign(committed)

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        for tp in partitions:
            self.assigned.pop((tp.topic, tp.partition), None)
            self.revoked.append((tp.topic, tp.partition))

    def poll(self, limit: int, timeout: float, every: int = 1) -> list[TailedMessage]:
        """Up to `limit` messages, waiting at most `timeout` seconds for the first; with `every`
        k > 1 only the messages at offsets divisible by k are decoded (the rest come back with no
        value and `sampled_out`: a watch behind a burst checks a uniform sample)."""
        try:
            batch = self.consumer.consume(num_messages=limit, timeout=timeout)
        except Exception as exc:
            raise BackendUnavailable(f"Kafka: reading {', '.join(self.topics)} failed: {exc}") from None
        out = []
        for msg in batch:
            if msg.error() is not None:
                continue
            topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
            if topic is None or partition is None or offset is None:
                continue
            stamp = msg.timestamp()[1] / 1000.0
            if every > 1 and offset % every:
                out.append(TailedMessage(topic, partition, offset, stamp, None, sampled_out=True))
                continue
            try:
                out.append(TailedMessage(topic, partition, offset, stamp, self.decode(msg.value())))
            except Exception as exc:
                out.append(TailedMessage(topic, partition, offset, stamp, None, str(exc)[:200]))
        return out

    def behind(self) -> int | None:
        """Messages between this consumer's position and the partitions' ends as last fetched (no
        request: the high watermarks every fetch brings); None before anything was fetched."""
        from confluent_kafka import TopicPartition

        assigned = [TopicPartition(t, p) for t, p in self.assigned]
        if not assigned:
            return None
        total, known = 0, False
        try:
            for tp in self.consumer.position(assigned):
                if tp.offset < 0:
                    continue
                high = self.consumer.get_watermark_offsets(tp, cached=True)
                if high is None or high[1] < 0:
                    continue
                total, known = total + max(0, high[1] - tp.offset), True
        except Exception:  # a figure for the sampling only: never a reason to stop the watch
            return None
        return total if known else None

    def commit(self, offsets: Iterable[tuple[str, int, int, str]]) -> None:
        """Commit (topic, partition, offset, metadata) synchronously."""
        from confluent_kafka import TopicPartition

        wanted = [TopicPartition(t, p, o, metadata=m) for t, p, o, m in offsets if (t, p) in self.assigned]
        if not wanted:
            return
        try:
            self.consumer.commit(offsets=wanted, asynchronous=False)
        except Exception as exc:
            raise BackendUnavailable(f"Kafka: committing the watch's offsets failed: {exc}") from None

    def close(self) -> None:
        """Leave the group and destroy the client (idempotent)."""
        kafka_clients.untrack(self)
        self.consumer.close()  # a closed consumer's close does nothing
