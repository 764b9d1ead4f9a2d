"""A repair's keyset pages on PostgreSQL: each page is an index range scan of the primary key (not
a sequential scan and a sort of the whole table under COLLATE "C", which made a walk of the table
grow with its square), and a walk visits every version-0 row once, resumable from any key, also
where the column's collation is not byte order (DataHub's PostgreSQL is often en_US.utf8; here an
ICU collation that orders case and punctuation unlike bytes)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event, text

from auditor.core.model import Selection
from auditor.platforms.datahub.backends.store import MetadataStore

pytestmark = pytest.mark.integration

NAMES = ["a", "B", "b", "_x", "-x", "a b", "ab", "a-b", "a_b", "é", "Z", "z", "数据", "😀", "A"]


@pytest.fixture(params=["C.UTF-8 (byte order)", "und-x-icu (not byte order)"])
def pg_table(request: pytest.FixtureRequest, pg_engine: Engine) -> Iterator[tuple[str, Engine]]:
    collate = ' COLLATE "und-x-icu"' if "icu" in request.param else ""
    name = f"pages_{'icu' if collate else 'c'}_{uuid.uuid4().hex[:10]}"
    ddl = (
        f"CREATE TABLE {name} (urn varchar(500){collate} NOT NULL, aspect varchar(200){collate} NOT NULL, "
        "version bigint NOT NULL, metadata text NOT NULL, systemmetadata text, createdon timestamp NOT NULL, "
        "createdby varchar(255) NOT NULL, createdfor varchar(255), PRIMARY KEY (urn, aspect, version))"
    )
    rows = [
        {"urn": f"urn:li:dataset:(urn:li:dataPlatform:hive,{n},PROD)", "aspect": a, "v": v}
        for n in NAMES
        for a in ("status", "Status", "datasetProperties")
        for v in (0, 1)
    ]
    with pg_engine.begin() as conn:
        conn.execute(text(ddl))
        conn.execute(
            text(
                f"INSERT INTO {name} (urn, aspect, version, metadata, createdon, createdby) "
                "VALUES (:urn, :aspect, :v, '{}', :at, 'urn:li:corpuser:x')"
            ),
            [{**r, "at": datetime(2026, 1, 1)} for r in rows],
        )
    yield name, pg_engine
    with pg_engine.begin() as conn:
        conn.execute(text(f"DROP TABLE {name}"))


def walk(store: MetadataStore, after: tuple[str, str] | None, limit: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    while page := store.page_rows(Selection(), after, limit):
        out += [(u, r.aspect) for u, r in page]
        after = (page[-1][0], page[-1][1].aspect)
    return out


def test_a_walk_visits_every_row_once_and_resumes_from_any_key(pg_table: tuple[str, Engine]) -> None:
    table, engine = pg_table
    store = MetadataStore(engine.url.render_as_string(hide_password=False), table, engine=engine)
    expected = {
        (f"urn:li:dataset:(urn:li:dataPlatform:hive,{n},PROD)", a)
        for n in NAMES
        for a in ("status", "Status", "datasetProperties")
    }
    for limit in (1, 4, 7, 1000):
        seen = walk(store, None, limit)
        assert len(seen) == len(expected) and set(seen) == expected, limit
        for cut in (3, 17, 30):  # a run stopped after `cut` rows resumes with no gap, nothing twice
            rest = walk(store, seen[cut - 1], limit)
            assert seen[:cut] + rest == seen, (limit, cut)


def test_the_columns_order_is_used_as_it_is_only_where_it_is_byte_order(pg_table: tuple[str, Engine]) -> None:
    """C.UTF-8 (the stack's) sorts as bytes: no COLLATE "C", the primary key serves the scan's
    stream; an ICU collation does not: COLLATE "C", and the stream is still in byte order."""
    table, engine = pg_table
    store = MetadataStore(engine.url.render_as_string(hide_password=False), table, engine=engine)
    assert store.sorts_as_bytes() is ("_icu_" not in table)
    keys = [(urn, aspect) for urn, aspect, *_ in store.stream_rows()]
    assert keys == sorted(keys) and len(keys) == len(NAMES) * 3  # code-point order, version 0 only


def test_each_page_is_an_index_range_scan(pg_table: tuple[str, Engine]) -> None:
    """In both collations: byte order served by the key as it is, another by the key's own order."""
    table, pg_engine = pg_table
    store = MetadataStore(pg_engine.url.render_as_string(hide_password=False), table, engine=pg_engine)
    sent: list[tuple[str, Any]] = []  # the page's own statement and parameters, as the driver got them

    def capture(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001
        if statement.lstrip().startswith("SELECT urn, aspect, metadata"):
            sent.append((statement, parameters))

    event.listen(pg_engine, "before_cursor_execute", capture)
    try:
        store.page_rows(Selection(), ("urn:li:dataset:", ""), 10)
    finally:
        event.remove(pg_engine, "before_cursor_execute", capture)
    ((sql, params),) = sent
    with pg_engine.connect() as conn:
        conn.execute(text("SET enable_seqscan = off"))  # a tiny table: make the planner show its choice
        plan = "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + sql, params))
    assert "Index" in plan and "Sort" not in plan, plan


def test_a_checkpoint_of_another_order_is_not_resumed(pg_table: tuple[str, Engine], tmp_path: Path) -> None:
    """Pages of the ICU table walk its own collation ("collation"), of a urn list byte order; a
    checkpoint from a walk in the other order (an older version's: byte order) is refused, not
    resumed from a key that would skip rows."""
    from auditor.backends.protocols import Capability
    from auditor.errors import ConfigError
    from auditor.rebuild.checkpoint import Checkpoint
    from auditor.rebuild.datahub.rows import RowSource
    from auditor.rebuild.datahub.run import RebuildBackends, _replay
    from auditor.rebuild.request import RebuildRequest

    table, engine = pg_table
    store = MetadataStore(engine.url.render_as_string(hide_password=False), table, engine=engine)
    byte_order = "_icu_" not in table
    assert RowSource(store, Selection()).order() == ("bytes" if byte_order else "collation")
    assert RowSource(store, Selection(urns=("urn:li:corpuser:a",))).order() == "bytes"
    if byte_order:
        return
    old = Checkpoint("replay", "x", last_urn="urn:li:dataset:(urn:li:dataPlatform:hive,a,PROD)")

    class NoProducer:  # a producer that is never asked to produce: the checkpoint is refused first
        capabilities = frozenset({Capability.PRODUCE})

        def close(self) -> None:
            pass

    backends = RebuildBackends(None, store, lambda: NoProducer(), lambda: None, "t")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="walked the rows in bytes order"):
        _replay(backends, None, None, RebuildRequest("replay"), [Selection()], old, tmp_path / "ck.json")  # type: ignore[arg-type]
