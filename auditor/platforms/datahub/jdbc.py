"""DataHub's JDBC URL (GMS's EBEAN_DATASOURCE_URL, EBEAN_DATASOURCE_USERNAME, _DRIVER) as a
SQLAlchemy URL: the shared reading (auditor/backends/jdbc.py) under DataHub's names."""

from __future__ import annotations

from auditor.backends.jdbc import JdbcNames, StoreTarget, env_bool
from auditor.backends.jdbc import jdbc_to_sqlalchemy as _read

__all__ = ["NAMES", "StoreTarget", "env_bool", "jdbc_to_sqlalchemy"]

NAMES = JdbcNames("EBEAN_DATASOURCE_URL", "EBEAN_DATASOURCE_USERNAME", "datahub", "DataHub")


def jdbc_to_sqlalchemy(jdbc: str, username: str | None = None, driver: str | None = None) -> StoreTarget:
    """`jdbc:mysql://h:3306/db?useSSL=true` -> `mysql+pymysql://USER@h:3306/db?...`, DataHub's names."""
    return _read(jdbc, username, driver, NAMES)
