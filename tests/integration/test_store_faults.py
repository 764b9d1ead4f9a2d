"""The row stream when the database connection goes away mid-read (a killed session): it
resumes after the last row it handed out, or fails clearly; it is never silently short. Both
ways the store reads: through the driver itself (a plain URL) and through an SQLAlchemy engine."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from datetime import datetime

import pytest
from sqlalchemy import Engine, text

from auditor.backends.dbapi import DirectEngine
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.backends import store as store_module
from auditor.platforms.datahub.backends.store import MetadataStore

pytestmark = pytest.mark.integration

N = 12_000  # 12,000 rows of about 2 KiB: more than a socket buffer holds, more than one fetch


@pytest.fixture(autouse=True)
def finalise_lost_connections() -> Iterator[None]:
    """The killed connection's driver objects are collected before the next test, not during
    pytest's own teardown (CPython 3.11 fails an AST compile if a finaliser raises inside it)."""
    yield
    gc.collect()


@pytest.fixture(params=["direct", "sqlalchemy"])
def store_of(request: pytest.FixtureRequest, engine: Engine) -> Iterator[Callable[[str], MetadataStore]]:
    """`store_of(table)`: the store as `open_store` makes it for a plain URL (the driver itself),
    or on the SQLAlchemy engine handed in."""
    made: list[MetadataStore] = []

    def make(table: str) -> MetadataStore:
        url = engine.url.render_as_string(hide_password=False)
        if request.param == "direct":
            store = MetadataStore(url, table)
            assert isinstance(store.engine, DirectEngine)
        else:
            store = MetadataStore(url, table, engine=engine)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def table(engine: Engine, scratch_table: str) -> str:
    padding = "x" * 2000
    rows = [
        {
            "urn": f"urn:li:tag:t{i:06d}",
            "metadata": json.dumps({"name": f"t{i}", "description": padding}),
            "at": datetime(2026, 1, 1),
        }
        for i in range(N)
    ]
    with engine.begin() as conn:
        conn.execute(
            text(
                f"INSERT INTO {scratch_table} (urn, aspect, version, metadata, createdon, createdby) "
                "VALUES (:urn, 'tagProperties', 0, :metadata, :at, 'urn:li:corpuser:x')"
            ),
            rows,
        )
    return scratch_table


def kill_reader(engine: Engine, table: str) -> int:
    """End the session that is reading `table`, as an operator or a failover would."""
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            # a server-side cursor's session shows its last FETCH, not the query
            sql = (
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                f"AND (query LIKE '%FROM {table} %' OR query LIKE 'FETCH FORWARD %')"
            )
            return len(conn.execute(text(sql)).fetchall())
        ids = conn.execute(
            text(
                "SELECT id FROM information_schema.processlist "
                f"WHERE info LIKE '%FROM {table} %' AND id <> CONNECTION_ID()"
            )
        ).fetchall()
        for (session,) in ids:
            conn.execute(text(f"KILL {int(session)}"))
        return len(ids)


def test_a_killed_session_is_resumed_after_the_last_row(
    engine: Engine, table: str, store_of: Callable[[str], MetadataStore]
) -> None:
    store = store_of(table)
    rows = store.stream_rows()
    try:
        first = [next(rows) for _ in range(500)]
        assert kill_reader(engine, table) == 1
        read = first + list(rows)
    finally:
        rows.close()  # an open cursor would hold the table the fixture drops
    keys = [(r[0], r[1]) for r in read]
    assert len(read) == N and keys == sorted(set(keys))  # every row once, in order: no gap, no repeat
    assert store.resumed == 1


def test_past_the_retries_the_read_fails_clearly(
    engine: Engine, table: str, monkeypatch: pytest.MonkeyPatch, store_of: Callable[[str], MetadataStore]
) -> None:
    monkeypatch.setattr(store_module, "RESUME_ATTEMPTS", 0)
    store = store_of(table)
    rows = store.stream_rows()
    try:
        for _ in range(500):
            next(rows)
        assert kill_reader(engine, table) == 1
        with pytest.raises(BackendUnavailable) as caught:
            for _ in rows:
                pass
    finally:
        rows.close()
    said = str(caught.value)
    secret = f"{engine.url.username}:{engine.url.password}@"  # the sandbox's password is its user name
    assert "metadata store" in said and ":***@" in said and secret not in said, said
