"""Producing MCLs (repairs only): DataHub's registered Avro schema, key = urn, murmur2, acks=all."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import quote

import fastavro

from auditor.backends import kafka_clients
from auditor.backends.avro_encode import EncodeError, Writer, compile_schema
from auditor.backends.protocols import Capability
from auditor.backends.registry import GlueSchemas, Registry, as_registry, glue_frame
from auditor.errors import AuditorError, BackendUnavailable, ConfigError


@cache
def message_errors() -> frozenset[int]:
    """Errors of one message (no retry delivers it); any other error from produce() is the broker's."""
    from confluent_kafka import KafkaError

    names = ("MSG_SIZE_TOO_LARGE", "INVALID_MSG_SIZE", "INVALID_MSG", "INVALID_RECORD")
    return frozenset(getattr(KafkaError, n) for n in names if hasattr(KafkaError, n))


POLL_EVERY = 64  # messages produced between two polls for delivery reports


class ClientLog:
    """librdkafka's log lines, passed on to the `auditor.kafka` logger; the last fatal one kept.

    A fatal error of the client (the broker refusing the idempotent producer its id) reaches
    Python from poll()/flush() as a KafkaException, or as a SystemError whose cause it is; when a
    log line was being served at that moment the SystemError comes with no exception at all
    ("returned NULL without setting an exception", seen in CI), and this line is all that says why.
    """

    def __init__(self) -> None:
        self.fatal: str | None = None
        self._logger = logging.getLogger("auditor.kafka")

    def log(self, level: int, fmt: str, *args: Any) -> None:
        if level >= logging.CRITICAL:
            line = fmt % args if args else fmt
            self.fatal = line.split("Fatal error: ", 1)[-1]
        self._logger.log(level, fmt, *args)


def producer_config(config: dict[str, Any], log: ClientLog) -> dict[str, Any]:
    """The replay's librdkafka settings: the connection's, then ours. `log` comes after the
    connection's own logger (the same logger, without the fatal line kept): the other way round,
    a fatal error surfaced only as "returned NULL without setting an exception" (seen in CI)."""
    return {
        **config,
        "logger": log,
        "acks": "all",
        "enable.idempotence": True,
        "partitioner": "murmur2_random",  # Kafka's Java default for keyed records, as GMS
        "linger.ms": 20,
    }


class Refused(Exception):
    """The producer refused a message at once (e.g. larger than the broker takes)."""


@dataclass
class Deliveries:
    """What the broker confirmed, and what it refused, since the last flush."""

    confirmed: list[tuple[str, int, int]] = field(default_factory=list)  # (urn, partition, offset)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (urn, error)


