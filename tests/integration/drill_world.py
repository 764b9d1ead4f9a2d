"""Two throwaway databases (PostgreSQL + MariaDB) holding the same DataHub-shaped aspect table."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from sandbox.database import make_engine
from sandbox.ddl import create_schema
from sandbox.endpoints import Endpoints
from sandbox.generator import generate
from sandbox.mcl import aspect_json

INSERT = (
    "INSERT INTO metadata_aspect_v2 (urn, aspect, version, metadata, systemmetadata, createdon, "
    "createdby, createdfor) "
    "VALUES (:urn, :aspect, :version, :metadata, :sm, :createdon, :createdby, :createdfor)"
)
# byte order differs from PAD SPACE order for some; non-ASCII; a quote, a backslash, a pipe
ODD_URNS = (
    "urn:li:tag:a",
    "urn:li:tag:a\t",
    "urn:li:tag:a b",
    "urn:li:tag:a\x01",
    "urn:li:tag:b ",
    "urn:li:tag:数据😀",
    "urn:li:tag:Ä-é-\u0301",
    "urn:li:tag:it's|a\\path",
    "urn:li:tag:~tilde",
)


def catalog_rows(n: int, prefix: str = "") -> list[dict[str, Any]]:
    """The sandbox generator's catalog as table rows (version 0, and a version 1 for some),
    plus the odd urns: createdon with microseconds, NULL and non-NULL systemmetadata."""
    start = datetime(2026, 3, 1, 12, 0, 0, 123456)
    rows = []
    for i, (urn, aspect, value) in enumerate(generate(n, seed=7, prefix=prefix)):
        at = start + timedelta(seconds=i, microseconds=i * 7)
        sm = {"lastObserved": 1772366400000 + i, "runId": "no-run-id-provided", "version": "1"}
        row = dict(
            urn=urn,
            aspect=aspect,
            version=0,
            metadata=aspect_json(value),
            sm=aspect_json(sm),
            createdon=at,
            createdby="urn:li:corpuser:datahub",
            createdfor=None,
        )
        rows.append(row)
        if i % 5 == 0:
            rows.append({**row, "version": 1, "sm": None, "createdon": at - timedelta(days=1)})
    for j, urn in enumerate(ODD_URNS):
        rows.append(
            dict(
                urn=urn,
                aspect="tagProperties",
                version=0,
                metadata=json.dumps({"name": urn, "description": 'naïve ☃ "q"'}, ensure_ascii=False),
                sm=None,
                createdon=start + timedelta(microseconds=j),
                createdby="urn:li:corpuser:x",
                createdfor="urn:li:corpuser:ü",
            )
        )
    return rows


@dataclass
class DrillWorld:
    """The two databases: their URLs and engines."""

    name: str
    pg_url: str
    mysql_url: str
    pg: Engine
    mysql: Engine

    def insert(self, engine: Engine, rows: list[dict[str, Any]]) -> None:
        with engine.begin() as conn:
            for i in range(0, len(rows), 2000):
                conn.execute(text(INSERT), rows[i : i + 2000])

    def seed(self, rows: list[dict[str, Any]]) -> None:
        for engine in (self.pg, self.mysql):
            self.insert(engine, rows)

    def execute(self, engine: Engine, sql: str, **params: Any) -> int:
        with engine.begin() as conn:
            return conn.execute(text(sql), params).rowcount


@contextmanager
def drill_world(endpoints: Endpoints) -> Iterator[DrillWorld]:
    """Creates `drill_<uuid8>` on both servers with DataHub's DDL; drops both afterwards."""
    name = f"drill_{uuid.uuid4().hex[:8]}"
    urls = {}
    for url in (endpoints.pg_url, endpoints.mysql_url):
        admin = make_engine(url).execution_options(isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
        admin.dispose()
        urls[url] = make_url(url).set(database=name).render_as_string(hide_password=False)
    pg, mysql = make_engine(urls[endpoints.pg_url]), make_engine(urls[endpoints.mysql_url])
    try:
        create_schema(pg)
        create_schema(mysql)
        yield DrillWorld(name, urls[endpoints.pg_url], urls[endpoints.mysql_url], pg, mysql)
    finally:
        pg.dispose()
        mysql.dispose()
        for url, force in ((endpoints.pg_url, " WITH (FORCE)"), (endpoints.mysql_url, "")):
            admin = make_engine(url).execution_options(isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {name}{force}"))
            admin.dispose()
