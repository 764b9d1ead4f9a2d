"""PostgreSQL's json and jsonb columns read as text, decoded by the caller with a guarded decoder.

psycopg decodes a jsonb value while the row is fetched, with the standard library's
recursive decoder: one row nested deeper than Python's recursion limit raises RecursionError
inside the result stream and ends the whole read. Read as text, the row reaches the code
that knows how to call it unreadable (auditor/core/json_guard.py) and the stream goes on.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine


def json_as_text(engine: Engine) -> None:
    """Every connection of this (PostgreSQL + psycopg) engine returns json and jsonb as text."""
    if engine.dialect.name != "postgresql" or engine.dialect.driver != "psycopg":
        return

    @event.listens_for(engine, "connect")
    def _text_loaders(dbapi_connection: Any, _record: Any) -> None:
        from psycopg.types.string import TextLoader

        for name in ("json", "jsonb"):
            dbapi_connection.adapters.register_loader(name, TextLoader)
