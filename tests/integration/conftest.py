"""Fixtures for the real stack: an unreachable service fails the test, naming the service."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable, Iterator
from urllib.parse import urlparse

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from sandbox.consumer import MaeConsumer
from sandbox.database import make_engine
from sandbox.ddl import create_schema
from sandbox.endpoints import Endpoints
from sandbox.search import SearchStore, connect
from sandbox.topics import ensure_topics
from sandbox.writer import GmsWriter

STORES = ("postgres", "mariadb")
SEARCHES = ("opensearch", "elasticsearch")


def _require(service: str, address: str, probe: Callable[[], object]) -> None:
    try:
        probe()
    except Exception as exc:  # any failure means the test cannot run: fail loudly
        pytest.fail(
            f"{service} is unreachable at {address} ({type(exc).__name__}: {exc}); "
            "start the stack with `sandbox/stack up`",
            pytrace=False,
        )


def _tcp(address: str) -> Callable[[], object]:
    host, port = address.rsplit(":", 1)
    return lambda: socket.create_connection((host, int(port)), timeout=3).close()


@pytest.fixture(scope="session")
def endpoints() -> Endpoints:
    return Endpoints.from_env()


@pytest.fixture(scope="session")
def kafka(endpoints: Endpoints) -> str:
    """Bootstrap address of a reachable Kafka with the MCL topics."""
    _require("Kafka", endpoints.kafka, _tcp(endpoints.kafka))
    _require("Kafka", endpoints.kafka, lambda: ensure_topics(endpoints.kafka))
    return endpoints.kafka


@pytest.fixture(scope="session")
def registry(endpoints: Endpoints) -> str:
    """URL of a reachable schema registry (Confluent-compatible API)."""
    from sandbox.avro import registry_client

    _require(
        "schema registry", endpoints.registry, lambda: registry_client(endpoints.registry).get_subjects()
    )
    return endpoints.registry


_engines: dict[str, Engine] = {}


def store_engine(endpoints: Endpoints, store: str) -> Engine:
    """Engine for a reachable store with `metadata_aspect_v2` created."""
    if store not in _engines:
        url = endpoints.store_url(store)
        engine = make_engine(url)
        name = "PostgreSQL" if store == "postgres" else "MariaDB"

        def probe() -> None:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))

        parsed = urlparse(url)
        _require(name, f"{parsed.hostname}:{parsed.port}", probe)
        _engines[store] = engine
    create_schema(_engines[store])
    return _engines[store]


def search_store(endpoints: Endpoints, search: str) -> SearchStore:
    """SearchStore for a reachable OpenSearch or Elasticsearch."""
    client = connect(search, endpoints)
    name = "OpenSearch" if search == "opensearch" else "Elasticsearch"
    _require(name, endpoints.search_url(search), lambda: client.client.info())
    return client


@pytest.fixture(params=STORES)
def engine(request: pytest.FixtureRequest, endpoints: Endpoints) -> Engine:
    """Each test using it runs on PostgreSQL and on MariaDB."""
    return store_engine(endpoints, request.param)


@pytest.fixture
def engine_for(endpoints: Endpoints) -> Callable[[str], Engine]:
    """`engine_for("postgres" | "mariadb")`."""
    return lambda store: store_engine(endpoints, store)


@pytest.fixture
def pg_engine(endpoints: Endpoints) -> Engine:
    return store_engine(endpoints, "postgres")


@pytest.fixture
def mysql_engine(endpoints: Endpoints) -> Engine:
    return store_engine(endpoints, "mariadb")


@pytest.fixture
def prefix() -> str:
    """A unique, URL-safe name prefix: each test writes only urns of its own."""
    return f"t{uuid.uuid4().hex[:10]}_"


class ConsumerPool:
    """Keeps at most one MaeConsumer of the group running (one per search backend in turn)."""

    def __init__(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints
        self.current: MaeConsumer | None = None
        self.search: str | None = None

    def get(self, search: str) -> MaeConsumer:
        if self.current is not None and (self.search != search or not self.current.running):
            self.stop()
        if self.current is None:
            store = search_store(self.endpoints, search)
            consumer = MaeConsumer(store, self.endpoints)
            consumer.start()
            self.current, self.search = consumer, search
        return self.current

    def stop(self) -> None:
        if self.current is not None:
            self.current.stop()
        self.current, self.search = None, None


@pytest.fixture(scope="module")
def consumer_pool(endpoints: Endpoints, kafka: str, registry: str) -> Iterator[ConsumerPool]:
    """Module-scoped: no consumer of the group outlives the module that started it."""
    pool = ConsumerPool(endpoints)
    yield pool
    pool.stop()


@pytest.fixture
def mae(consumer_pool: ConsumerPool) -> Iterator[Callable[[str], MaeConsumer]]:
    """`mae("opensearch")`: the running consumer for that backend; healthy again afterwards."""
    used: list[MaeConsumer] = []

    def get(search: str) -> MaeConsumer:
        consumer = consumer_pool.get(search)
        consumer.reset_faults()
        used.append(consumer)
        return consumer

    yield get
    for consumer in used:
        if consumer.running:
            consumer.reset_faults()
            consumer.drain(30)


@pytest.fixture
def writer_for(endpoints: Endpoints, kafka: str, registry: str) -> Iterator[Callable[[Engine], GmsWriter]]:
    """`writer_for(engine)`: a GmsWriter on that store (flushed and closed afterwards)."""
    made: list[GmsWriter] = []

    def make(engine: Engine) -> GmsWriter:
        writer = GmsWriter(engine, endpoints)
        made.append(writer)
        return writer

    yield make
    for writer in made:
        writer.close()


@pytest.fixture
def scratch_databases(endpoints: Endpoints, prefix: str) -> Iterator[dict[str, str]]:
    """Two throwaway databases (PostgreSQL, MariaDB), as SANDBOX_* overrides."""
    store_engine(endpoints, "postgres")  # both reachable, or fail naming the one that is not
    store_engine(endpoints, "mariadb")
    name = f"sbx_{prefix.rstrip('_')}"
    env = {}
    for var, url in (("SANDBOX_PG_URL", endpoints.pg_url), ("SANDBOX_MYSQL_URL", endpoints.mysql_url)):
        admin = make_engine(url).execution_options(isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
        admin.dispose()
        env[var] = make_url(url).set(database=name).render_as_string(hide_password=False)
    yield env
    for url, force in ((endpoints.pg_url, " WITH (FORCE)"), (endpoints.mysql_url, "")):
        admin = make_engine(url).execution_options(isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}{force}"))
        admin.dispose()


@pytest.fixture
def scratch_table(engine: Engine) -> Iterator[str]:
    """An empty copy of DataHub's aspect table (same DDL), dropped afterwards."""
    from sandbox.naming import ASPECT_TABLE

    create_schema(engine)
    name = f"scratch_{uuid.uuid4().hex[:10]}"
    like = (
        f"(LIKE {ASPECT_TABLE} INCLUDING ALL)"
        if engine.dialect.name == "postgresql"
        else f"LIKE {ASPECT_TABLE}"
    )
    with engine.begin() as conn:
        conn.execute(text(f"CREATE TABLE {name} {like}"))
    yield name
    with engine.begin() as conn:
        conn.execute(text(f"DROP TABLE {name}"))
