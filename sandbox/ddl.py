"""DataHub's `metadata_aspect_v2` table for MySQL/MariaDB and PostgreSQL: create and drop."""

from __future__ import annotations

from sqlalchemy import Engine, text

from sandbox.naming import ASPECT_TABLE

# datahub-upgrade SqlSetup (MySQL), newer form: timestamp(6) was datetime(6) in the original
# init.sql; we keep datetime(6) (what most deployments carry) and add the newer indexes.
MYSQL_DDL = (
    f"""
CREATE TABLE IF NOT EXISTS {ASPECT_TABLE} (
  urn            varchar(500) NOT NULL,
  aspect         varchar(200) NOT NULL,
  version        bigint(20) NOT NULL,
  metadata       longtext NOT NULL,
  systemmetadata longtext,
  createdon      datetime(6) NOT NULL,
  createdby      varchar(255) NOT NULL,
  createdfor     varchar(255),
  CONSTRAINT pk_metadata_aspect_v2 PRIMARY KEY (urn, aspect, version),
  INDEX timeIndex (createdon),
  INDEX urnIndex (urn),
  INDEX aspectIndex (aspect),
  INDEX versionIndex (version)
) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
""",
)

# docker/postgres-setup/init.sql
POSTGRES_DDL = (
    f"""
CREATE TABLE IF NOT EXISTS {ASPECT_TABLE} (
  urn            varchar(500) NOT NULL,
  aspect         varchar(200) NOT NULL,
  version        bigint NOT NULL,
  metadata       text NOT NULL,
  systemmetadata text,
  createdon      timestamp NOT NULL,
  createdby      varchar(255) NOT NULL,
  createdfor     varchar(255),
  CONSTRAINT pk_metadata_aspect_v2 PRIMARY KEY (urn, aspect, version)
)
""",
    f"CREATE INDEX IF NOT EXISTS timeIndex ON {ASPECT_TABLE} (createdon)",
)


def is_mysql(engine: Engine) -> bool:
    """True for MySQL and MariaDB engines."""
    return engine.dialect.name in ("mysql", "mariadb")


def ddl_statements(engine: Engine) -> tuple[str, ...]:
    """The CREATE statements for this engine's dialect."""
    if is_mysql(engine):
        return MYSQL_DDL
    if engine.dialect.name == "postgresql":
        return POSTGRES_DDL
    raise ValueError(f"unsupported database dialect {engine.dialect.name!r}")


def create_schema(engine: Engine) -> None:
    """Create `metadata_aspect_v2` and its indexes if missing (idempotent)."""
    with engine.begin() as conn:
        for statement in ddl_statements(engine):
            conn.execute(text(statement))


def drop_schema(engine: Engine) -> None:
    """Drop `metadata_aspect_v2` if it exists."""
    with engine.begin() as conn:
        conn.execute(text(f"DROP TABLE IF EXISTS {ASPECT_TABLE}"))


def truncate(engine: Engine) -> None:
    """Delete every row of `metadata_aspect_v2` (keeps the table)."""
    with engine.begin() as conn:
        conn.execute(text(f"DELETE FROM {ASPECT_TABLE}"))
