"""A drill over OpenMetadata's entity tables (the sandbox's DDL from OM's baseline schema): between
two databases of the same engine (checksums inside the databases), and across engines (the JSON
compared by value outside them): identical copies pass, known alterations are reported exactly."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from sqlalchemy import Engine, text

from auditor.core.drill import RowChange
from auditor.drill.bisect import BisectOptions
from auditor.drill.run import Drill, DrillOptions
from auditor.drill.tables import table_specs
from auditor.settings import load_settings
from sandbox.openmetadata import indices
from sandbox.openmetadata.databases import scratch_database
from sandbox.openmetadata.ddl import create_schema
from sandbox.openmetadata.generator import seed
from sandbox.openmetadata.model import ENTITY_TYPES, entity_type
from sandbox.openmetadata.server import OmServer
from sandbox.openmetadata.store import OmStore
from sandbox.search import connect

pytestmark = pytest.mark.integration
TABLE = entity_type("table")
# the entity tables the sandbox creates (`--table openmetadata` also names ones it has not: chart_entity, ...)
SANDBOX_TABLES = sorted(et.table for et in ENTITY_TYPES.values())


def _entities(n: int) -> list[tuple[dict, str]]:
    out = []
    for i in range(n):
        fqn = f"svc.db.schema.t{i:04d}"
        body = {
            "id": str(uuid.UUID(int=i * 7919 + 1)),
            "name": f"t{i:04d}",
            "fullyQualifiedName": fqn,
            "updatedAt": 1767225600000 + i,
            "updatedBy": "admin",
            "deleted": i % 10 == 0,
            "description": f"table {i} — ünïcödé",
            "version": 0.1,
        }
        out.append((body, uuid.uuid5(uuid.NAMESPACE_URL, fqn).hex))
    return out


def _url(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=False)


@pytest.fixture(params=["postgres", "mariadb"])
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[Engine, Engine]]:
    with ExitStack() as stack:
        engines = [stack.enter_context(scratch_database(request.param, prefix="drill")) for _ in range(2)]
        rows = _entities(300)
        for engine in engines:
            create_schema(engine)
            with engine.begin() as conn:
                OmStore(engine).insert(conn, TABLE, rows)
        yield engines[0], engines[1]


def _drill(source: str, target: str, tables: list[str] | None = None) -> Drill:
    options = DrillOptions(
        tables=table_specs(tables or ["table_entity"], "openmetadata"),
        bisect=BisectOptions(segment_rows=100, factor=4, threshold=10),
    )
    return Drill(
        load_settings(None, env={}, store_url=source), load_settings(None, env={}, store_url=target), options
    )


def test_om_entity_tables_identical_then_altered(pair: tuple[Engine, Engine]) -> None:
    src, dst = pair
    clean = _drill(_url(src), _url(dst)).run()
    assert clean.passed and clean.rows == [] and clean.tables[0].source_rows == 300

    ids = [str(uuid.UUID(int=i * 7919 + 1)) for i in (5, 50, 150)]
    postgres = dst.dialect.name == "postgresql"
    patch = (
        "UPDATE table_entity SET json = jsonb_set(json, '{description}', '\"changed\"') WHERE id = :id"
        if postgres
        else "UPDATE table_entity SET json = JSON_SET(json, '$.description', 'changed') WHERE id = :id"
    )
    undelete = (
        "UPDATE table_entity SET json = jsonb_set(json, '{deleted}', 'false') WHERE id = :id"
        if postgres
        else "UPDATE table_entity SET json = JSON_SET(json, '$.deleted', false) WHERE id = :id"
    )
    with dst.begin() as conn:
        conn.execute(text(patch), {"id": ids[0]})
        conn.execute(text(undelete), {"id": ids[1]})  # entity 50 was soft-deleted
        conn.execute(text("DELETE FROM table_entity WHERE id = :id"), {"id": ids[2]})
    result = _drill(_url(src), _url(dst)).run()
    assert {(d.key, d.change, d.columns) for d in result.rows} == {
        ((ids[0],), RowChange.CHANGED, ("json",)),
        ((ids[1],), RowChange.CHANGED, ("json", "deleted")),
        ((ids[2],), RowChange.REMOVED, ()),
    }


def _copy_to(src: Engine, dst: Engine) -> int:
    """Every entity row of `src` (PostgreSQL) into `dst` (MariaDB) as a restore through OM's API
    would write it: compact JSON, keys in another order, non-ASCII as \\u escapes."""
    copied = 0
    for et in ENTITY_TYPES.values():
        with src.connect() as conn:
            rows = conn.execute(text(f"SELECT json::text, {et.hash_column} FROM {et.table}")).all()
        if not rows:
            continue
        params = [
            {"j": json.dumps(dict(reversed(json.loads(j).items())), separators=(",", ":")), "h": h}
            for j, h in rows
        ]
        with dst.begin() as conn:
            conn.execute(text(f"INSERT INTO {et.table} (json, {et.hash_column}) VALUES (:j, :h)"), params)
        copied += len(rows)
    return copied


@pytest.fixture
def engines() -> Iterator[tuple[Engine, Engine]]:
    """A PostgreSQL catalog seeded by the sandbox's OpenMetadata world (its docs in an index of
    its own, deleted after) and a MariaDB copy of its rows."""
    search = connect("opensearch")
    alias = f"drill{uuid.uuid4().hex[:8]}"
    with (
        scratch_database("postgres", prefix="drill") as pg,
        scratch_database("mariadb", prefix="drill") as maria,
    ):
        for engine in (pg, maria):
            create_schema(engine)
        indices.create_indices(search, alias)
        try:
            catalog = seed(OmServer(pg, search, alias), 120, seed=11)
            odd = catalog.of_type("table")[0].id
            with pg.begin() as conn:  # non-ASCII and numbers PostgreSQL rewrites (1e3 -> 1000)
                conn.execute(
                    text("UPDATE table_entity SET json = json || CAST(:patch AS jsonb) WHERE id = :id"),
                    {"id": odd, "patch": '{"description": "naïve ☃ 数据 😀 \\"q\\"", "retention": 1e3}'},
                )
            assert _copy_to(pg, maria) == 120
            yield pg, maria
        finally:
            indices.delete_indices(search, alias)


def _patch_maria(maria: Engine, table: str, entity_id: str, path: str, value: str) -> None:
    with maria.begin() as conn:
        conn.execute(
            text(f"UPDATE {table} SET json = JSON_SET(json, '{path}', JSON_EXTRACT(:v, '$')) WHERE id = :id"),
            {"id": entity_id, "v": value},
        )


def test_om_catalog_across_engines_identical_then_altered(engines: tuple[Engine, Engine]) -> None:
    pg, maria = engines
    clean = _drill(_url(pg), _url(maria), SANDBOX_TABLES).run()
    assert clean.passed and clean.rows == [], [(d.key, d.columns, d.paths) for d in clean.rows]
    assert sum(t.source_rows for t in clean.tables) == 120
    assert [t.source_rows for t in clean.tables] == [t.target_rows for t in clean.tables]

    with pg.connect() as conn:
        ids = [str(r[0]) for r in conn.execute(text('SELECT id FROM table_entity ORDER BY id COLLATE "C"'))]
        deleted = str(conn.execute(text('SELECT id FROM user_entity ORDER BY id COLLATE "C"')).first()[0])
    described, flagged, renamed, removed, rewritten = ids[1], ids[2], ids[3], ids[4], ids[5]
    _patch_maria(maria, "table_entity", described, "$.description", '"changed"')
    _patch_maria(maria, "table_entity", flagged, "$.deleted", "true")
    _patch_maria(maria, "table_entity", renamed, "$.name", '"ünï-名前 😀"')
    # the same values written differently: 0.1 as 1E-1, a key order and escapes of its own
    _patch_maria(maria, "table_entity", rewritten, "$.version", "1E-1")
    added = (
        "FFFFFFFF-0000-4000-8000-000000000000"  # uppercase: sorts before 'a' as bytes, after as unicode_ci
    )
    with maria.begin() as conn:
        conn.execute(
            text("UPDATE table_entity SET json = JSON_SET(json, '$.version', 0.1) WHERE id = :id"),
            {"id": ids[6]},
        )
        conn.execute(text("DELETE FROM table_entity WHERE id = :id"), {"id": removed})
        conn.execute(text("DELETE FROM user_entity WHERE id = :id"), {"id": deleted})
        conn.execute(
            text("INSERT INTO table_entity (json, fqnHash) VALUES (:j, 'x.y.z.added')"),
            {
                "j": json.dumps(
                    {
                        "id": added,
                        "name": "added",
                        "fullyQualifiedName": "x.y.z.added",
                        "updatedAt": 1,
                        "updatedBy": "admin",
                        "deleted": False,
                        "version": 0.1,
                    }
                )
            },
        )
    result = _drill(_url(pg), _url(maria), SANDBOX_TABLES).run()
    assert not result.passed
    assert {(d.table, d.key, d.change, d.columns, d.paths) for d in result.rows} == {
        ("table_entity", (described,), RowChange.CHANGED, ("json",), ("json.description",)),
        ("table_entity", (flagged,), RowChange.CHANGED, ("json", "deleted"), ("json.deleted",)),
        ("table_entity", (renamed,), RowChange.CHANGED, ("json",), ("json.name",)),
        ("table_entity", (removed,), RowChange.REMOVED, (), ()),
        ("table_entity", (added,), RowChange.ADDED, (), ()),
        ("user_entity", (deleted,), RowChange.REMOVED, (), ()),
    }
    by_key = {d.key: d for d in result.rows}
    assert by_key[(renamed,)].target["json"] == '{"$.name":"ünï-名前 😀"}'
    assert by_key[(flagged,)].source == {"json": '{"$.deleted":false}', "deleted": "0"}
    assert by_key[(flagged,)].target == {"json": '{"$.deleted":true}', "deleted": "1"}

    # the other way round: what was added is removed
    back = _drill(_url(maria), _url(pg), ["table_entity"]).run()
    assert {(d.key, d.change) for d in back.rows if d.change is not RowChange.CHANGED} == {
        ((removed,), RowChange.ADDED),
        ((added,), RowChange.REMOVED),
    }
    assert {d.key for d in back.rows if d.change is RowChange.CHANGED} == {
        (described,),
        (flagged,),
        (renamed,),
    }
