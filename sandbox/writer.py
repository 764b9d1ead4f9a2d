"""A GMS look-alike: versioned rows in `metadata_aspect_v2`, then the MCL on Kafka (or, with
`transport="pgqueue"`, in DataHub's PostgreSQL queue tables: sandbox/pgqueue.py)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from confluent_kafka import KafkaError, Message, Producer
from sqlalchemy import Connection, Engine, text

from sandbox.avro import MclCodec
from sandbox.ddl import create_schema
from sandbox.endpoints import Endpoints
from sandbox.faults import hard_delete_rows
from sandbox.mcl import aspect_json, build_mcl
from sandbox.naming import (
    ASPECT_TABLE,
    DATAHUB_ACTOR,
    DEFAULT_RUN_ID,
    MCL_TIMESERIES_TOPIC,
    MCL_VERSIONED_TOPIC,
    SYSTEM_ACTOR,
    TOPIC_PARTITIONS,
    entity_type_of,
)
from sandbox.registry import entity_facts
from sandbox.topics import CLIENT_LOG, ensure_topics
from sandbox.urns import key_from_urn

REGISTRY_NAME = "unknownRegistry"
REGISTRY_VERSION = "0.0.0"

# docker/mysql-setup/init.sql seeds these two rows; the key aspect is what GMS would add.
DATAHUB_USER = "urn:li:corpuser:datahub"
DATAHUB_USER_ASPECTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("corpUserKey", {"username": "datahub"}),
    (
        "corpUserInfo",
        {"displayName": "Data Hub", "active": True, "fullName": "Data Hub", "email": "datahub@linkedin.com"},
    ),
    (
        "corpUserEditableInfo",
        {
            "skills": [],
            "teams": [],
            "pictureLink": "https://raw.githubusercontent.com/datahub-project/datahub/master/"
            "datahub-web-react/src/images/default_avatar.png",
        },
    ),
)


class AspectObject(Protocol):
    """Anything like `datahub.metadata.schema_classes.*Class`."""

    def to_obj(self) -> dict[str, Any]: ...


class PublishError(RuntimeError):
    """The MCL could not be delivered to Kafka (the row stays written, as in GMS)."""


@dataclass(frozen=True)
class WriteResult:
    """What one write (or delete) did to the table and the topic."""

    urn: str
    aspect: str
    change_type: str
    version: int  # aspect version counter after the write (systemMetadata.version); 0 on delete
    archived_version: int | None  # version the previous row 0 was copied to; None on insert
    created_on: datetime  # naive UTC, as stored in `createdon`
    system_metadata: dict[str, Any] | None
    topic: str
    published: bool  # False when the MCL was dropped (fault) or is still in flight
    partition: int | None = None
    offset: int | None = None


@dataclass
class _Delivery:
    done: threading.Event = field(default_factory=threading.Event)
    error: KafkaError | None = None
    partition: int | None = None
    offset: int | None = None


def _to_naive_utc(value: datetime | None) -> datetime:
    if value is None:
        return datetime.now(UTC).replace(tzinfo=None)
    if value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def _epoch_ms(value: datetime) -> int:
    return int(value.replace(tzinfo=UTC).timestamp() * 1000)


def _as_dict(value: dict[str, Any] | AspectObject) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    obj = value.to_obj()
    return json.loads(json.dumps(obj))  # OrderedDicts -> plain dicts


class GmsWriter:
    """Writes aspects like GMS: one transaction per aspect, then the MCL (delivery awaited)."""

    def __init__(
        self,
        engine: Engine,
        endpoints: Endpoints | None = None,
        *,
        producer_config: dict[str, Any] | None = None,
        create_topics: bool = True,
        ensure_schema: bool = True,
        create_key_aspects: bool = True,
        versioned_topic: str = MCL_VERSIONED_TOPIC,
        timeseries_topic: str = MCL_TIMESERIES_TOPIC,
        transport: str = "kafka",
    ) -> None:
        self.engine = engine
        # the change-log topics it produces to (a test of its own passes its own)
        self.versioned_topic, self.timeseries_topic = versioned_topic, timeseries_topic
        if ensure_schema:
            create_schema(engine)
        self.endpoints = endpoints or Endpoints.from_env()
        self.codec = MclCodec(self.endpoints.registry)
        self._facts = entity_facts()
        self.create_key_aspects = create_key_aspects
        self._pending: list[_Delivery] = []
        self.queue = None
        if transport == "pgqueue":  # no Kafka: GMS inserts each MCL into queue.metadata_queue_message
            from sandbox.pgqueue import queue_for

            self.queue = queue_for(engine, (versioned_topic, timeseries_topic))
            return
        if create_topics:
            ensure_topics(
                self.endpoints.kafka,
                {
                    versioned_topic: TOPIC_PARTITIONS[MCL_VERSIONED_TOPIC],
                    timeseries_topic: TOPIC_PARTITIONS[MCL_TIMESERIES_TOPIC],
                },
            )
        config = {
            "bootstrap.servers": self.endpoints.kafka,
            "partitioner": "murmur2_random",  # Kafka's Java default partitioner for keyed records
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
        config["logger"] = CLIENT_LOG
        config.update(producer_config or {})
        self.producer = Producer(config)

    # ------------------------------------------------------------------ writes

    def write(
        self,
        urn: str,
        aspect_name: str,
        value: dict[str, Any] | AspectObject,
        *,
        system_metadata: dict[str, Any] | None = None,
        actor: str = DATAHUB_ACTOR,
        created_on: datetime | None = None,
        change_type: str = "UPSERT",
        drop_mcl: bool = False,
        wait: bool = True,
    ) -> WriteResult:
        """Upsert one aspect: archive the old row 0 as max(version)+1, write row 0, emit the MCL.

        Like GMS, the first write to a new entity also writes its key aspect (derived from the
        urn) before the aspect itself. `drop_mcl=True` commits the rows but never publishes
        the MCLs (GMS's failed publish). `wait=False` does not wait for the delivery report
        (call `flush()` later).
        """
        aspect = _as_dict(value)
        created = _to_naive_utc(created_on)
        entity_type = entity_type_of(urn)
        key_aspect = self._facts.key_aspect(entity_type)
        if (
            self.create_key_aspects
            and key_aspect
            and key_aspect != aspect_name
            and not self._facts.is_timeseries(aspect_name)
            and self.read_aspect(urn, key_aspect) is None
        ):
            key = key_from_urn(urn)
            if key is not None:
                self.write(
                    urn,
                    key_aspect,
                    key,
                    actor=actor,
                    created_on=created_on,
                    change_type=change_type,
                    drop_mcl=drop_mcl,
                    wait=wait,
                )
        if self._facts.is_timeseries(aspect_name):
            # Timeseries aspects never reach metadata_aspect_v2: only their MCL exists.
            sm = self._new_system_metadata(created, system_metadata, None, 1)
            return self._publish(
                urn,
                aspect_name,
                change_type,
                0,
                None,
                created,
                sm,
                self.timeseries_topic,
                build_mcl(
                    entity_type=entity_type,
                    urn=urn,
                    change_type=change_type,
                    aspect_name=aspect_name,
                    aspect=aspect,
                    system_metadata=sm,
                    previous_aspect=None,
                    previous_system_metadata=None,
                    created_time_ms=_epoch_ms(created),
                    actor=actor,
                ),
                drop_mcl,
                wait,
            )
        with self.engine.begin() as conn:
            previous = self._lock_current(conn, urn, aspect_name)
            if previous is None:
                archived = None
                version = 1
            else:
                archived = self._archive(conn, urn, aspect_name)
                version = archived + 1
            prev_sm = previous[1] if previous else None
            sm = self._new_system_metadata(created, system_metadata, prev_sm, version)
            self._write_current(
                conn, urn, aspect_name, aspect, sm, created, actor, update=previous is not None
            )
        mcl = build_mcl(
            entity_type=entity_type,
            urn=urn,
            change_type=change_type,
            aspect_name=aspect_name,
            aspect=aspect,
            system_metadata=sm,
            previous_aspect=previous[0] if previous else None,
            previous_system_metadata=prev_sm,
            created_time_ms=_epoch_ms(created),
            actor=actor,
        )
        return self._publish(
            urn,
            aspect_name,
            change_type,
            version,
            archived,
            created,
            sm,
            self.versioned_topic,
            mcl,
            drop_mcl,
            wait,
        )

    def delete_aspect(
        self,
        urn: str,
        aspect_name: str,
        *,
        actor: str = DATAHUB_ACTOR,
        created_on: datetime | None = None,
        drop_mcl: bool = False,
        wait: bool = True,
    ) -> WriteResult | None:
        """Hard-delete an aspect (all its versions) and emit a DELETE MCL.

        Deleting the entity's key aspect deletes every row of the urn: the entity is gone
        (GMS emits only the key aspect's DELETE; the consumer removes the rest).
        Returns None when the aspect has no row.
        """
        created = _to_naive_utc(created_on)
        entity_type = entity_type_of(urn)
        is_key = self._facts.is_key_aspect(entity_type, aspect_name)
        with self.engine.begin() as conn:
            previous = self._lock_current(conn, urn, aspect_name)
            if previous is None:
                return None
            if is_key:
                conn.execute(text(f"DELETE FROM {ASPECT_TABLE} WHERE urn = :urn"), {"urn": urn})
            else:
                conn.execute(
                    text(f"DELETE FROM {ASPECT_TABLE} WHERE urn = :urn AND aspect = :aspect"),
                    {"urn": urn, "aspect": aspect_name},
                )
        sm = self._new_system_metadata(created, None, previous[1], 0)
        sm.pop("version", None)
        mcl = build_mcl(
            entity_type=entity_type,
            urn=urn,
            change_type="DELETE",
            aspect_name=aspect_name,
            aspect=None,
            system_metadata=sm,
            previous_aspect=previous[0],
            previous_system_metadata=previous[1],
            created_time_ms=_epoch_ms(created),
            actor=actor,
        )
        return self._publish(
            urn, aspect_name, "DELETE", 0, None, created, sm, self.versioned_topic, mcl, drop_mcl, wait
        )

    def restate(
        self, urn: str, aspect_name: str, *, actor: str = SYSTEM_ACTOR, wait: bool = True
    ) -> WriteResult | None:
        """Re-emit the current row as a RESTATE MCL with `forceIndexing=true` (RestoreIndices).

        Rows are untouched. Returns None when the aspect has no row.
        """
        with self.engine.connect() as conn:
            row = conn.execute(
                text(
                    f"SELECT metadata, systemmetadata, createdon FROM {ASPECT_TABLE} "
                    "WHERE urn = :urn AND aspect = :aspect AND version = 0"
                ),
                {"urn": urn, "aspect": aspect_name},
            ).first()
        if row is None:
            return None
        sm = json.loads(row[1]) if row[1] else {}
        sm["properties"] = {**(sm.get("properties") or {}), "forceIndexing": "true"}
        now = _to_naive_utc(None)
        mcl = build_mcl(
            entity_type=entity_type_of(urn),
            urn=urn,
            change_type="RESTATE",
            aspect_name=aspect_name,
            aspect=json.loads(row[0]),
            system_metadata=sm,
            previous_aspect=None,
            previous_system_metadata=None,
            created_time_ms=_epoch_ms(now),
            actor=actor,
        )
        return self._publish(
            urn,
            aspect_name,
            "RESTATE",
            int(sm.get("version") or 0),
            None,
            row[2],
            sm,
            self.versioned_topic,
            mcl,
            False,
            wait,
        )

    def soft_delete(
        self, urn: str, *, actor: str = DATAHUB_ACTOR, drop_mcl: bool = False, wait: bool = True
    ) -> WriteResult:
        """Soft delete: write `status = {"removed": true}`."""
        return self.write(urn, "status", {"removed": True}, actor=actor, drop_mcl=drop_mcl, wait=wait)

    def hard_delete_rows(self, urn: str, aspect_name: str | None = None) -> int:
        """Delete rows behind the index's back: no MCL. Returns the number of rows deleted."""
        return hard_delete_rows(self.engine, urn, aspect_name)

    def seed_datahub_user(self, *, wait: bool = True) -> list[WriteResult]:
        """Write `urn:li:corpuser:datahub` (key, corpUserInfo, corpUserEditableInfo) if absent."""
        results = []
        for aspect_name, value in DATAHUB_USER_ASPECTS:
            if self.read_aspect(DATAHUB_USER, aspect_name) is None:
                results.append(self.write(DATAHUB_USER, aspect_name, value, wait=wait))
        return results

    # ------------------------------------------------------------------ reads

    def read_aspect(self, urn: str, aspect_name: str, version: int = 0) -> dict[str, Any] | None:
        """The stored aspect JSON (version 0 = current), or None."""
        with self.engine.connect() as conn:
            row = conn.execute(
                text(
                    f"SELECT metadata FROM {ASPECT_TABLE} "
                    "WHERE urn = :urn AND aspect = :aspect AND version = :version"
                ),
                {"urn": urn, "aspect": aspect_name, "version": version},
            ).first()
        return json.loads(row[0]) if row else None

    # ------------------------------------------------------------------ kafka

    def flush(self, timeout: float = 30.0) -> None:
        """Wait for every outstanding MCL; raise PublishError if any failed."""
        if self.queue is not None:  # pgQueue writes are synchronous: nothing outstanding
            return
        remaining = self.producer.flush(timeout)
        pending, self._pending = self._pending, []
        if remaining:
            raise PublishError(f"{remaining} MCL(s) still undelivered after {timeout}s")
        failed = [d.error for d in pending if d.error is not None]
        if failed:
            raise PublishError(f"{len(failed)} MCL(s) failed: {failed[0]}")

    def close(self) -> None:
        """Flush, then destroy the producer now (idempotent). Left to the interpreter's exit, its
        destroy would run librdkafka's pending callbacks (the logger) into a finalizing
        interpreter."""
        producer = getattr(self, "producer", None)
        if producer is None:  # pgQueue, or closed already
            return
        try:
            self.flush()
        finally:
            self.producer = None  # type: ignore[assignment]
            producer.purge()
            producer.close()

    def __enter__(self) -> GmsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _new_system_metadata(
        self, created: datetime, given: dict[str, Any] | None, previous: dict[str, Any] | None, version: int
    ) -> dict[str, Any]:
        sm: dict[str, Any] = {
            "lastObserved": _epoch_ms(created),
            "runId": DEFAULT_RUN_ID,
            "lastRunId": (previous or {}).get("runId") or DEFAULT_RUN_ID,
            "registryName": REGISTRY_NAME,
            "registryVersion": REGISTRY_VERSION,
            "version": str(version),
        }
        for key, value in (given or {}).items():
            if value is not None:
                sm[key] = value
        return sm

    def _lock_current(
        self, conn: Connection, urn: str, aspect_name: str
    ) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        row = conn.execute(
            text(
                f"SELECT metadata, systemmetadata FROM {ASPECT_TABLE} "
                "WHERE urn = :urn AND aspect = :aspect AND version = 0 FOR UPDATE"
            ),
            {"urn": urn, "aspect": aspect_name},
        ).first()
        if row is None:
            return None
        return json.loads(row[0]), (json.loads(row[1]) if row[1] else None)

    def _archive(self, conn: Connection, urn: str, aspect_name: str) -> int:
        params = {"urn": urn, "aspect": aspect_name}
        top = conn.execute(
            text(f"SELECT MAX(version) FROM {ASPECT_TABLE} WHERE urn = :urn AND aspect = :aspect"),
            params,
        ).scalar_one()
        archived = int(top) + 1
        conn.execute(
            text(
                f"INSERT INTO {ASPECT_TABLE} (urn, aspect, version, metadata, "
                "systemmetadata, createdon, createdby, createdfor) "
                "SELECT urn, aspect, :archived, metadata, systemmetadata, createdon, createdby, "
                f"createdfor FROM {ASPECT_TABLE} "
                "WHERE urn = :urn AND aspect = :aspect AND version = 0"
            ),
            {**params, "archived": archived},
        )
        return archived

    def _write_current(
        self,
        conn: Connection,
        urn: str,
        aspect_name: str,
        aspect: dict[str, Any],
        sm: dict[str, Any],
        created: datetime,
        actor: str,
        *,
        update: bool,
    ) -> None:
        params = {
            "urn": urn,
            "aspect": aspect_name,
            "metadata": aspect_json(aspect),
            "sm": aspect_json(sm),
            "createdon": created,
            "createdby": actor,
        }
        if update:
            conn.execute(
                text(
                    f"UPDATE {ASPECT_TABLE} SET metadata = :metadata, systemmetadata = :sm, "
                    "createdon = :createdon, createdby = :createdby, createdfor = NULL "
                    "WHERE urn = :urn AND aspect = :aspect AND version = 0"
                ),
                params,
            )
        else:
            conn.execute(
                text(
                    f"INSERT INTO {ASPECT_TABLE} "
                    "(urn, aspect, version, metadata, systemmetadata, createdon, createdby) "
                    "VALUES (:urn, :aspect, 0, :metadata, :sm, :createdon, :createdby)"
                ),
                params,
            )

    def _publish(
        self,
        urn: str,
        aspect_name: str,
        change_type: str,
        version: int,
        archived: int | None,
        created: datetime,
        sm: dict[str, Any],
        topic: str,
        mcl: dict[str, Any],
        drop_mcl: bool,
        wait: bool,
    ) -> WriteResult:
        result = WriteResult(
            urn, aspect_name, change_type, version, archived, created, sm, topic, published=False
        )
        if drop_mcl:
            return result
        delivery = _Delivery()

        def on_delivery(err: KafkaError | None, msg: Message) -> None:
            delivery.error = err
            if err is None:
                delivery.partition = msg.partition()
                delivery.offset = msg.offset()
            delivery.done.set()

        value = self.codec.encode(topic, mcl)
        if self.queue is not None:  # the offset the auditor reads it at: enqueue_seq - 1
            partition, seq = self.queue.enqueue(topic, urn, value)
            return WriteResult(
                urn,
                aspect_name,
                change_type,
                version,
                archived,
                created,
                sm,
                topic,
                published=True,
                partition=partition,
                offset=seq - 1,
            )
        self.producer.produce(topic, key=urn.encode("utf-8"), value=value, on_delivery=on_delivery)
        if not wait:
            self._pending.append(delivery)
            self.producer.poll(0)
            return result
        self.producer.flush(30)
        if not delivery.done.is_set():
            raise PublishError(f"MCL for {urn} {aspect_name} not delivered within 30s")
        if delivery.error is not None:
            raise PublishError(f"MCL for {urn} {aspect_name} failed: {delivery.error}")
        return WriteResult(
            urn,
            aspect_name,
            change_type,
            version,
            archived,
            created,
            sm,
            topic,
            published=True,
            partition=delivery.partition,
            offset=delivery.offset,
        )
