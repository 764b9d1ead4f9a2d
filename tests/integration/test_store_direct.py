"""The store read through the driver itself (a plain URL: backends/dbapi.py) answers every read
exactly as the store on an SQLAlchemy engine does, on PostgreSQL and on MariaDB, over urns that
test the SQL's text (a `%`, `:name`-like parts, quotes, a backslash, PAD SPACE neighbours) and
rows with JSON, NULLs and times; and its pooled connections survive what a server does to them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, text

from auditor.backends.dbapi import DirectConnection, DirectEngine, DirectError, direct_engine
from auditor.core.model import Selection
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.backends.store import MetadataStore

pytestmark = pytest.mark.integration

URNS = [
    "urn:li:dataset:(urn:li:dataPlatform:hive,db.100%_done,PROD)",
    "urn:li:dataset:(urn:li:dataPlatform:hive,db.t:name:x,PROD)",
    'urn:li:dataset:(urn:li:dataPlatform:hive,it\'s "quoted",PROD)',
    "urn:li:dataset:(urn:li:dataPlatform:hive,back\\slash,PROD)",
    "urn:li:tag:%(name)s",
    "urn:li:tag:b",
    "urn:li:tag:b ",
    "urn:li:tag:caf\u00e9 \u2603",
    "urn:li:dataHubUpgrade:restore-indices-v1",
]
ASPECTS = ("status", "tagProperties")


def _urns(engine: Engine) -> list[str]:
    """MariaDB's PAD SPACE key holds one of 'b' and 'b ' (DataHub's table could not hold both)."""
    return URNS if engine.dialect.name == "postgresql" else [u for u in URNS if u != "urn:li:tag:b "]


def _seed(engine: Engine, table: str) -> None:
    insert = text(
        f"INSERT INTO {table} (urn, aspect, version, metadata, systemmetadata, createdon, createdby) "
        "VALUES (:urn, :aspect, :version, :metadata, :system, :at, :by)"
    )
    rows = [
        {
            "urn": urn,
            "aspect": "dataHubUpgradeResult" if "Upgrade" in urn and aspect != "status" else aspect,
            "version": version,
            "metadata": json.dumps({"urn": urn, "v": version, "note": "50% :x 'q'"}),
            "system": None if i % 2 else json.dumps({"runId": f"r{i}"}),
            "at": datetime(2026, 1, 1, 12, 0, i) + timedelta(minutes=version),
            "by": "urn:li:corpuser:x" if version == 0 else "urn:li:corpuser:older",
        }
        for i, urn in enumerate(_urns(engine))
        for aspect in ASPECTS
        for version in (0, 1, 2)
    ]
    with engine.begin() as conn:
        conn.execute(insert, rows)


def _reads(store: MetadataStore) -> dict[str, object]:
    tags = Selection(entity_types=("tag",))
    listed = Selection(urns=("urn:li:tag:b", URNS[0], URNS[2]))
    return {
        "entities": [(e.urn, sorted(e.rows.items()), e.duplicated) for e in store.stream_entities()],
        "by urn": [e.urn for e in store.stream_entities(urns=("urn:li:tag:b", URNS[1]))],
        "like": [e.urn for e in store.stream_entities(urn_like="%100\\%%")],
        "range": [e.urn for e in store.stream_entities(urn_range=("urn:li:tag:", "urn:li:tag:c"))],
        "versions": {u: store.versions(u) for u in URNS},
        "fingerprints": store.fingerprints(tuple(URNS)),
        "digest": store.urns_digest(tuple(URNS)),
        "pages": store.page_rows(tags, None, 3) + store.page_rows(listed, None, 100),
        "counts": (store.count_rows(tags), store.count_rows(listed)),
        "weights": list(store.urn_weights()),
        "last write": store.last_write(),
        "changed": store.count_changed_since("tag", datetime(2026, 1, 1, 12, 0, 5, tzinfo=UTC)),
        "upgrades": store.upgrade_rows(),
    }


def test_the_driver_itself_reads_what_sqlalchemy_reads(engine: Engine, scratch_table: str) -> None:
    _seed(engine, scratch_table)
    url = engine.url.render_as_string(hide_password=False)
    direct = MetadataStore(url, scratch_table)
    assert isinstance(direct.engine, DirectEngine)
    through = MetadataStore(url, scratch_table, engine=engine)
    try:
        got, expected = _reads(direct), _reads(through)
        assert direct.ping() == through.ping()
    finally:
        direct.close()
    for what in expected:
        assert got[what] == expected[what], what
    assert len(got["entities"]) == len(_urns(engine))
    newest = (3, "urn:li:corpuser:x")  # three versions kept, version 0 written by x
    assert got["versions"][URNS[4]] == {"status": newest, "tagProperties": newest}
    assert [u for u, *_ in got["upgrades"]] == [URNS[-1]]


def test_datahubs_upgrade_records_are_read_in_one_query_not_a_cursor(
    engine: Engine, scratch_table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every scan, triage and repair reads them (DataHub's reindexes): a server-side cursor costs
    six round trips on PostgreSQL for a few rows."""
    _seed(engine, scratch_table)
    streamed: list[bool] = []
    options = DirectConnection.execution_options

    def recorded(
        self: DirectConnection, stream_results: bool = False, yield_per: int = 1000
    ) -> DirectConnection:
        streamed.append(stream_results)
        return options(self, stream_results, yield_per)

    monkeypatch.setattr(DirectConnection, "execution_options", recorded)
    store = MetadataStore(engine.url.render_as_string(hide_password=False), scratch_table)
    try:
        upgrades = [e.urn for e in store.stream_entities(("dataHubUpgrade",))]
        assert upgrades == [URNS[-1]] and streamed == []
        assert len(list(store.stream_entities(("tag",)))) > 1 and streamed == [True]  # others: a cursor
    finally:
        store.close()


