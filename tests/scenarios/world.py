"""A fresh DataHub-shaped world per scenario: the real store, index, Kafka and consumer."""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from sqlalchemy import text
from sqlalchemy.engine import make_url

from auditor.api import ScanOptions, scan
from auditor.core.model import Report, Selection
from auditor.settings import Settings, load_settings
from sandbox.consumer import MaeConsumer
from sandbox.database import engine_for, make_engine
from sandbox.ddl import create_schema
from sandbox.endpoints import Endpoints
from sandbox.generator import CatalogEntity
from sandbox.generator import seed as seed_catalog
from sandbox.naming import ASPECT_TABLE, MAE_CONSUMER_GROUP, MCL_TOPICS
from sandbox.search import connect
from sandbox.topics import admin_client, end_offsets
from sandbox.versions import write_deployment
from sandbox.writer import GmsWriter


def json_error(stdout: str, code: int) -> dict[str, Any]:
    """What a failed command asked for JSON on stdout printed there: one error object with its
    exit code, nothing of a report (docs/report.md)."""
    import json

    said = json.loads(stdout)
    assert set(said) == {"error", "hint", "exit_code"} and said["exit_code"] == code, stdout[-2000:]
    return dict(said)


def move_group_to_end(bootstrap: str) -> None:
    """Start the MAE group at the log end: earlier scenarios' events are not this world's."""
    admin = admin_client(bootstrap)
    ends = end_offsets(bootstrap, MCL_TOPICS)
    partitions = [TopicPartition(t, p, off) for (t, p), off in ends.items()]
    futures = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(MAE_CONSUMER_GROUP, partitions)]
    )
    for future in futures.values():
        future.result(timeout=30)


def _url_field(store: str) -> str:
    """The `Endpoints` field holding the store's URL."""
    return "pg_url" if store in ("postgres", "postgresql", "pg") else "mysql_url"


def create_database(url: str, name: str) -> str:
    """A new, empty database beside `url`'s on the same server; its URL."""
    admin = make_engine(url).execution_options(isolation_level="AUTOCOMMIT")
    postgres = make_url(url).get_backend_name().startswith("postgres")
    charset = "" if postgres else " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"  # as the stack's `datahub`
    try:
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}{charset}"))
    finally:
        admin.dispose()
    return make_url(url).set(database=name).render_as_string(hide_password=False)


def drop_database(url: str, name: str) -> None:
    """Drop database `name` through `url`'s (another database on the same server); on PostgreSQL
    connections still open to it are ended."""
    admin = make_engine(url).execution_options(isolation_level="AUTOCOMMIT")
    force = " WITH (FORCE)" if make_url(url).get_backend_name().startswith("postgres") else ""
    try:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}{force}"))
    finally:
        admin.dispose()


