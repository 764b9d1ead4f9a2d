"""Scratch databases on the sandbox's servers, so each test owns its OM schema."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from sandbox.database import make_engine
from sandbox.endpoints import Endpoints

_SAFE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


def _server_url(store: str, endpoints: Endpoints, database: str) -> str:
    return make_url(endpoints.store_url(store)).set(database=database).render_as_string(hide_password=False)


def create_database(store: str, name: str, endpoints: Endpoints | None = None) -> Engine:
    """CREATE DATABASE `name` on `postgres` or `mariadb`; returns an engine on it."""
    if not _SAFE.match(name):
        raise ValueError(f"database name {name!r} must match {_SAFE.pattern}")
    endpoints = endpoints or Endpoints.from_env()
    admin_db = "postgres" if store in ("postgres", "postgresql", "pg") else "mysql"
    admin = make_engine(_server_url(store, endpoints, admin_db))
    try:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
    finally:
        admin.dispose()
    return make_engine(_server_url(store, endpoints, name))


def drop_database(store: str, name: str, endpoints: Endpoints | None = None) -> None:
    """DROP DATABASE `name` (connections to it are closed first on PostgreSQL)."""
    if not _SAFE.match(name):
        raise ValueError(f"database name {name!r} must match {_SAFE.pattern}")
    endpoints = endpoints or Endpoints.from_env()
    postgres = store in ("postgres", "postgresql", "pg")
    admin = make_engine(_server_url(store, endpoints, "postgres" if postgres else "mysql"))
    try:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            if postgres:
                conn.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = :d AND pid <> pg_backend_pid()"
                    ),
                    {"d": name},
                )
            conn.execute(text(f"DROP DATABASE IF EXISTS {name}"))
    finally:
        admin.dispose()


@contextmanager
def scratch_database(store: str, endpoints: Endpoints | None = None, prefix: str = "om") -> Iterator[Engine]:
    """A fresh database `<prefix>_<uuid8>` for the block, dropped after it."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    engine = create_database(store, name, endpoints)
    try:
        yield engine
    finally:
        engine.dispose()
        drop_database(store, name, endpoints)