class MclProducer:
    """An idempotent producer of MCLs to one topic; never registers a schema in a user's registry."""

    capabilities = frozenset({Capability.PRODUCE})

    def __init__(self, config: dict[str, Any], registry_url: Registry | str | None, topic: str) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        registry = as_registry(registry_url)
        self.description = (
            f"{config.get('bootstrap.servers')} (registry {registry.describe() if registry else ''})"
        )
        self._load_schema(registry_url)
        self.log = ClientLog()
        self.producer = Producer(producer_config(config, self.log))
        kafka_clients.track(self)  # closed at exit at the latest (backends/kafka_clients.py)
        self.pending = Deliveries()
        self._queued = 0

    def _load_schema(self, registry_url: Registry | str | None) -> None:
        """The topic's registered MCL schema and its id (never registered by us), and its encoders."""
        registry = as_registry(registry_url)
        if registry is None:
            raise ConfigError("a replay needs the schema registry", hint="pass --schema-registry")
        self.subject = f"{self.topic}-value"
        self.schema_str: str
        self.schema_id: int  # Confluent's id (0 with Glue, whose frame names a schema version)
        if registry.glue:  # Glue: the topic's schema (named after it), its newest version
            try:
                version, self.schema_str = GlueSchemas(registry).latest(self.topic)
            except AuditorError as exc:
                raise type(exc)(
                    f"{exc}: refusing to replay without the topic's schema version", hint=exc.hint
                ) from None
            self.schema_id = 0
            self._frame = glue_frame(version)
            self._compile()
            return
        try:  # the REST API's own answer: {"subject", "version", "id", "schema"}
            latest = registry.get_json(f"/subjects/{quote(self.subject, safe='')}/versions/latest", 30.0)
        except Exception as exc:
            raise BackendUnavailable(
                f"schema registry {registry.describe()}: no schema under {self.subject} ({exc}): "
                "refusing to replay (the auditor never registers a schema in your registry)"
            ) from None
        if not isinstance(latest, dict) or latest.get("id") is None or not latest.get("schema"):
            raise BackendUnavailable(f"schema registry {registry.describe()}: {self.subject} has no id")
        self.schema_str = str(latest["schema"])
        self.schema_id = int(latest["id"])
        self._frame = b"\x00" + self.schema_id.to_bytes(4, "big")
        self._compile()

    def _compile(self) -> None:
        # Confluent framing (magic byte 0, the registered schema's id) + Avro binary: the same
        # bytes as confluent-kafka's AvroSerializer, at a fraction of its cost. The schema's
        # compiled encoder writes fastavro's bytes in a third of fastavro's time; fastavro stays
        # for a value the compiled one refuses (it says what is wrong) and a schema it cannot take
        self._parsed = fastavro.parse_schema(json.loads(self.schema_str))
        try:
            self._compiled: Writer | None = compile_schema(json.loads(self.schema_str))
        except (ValueError, KeyError, TypeError):
            self._compiled = None

    def encode(self, record: dict[str, Any]) -> bytes:
        if self._compiled is not None:
            out = bytearray(self._frame)
            try:
                self._compiled(record, out)
                return bytes(out)
            except EncodeError:
                pass  # fastavro says what is wrong with it, or writes what we did not expect
        buffer = io.BytesIO()
        buffer.write(self._frame)
        fastavro.schemaless_writer(buffer, self._parsed, record)
        return buffer.getvalue()

    def produce(self, urn: str, record: dict[str, Any]) -> None:
        """Queue one MCL. `Refused` when the client refuses it outright (too large for the
        broker, say): no retry can deliver it, the caller reports it by urn."""
        from confluent_kafka import KafkaException

        value = self.encode(record)

        def done(err: Any, msg: Any) -> None:
            if err is not None:
                self.pending.failed.append((urn, str(err)))
            else:
                self.pending.confirmed.append((urn, msg.partition(), msg.offset()))

        while True:
            try:
                self.producer.produce(self.topic, key=urn.encode("utf-8"), value=value, on_delivery=done)
                break
            except BufferError:  # the local queue is full: serve delivery reports, then retry
                self._client(self.producer.poll, 0.5)
            except KafkaException as exc:
                code, why = kafka_clients.error_of(exc)
                if code not in message_errors():
                    raise BackendUnavailable(f"Kafka {self.description}: produce failed: {why}") from None
                size = f"{len(value):,} bytes"
                raise Refused(f"{record.get('aspectName')}: {why} ({size})") from None
        self._queued += 1
        if self._queued % POLL_EVERY == 0:  # serve delivery reports (flush() serves the rest)
            self._client(self.producer.poll, 0)

    def flush(self, timeout: float = 60.0) -> Deliveries:
        """Wait for every delivery report; what is left unreported counts as failed."""
        left = self._client(self.producer.flush, timeout)
        out, self.pending = self.pending, Deliveries()
        if left:
            out.failed.append(("*", f"{left} messages without a delivery report after {timeout:.0f}s"))
        return out

    def _client(self, call: Callable[[float], int], timeout: float) -> int:
        """poll() or flush(), a fatal error of the producer as one clear line.

        The broker refusing the idempotent producer its id (no Write on the topic) is fatal:
        confluent-kafka raises it from poll()/flush(), as a SystemError when delivery reports
        were being served meanwhile (the KafkaException is its cause, or, see `ClientLog`, none)."""
        from confluent_kafka import KafkaError, KafkaException

        try:
            return call(timeout)
        except (KafkaException, SystemError) as exc:
            cause = exc if isinstance(exc, KafkaException) else exc.__cause__ or exc.__context__
            if cause is not None and not isinstance(cause, KafkaException):
                raise  # one of our callbacks failed: a bug to show, not the broker's refusal
            code: int | None = None
            if isinstance(cause, KafkaException):
                code, why = kafka_clients.error_of(cause)
            elif self.log.fatal is not None:
                why = self.log.fatal
            else:
                why = f"the Kafka client failed ({exc})"
            denied = (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED)
            hint = None
            if code in denied or (code is None and "authorization failed" in why.lower()):
                hint = f"a replay needs Write on the topic {self.topic} (besides what the scan needs)"
            raise BackendUnavailable(f"Kafka {self.description}: produce failed: {why}", hint=hint) from None

    def close(self) -> None:
        """Flush (10 s at most), then destroy the client now, while the interpreter is whole.

        Left to the interpreter's exit, the destroy would run librdkafka's pending callbacks (its
        logger) into a finalizing interpreter (backends/kafka_clients.py). What the flush could
        not deliver was reported already; it is purged, so that the client's own close does not
        wait for it."""
        producer, self.producer = self.producer, None  # type: ignore[assignment]
        if producer is None:  # closed already
            return
        kafka_clients.untrack(self)
        try:
            self._client(producer.flush, 10)
        except BackendUnavailable:  # the same fatal error the run already reported
            logging.getLogger("auditor.kafka").debug("producer closed after a fatal error", exc_info=True)
        finally:
            try:
                producer.purge()
                producer.close()  # rd_kafka_destroy, whoever else still holds the object
            except Exception:  # a client whose fatal error was reported above
                logging.getLogger("auditor.kafka").debug("producer destroy failed", exc_info=True)
