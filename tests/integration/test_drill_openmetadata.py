"""A drill over OpenMetadata's entity tables (the sandbox's DDL from OM's baseline schema), between
two databases of the same engine: identical copies pass, known alterations are reported exactly;
across engines the JSON column has no common text and the drill says so (exit 2)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from sqlalchemy import Engine, text

from auditor.core.drill import RowChange
from auditor.drill.bisect import BisectOptions
from auditor.drill.run import Drill, DrillOptions
from auditor.drill.spec import table_specs
from auditor.errors import ConfigError
from auditor.settings import load_settings
from sandbox.openmetadata.databases import scratch_database
from sandbox.openmetadata.ddl import create_schema
from sandbox.openmetadata.model import entity_type
from sandbox.openmetadata.store import OmStore

pytestmark = pytest.mark.integration
TABLE = entity_type("table")


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


def _drill(source: str, target: str) -> Drill:
    options = DrillOptions(
        tables=table_specs(["table_entity"]), bisect=BisectOptions(segment_rows=100, factor=4, threshold=10)
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


def test_om_tables_across_engines_are_refused() -> None:
    with (
        scratch_database("postgres", prefix="drill") as pg,
        scratch_database("mariadb", prefix="drill") as maria,
    ):
        for engine in (pg, maria):
            create_schema(engine)
        with pytest.raises(ConfigError, match="same engine"):
            _drill(_url(pg), _url(maria)).run()