def _idle_session(store: MetadataStore) -> int:
    """The server's id of the store's one idle pooled connection."""
    (raw,) = store.engine._idle
    return int(raw.info.backend_pid) if store.postgres else int(raw.thread_id())


def _kill(engine: Engine, session: int) -> None:
    """End one session, as a server restart or a failover would (no other test's session)."""
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": session}).scalar()
        else:
            conn.execute(text(f"KILL {session}"))


def test_a_pooled_connection_the_server_dropped_is_replaced(engine: Engine, scratch_table: str) -> None:
    _seed(engine, scratch_table)
    store = MetadataStore(engine.url.render_as_string(hide_password=False), scratch_table)
    try:
        before = store.versions("urn:li:tag:b")
        killed = _idle_session(store)
        _kill(engine, killed)
        assert store.versions("urn:li:tag:b") == before  # checked before use, opened again
        assert _idle_session(store) != killed  # a new connection, not the dead one
    finally:
        store.close()


def test_an_abandoned_stream_leaves_the_store_usable(engine: Engine, scratch_table: str) -> None:
    _seed(engine, scratch_table)
    store = MetadataStore(engine.url.render_as_string(hide_password=False), scratch_table)
    try:
        rows = store.stream_rows(batch=2)
        next(rows)
        rows.close()  # a reader that stops early (a triage that found what it needed)
        assert [e.urn for e in store.stream_entities(urns=(URNS[5],))] == [URNS[5]]
    finally:
        store.close()


def test_a_bad_query_is_a_clear_error_and_credentials_stay_out(engine: Engine) -> None:
    store = MetadataStore(engine.url.render_as_string(hide_password=False), "no_such_table_here")
    try:
        with pytest.raises(BackendUnavailable) as caught:
            store.versions("urn:li:tag:b")
    finally:
        store.close()
    said = str(caught.value)
    assert "no_such_table_here" in said and f":{engine.url.password}@" not in said, said


def test_a_statement_the_server_refused_keeps_its_connection(engine: Engine) -> None:
    """A triage probes each entity table of a release; a missing one closed the connection, and
    the next probe opened another (PyMySQL: a TLS context each, 20 ms). The server's refusal
    leaves the connection usable: rolled back, given back, used again."""
    direct = _direct(engine)
    opened = []
    real_open = direct._open
    direct._open = lambda: opened.append(1) or real_open()  # type: ignore[method-assign]
    try:
        for _ in range(3):
            with pytest.raises(DirectError) as caught, direct.connect() as conn:
                conn.execute("SELECT * FROM no_such_table_here WHERE 1 = 0")
            assert not caught.value.connection_invalidated
            with direct.connect() as conn:
                assert conn.execute("SELECT 1").scalar() == 1
        assert len(opened) == 1 and len(direct._idle) == 1
    finally:
        direct.dispose()


def _direct(engine: Engine) -> DirectEngine:
    made = direct_engine(engine.url.render_as_string(hide_password=False))
    assert made is not None
    return made
