"""SQLAlchemy engines for the sandbox's PostgreSQL and MariaDB."""

from __future__ import annotations

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import make_url

from sandbox.endpoints import Endpoints


def make_engine(url: str) -> Engine:
    """Engine with pre-ping; MySQL/MariaDB connections forced to utf8mb4."""
    parsed = make_url(url)
    if parsed.get_backend_name() in ("mysql", "mariadb") and "charset" not in parsed.query:
        parsed = parsed.update_query_dict({"charset": "utf8mb4"})
    return create_engine(parsed, pool_pre_ping=True)


def engine_for(store: str, endpoints: Endpoints | None = None) -> Engine:
    """Engine for `postgres` or `mariadb` at the sandbox's address."""
    return make_engine((endpoints or Endpoints.from_env()).store_url(store))