class World:
    """One store + one search backend, an empty table and fresh prefixed indices.

    The table emptied is the store's `metadata_aspect_v2`, in the database the endpoints name
    (the stack's `datahub`, or a pytest-xdist worker's own, tests/conftest.py): every World
    started on that database, by any process, empties it. `own_database=True` gives the world a
    database of its own on the same server instead (created here, dropped by `close()`), for a
    test that must not lose its rows to another test session running beside it. Every world has
    change-log topics and a MAE group of its own (`own_topics`, deleted by `close()`): two worlds
    on one broker never consume each other's events; `own_topics=False` is DataHub's default
    names, for a test about them.
    """

    def __init__(
        self,
        store: str,
        search: str,
        tmp: Path,
        n: int = 60,
        endpoints: Endpoints | None = None,
        transport: str = "kafka",
        v3: dict[str, str] | None = None,
        own_topics: bool = True,
        group_suffix: str = "",
        release: str | None = None,
        glue: Any = None,
        own_database: bool = False,
    ) -> None:
        self.store_name, self.search_name = store, search
        self.endpoints = endpoints or Endpoints.from_env()  # another server: dataclasses.replace
        self.prefix = f"t{uuid.uuid4().hex[:8]}"
        self.own_database: tuple[str, str] | None = None  # (the server's URL, the database made)
        if own_database:
            field, name = _url_field(store), f"world_{self.prefix}"
            server = getattr(self.endpoints, field)
            self.endpoints = replace(self.endpoints, **{field: create_database(server, name)})
            self.own_database = (server, name)
        self.engine = engine_for(store, self.endpoints)
        create_schema(self.engine)
        with self.engine.begin() as conn:
            conn.execute(text(f"DELETE FROM {ASPECT_TABLE}"))
        self.search = connect(search, self.endpoints)
        self.transport = transport
        own_topics = own_topics and transport == "kafka"  # pgQueue's queue is in the world's database
        # topics and a MAE group of its own: no cross-talk with other runs on a shared broker
        self.topics = (f"{self.prefix}-MCL_Versioned", f"{self.prefix}-MCL_Timeseries") if own_topics else ()
        self.group = f"{self.prefix}-mae" if own_topics else MAE_CONSUMER_GROUP
        # DataHub's per-hook groups: the consumer runs as `<group>-<suffix>`, the settings name the base
        consuming = f"{self.group}-{group_suffix}" if group_suffix else self.group
        if transport == "pgqueue":  # DataHub's PostgreSQL queue in the store's database, emptied
            from sandbox.pgqueue import queue_for
            from sandbox.pgqueue_consumer import PgQueueMaeConsumer

            self.queue = queue_for(self.engine)
            self.queue.reset()
            self.writer = GmsWriter(self.engine, self.endpoints, transport="pgqueue")
            self.consumer: MaeConsumer = PgQueueMaeConsumer(
                self.queue, search, self.endpoints, index_prefix=self.prefix
            )
        elif own_topics:
            self.writer = GmsWriter(
                self.engine, self.endpoints, versioned_topic=self.topics[0], timeseries_topic=self.topics[1]
            )
            self.consumer = MaeConsumer(
                search, self.endpoints, index_prefix=self.prefix, group_id=consuming, topics=self.topics
            )
        else:
            move_group_to_end(self.endpoints.kafka)
            self.writer = GmsWriter(self.engine, self.endpoints)
            self.consumer = MaeConsumer(search, self.endpoints, index_prefix=self.prefix)
        if glue is not None:  # DataHub with SCHEMA_REGISTRY_TYPE=AWS_GLUE: Glue-framed MCLs (sandbox/glue.py)
            self.writer.codec.glue = glue
        self.consumer.updater.v3 = v3  # DataHub's V3 index beside V2: entity type -> search group
        # a DataHub release: its deployment rows first, then documents as that release writes them
        self.consumer.updater.release = release
        if transport == "kafka":
            self.consumer.start()
        if release is not None:
            write_deployment(self.writer, release)
        self.entities: list[CatalogEntity] = seed_catalog(
            self.writer, n, seed=int(self.prefix[1:], 16) % 10_000, prefix=f"{self.prefix}-"
        )
        if transport != "kafka":  # the seed first: a poll thread beside the writer slows it 4x (GIL)
            self.consumer.start()
        assert self.consumer.drain(120), "the consumer did not index the seed catalog"
        self.refresh()  # the seed is searchable before any test scans it
        self.state_file = tmp / "state.sqlite"

    def close(self) -> None:
        self.consumer.stop()
        self.writer.close()
        for index in self.search.list_indices(f"{self.prefix}_*"):
            self.search.delete_index(index)
        if self.topics:
            admin_client(self.endpoints.kafka).delete_topics(list(self.topics), operation_timeout=30)
        self.engine.dispose()
        if self.own_database is not None:
            drop_database(*self.own_database)

    def of_type(self, entity_type: str, removed: bool | None = False) -> list[CatalogEntity]:
        return [
            e
            for e in self.entities
            if e.entity_type == entity_type and (removed is None or e.removed == removed)
        ]

    def settings(self, kafka: bool = True, **over: Any) -> Settings:
        e = self.endpoints
        if self.transport == "pgqueue" and kafka:  # the queue is read from the store's database
            over = {"transport": "pgqueue", **over}
        return load_settings(
            env={},
            store_url=e.store_url(self.store_name),
            search_url=e.search_url(self.search_name),
            kafka_bootstrap=e.kafka if kafka and self.transport == "kafka" else None,
            schema_registry_url=e.registry if kafka else None,
            index_prefix=self.prefix,
            state_file=str(self.state_file),
            **self.own_kafka(),
            **over,
        )

    def own_kafka(self) -> dict[str, str]:
        """The settings naming this world's own topics and group (none: DataHub's defaults)."""
        if not self.topics:
            return {}
        return {
            "mcl_versioned_topic": self.topics[0],
            "mcl_timeseries_topic": self.topics[1],
            "mae_consumer_group": self.group,
        }

    def kafka_env(self) -> dict[str, str]:
        """This world's own topics and group as the environment a CLI process reads."""
        return {f"AUDITOR_{k.upper()}": v for k, v in self.own_kafka().items()}

    def cli_env(self, **over: str) -> dict[str, str]:
        """The environment a CLI process (or the soak's scanner) reads this world's settings from."""
        s = self.settings()
        return {
            **os.environ,
            "AUDITOR_STORE_URL": s.store_url.get_secret_value() if s.store_url else "",
            "AUDITOR_SEARCH_URL": s.search_url or "",
            "AUDITOR_KAFKA_BOOTSTRAP": s.kafka_bootstrap or "",
            "AUDITOR_SCHEMA_REGISTRY_URL": s.schema_registry_url or "",
            "AUDITOR_INDEX_PREFIX": self.prefix,
            "AUDITOR_STATE_FILE": str(self.state_file),
            **self.kafka_env(),
            **over,
        }

    def refresh(self) -> None:
        """Make every write the consumer made visible to search (its 1 s refresh interval is not
        a promise on a loaded machine: a scan right after `drain()` could miss whole indices)."""
        for index in self.search.list_indices(f"{self.prefix}_*"):
            self.search.refresh(index)

    def scan(self, kafka: bool = True, selection: Selection | None = None, **options: Any) -> Report:
        opts = {"grace": 300.0, "settle": 0.5, "sample_window": 2.0, **options}
        time.sleep(opts["settle"])
        self.refresh()
        return scan(self.settings(kafka), selection or Selection(), ScanOptions(**opts))
