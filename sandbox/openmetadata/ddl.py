"""OpenMetadata's entity tables for MariaDB 10.11 and PostgreSQL: create and drop.

Transcribed from bootstrap/sql/migrations/baseline/{mysql,postgres}/schema.sql (the frozen
baseline covering every native migration below 2.0.0). MariaDB 10.11 differs from MySQL 8 in
three places, adapted here and nowhere else:
  1. no NOT NULL on generated columns (MariaDB's grammar refuses it): dropped;
  2. no PRIMARY KEY on a generated column (error 1903): `id` gets a UNIQUE KEY instead;
  3. `deleted tinyint(1) AS (json_extract(json,'$.deleted'))` fails: MariaDB's json_extract
     returns the text 'true', which is no integer (error 1366) -> `json_extract(...) = true`
     (1/0, NULL when absent, as MySQL's cast gives); and utf8mb4_0900_ai_ci does not exist
     -> utf8mb4_unicode_ci.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, text

from sandbox.openmetadata import ddl_reindex
from sandbox.openmetadata.model import ENTITY_TYPES, EntityType

MY_TAIL = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci"
ASCII = "CHARACTER SET ascii COLLATE ascii_bin"


def _my(col: str, sqltype: str, path: str, kind: str = "VIRTUAL") -> str:
    return (
        f"  `{col}` {sqltype} GENERATED ALWAYS AS "
        f"(json_unquote(json_extract(`json`,_utf8mb4'$.{path}'))) {kind}"
    )


def _pg(col: str, sqltype: str, key: str, not_null: bool = True) -> str:
    tail = " NOT NULL" if not_null else ""
    if sqltype == "bigint":
        expr = f"((json ->> '{key}'::text))::bigint"
    elif sqltype == "boolean":
        expr = f"((json ->> '{key}'::text))::boolean"
    else:
        expr = f"(json ->> '{key}'::text)"
    return f"    {col} {sqltype} GENERATED ALWAYS AS ({expr}) STORED{tail}"


MY_DELETED = (
    "  `deleted` tinyint(1) GENERATED ALWAYS AS (json_extract(`json`,_utf8mb4'$.deleted') = true) VIRTUAL"
)
PG_DELETED = _pg("deleted", "boolean", "deleted", not_null=False)


def _mysql_entity_table(et: EntityType) -> str:
    t = et.table
    cols = [
        _my("id", "varchar(36)", "id", "STORED"),
        "  `json` json NOT NULL",
        _my("updatedAt", "bigint unsigned", "updatedAt"),
        _my("updatedBy", "varchar(256)", "updatedBy"),
        MY_DELETED,
    ]
    if et.hash_column == "nameHash":
        cols.append(f"  `nameHash` varchar(256) {ASCII} DEFAULT NULL")
    else:
        cols.append(f"  `fqnHash` varchar({et.hash_length}) {ASCII} DEFAULT NULL")
    cols.append(_my("name", "varchar(256)", "name"))
    keys = [
        "  UNIQUE KEY `id` (`id`)",
        f"  UNIQUE KEY `{et.hash_column}` (`{et.hash_column}`)",
        f"  KEY `{t}_name_index` (`name`)",
        f"  KEY `idx_{t}_deleted` (`deleted`)",
        f"  KEY `idx_{t}_updated_at_id` (`updatedAt` DESC,`id` DESC)",
    ]
    if t == "dbservice_entity":
        cols.append(_my("serviceType", "varchar(256)", "serviceType"))
    elif t == "table_entity":
        cols.append(
            f"  `databaseSchemaHash` varchar(768) {ASCII} GENERATED ALWAYS AS "
            "(substring_index(`fqnHash`,_utf8mb4'.',3)) STORED"
        )
        keys.append("  KEY `idx_table_entity_schema_listing` (`deleted`,`databaseSchemaHash`,`name`,`id`)")
    elif t == "tag":
        cols.append(
            "  `classificationHash` varchar(255) GENERATED ALWAYS AS "
            "(substring_index(`fqnHash`,_utf8mb4'.',1)) STORED"
        )
        keys.append("  KEY `idx_tag_classification_hash_deleted` (`classificationHash`,`deleted`)")
    elif t == "glossary_term_entity":
        cols.append(_my("displayName", "varchar(256)", "displayName", "STORED"))
        cols.append(_my("entityStatus", "varchar(32)", "entityStatus", "STORED"))
    elif t == "team_entity":
        cols.append(_my("teamType", "varchar(64)", "teamType"))
    elif t == "user_entity":
        cols.append(_my("email", "varchar(256)", "email"))
        cols.append(_my("deactivated", "varchar(8)", "deactivated"))
        cols.append(
            "  `isBot` tinyint(1) GENERATED ALWAYS AS (json_extract(`json`,_utf8mb4'$.isBot') = true) VIRTUAL"
        )
        keys.append("  UNIQUE KEY `email` (`email`)")
    if t != "tag":
        cols.append(_my("impersonatedBy", "varchar(256)", "impersonatedBy"))
    return f"CREATE TABLE IF NOT EXISTS `{t}` (\n" + ",\n".join(cols + keys) + f"\n) {MY_TAIL}"


def _pg_entity_table(et: EntityType) -> tuple[str, ...]:
    t = et.table
    cols = [
        _pg("id", "character varying(36)", "id"),
        "    json jsonb NOT NULL",
        _pg("updatedat", "bigint", "updatedAt"),
        _pg("updatedby", "character varying(256)", "updatedBy"),
        PG_DELETED,
    ]
    if et.hash_column == "nameHash":
        cols.append("    namehash character varying(256) NOT NULL")
    else:
        cols.append(f"    fqnhash character varying({et.pg_hash_length}) NOT NULL")
    cols.append(_pg("name", "character varying(256)", "name"))
    if t == "dbservice_entity":
        cols.append(_pg("servicetype", "character varying(256)", "serviceType"))
    elif t == "table_entity":
        cols.append(
            "    databaseschemahash character varying(768) GENERATED ALWAYS AS (rtrim((((("
            "split_part((fqnhash)::text, '.'::text, 1) || '.'::text) || split_part((fqnhash)"
            "::text, '.'::text, 2)) || '.'::text) || split_part((fqnhash)::text, '.'::text, 3"
            ")), '.'::text)) STORED"
        )
    elif t == "tag":
        cols.append(
            "    classificationhash text GENERATED ALWAYS AS "
            "(split_part((fqnhash)::text, '.'::text, 1)) STORED"
        )
    elif t == "glossary_term_entity":
        cols.append(_pg("displayname", "character varying(256)", "displayName", False))
        cols.append(_pg("entitystatus", "character varying(32)", "entityStatus", False))
    elif t == "team_entity":
        cols.append(_pg("teamtype", "character varying(64)", "teamType"))
    elif t == "user_entity":
        cols.append(_pg("email", "character varying(256)", "email"))
        cols.append(_pg("deactivated", "character varying(8)", "deactivated", False))
        # verbatim from OM's PostgreSQL baseline: isbot is generated from 'deleted' (sic)
        cols.append(
            "    isbot boolean GENERATED ALWAYS AS (((json ->> 'deleted'::text))::boolean) STORED NOT NULL"
        )
    if t != "tag":
        cols.append(_pg("impersonatedby", "character varying(256)", "impersonatedBy", False))
    h = et.hash_column.lower()
    return (
        f"CREATE TABLE IF NOT EXISTS {t} (\n" + ",\n".join(cols) + "\n)",
        f"ALTER TABLE ONLY {t} ADD CONSTRAINT {t}_pkey PRIMARY KEY (id)",
        f"ALTER TABLE ONLY {t} ADD CONSTRAINT {t}_{h}_key UNIQUE ({h})",
        f"CREATE INDEX IF NOT EXISTS {t}_name_index ON {t} (name)",
        f"CREATE INDEX IF NOT EXISTS idx_{t}_deleted ON {t} (deleted)",
        f"CREATE INDEX IF NOT EXISTS idx_{t}_updated_at_id ON {t} (updatedat DESC, id DESC)",
    )


MYSQL_SHARED = (
    f"""CREATE TABLE IF NOT EXISTS `entity_relationship` (
  `fromId` varchar(36) NOT NULL,
  `toId` varchar(36) NOT NULL,
  `fromEntity` varchar(256) NOT NULL,
  `toEntity` varchar(256) NOT NULL,
  `relation` tinyint NOT NULL,
  `relationType` varchar(64) NOT NULL DEFAULT '',
  `jsonSchema` varchar(256) DEFAULT NULL,
  `json` json DEFAULT NULL,
  `deleted` tinyint(1) NOT NULL DEFAULT '0',
  PRIMARY KEY (`fromId`,`toId`,`relation`,`relationType`),
  KEY `from_index` (`fromId`,`relation`),
  KEY `to_index` (`toId`,`relation`),
  KEY `idx_er_toEntity_toId_relation` (`toEntity`,`toId`,`relation`)
) {MY_TAIL}""",
    f"""CREATE TABLE IF NOT EXISTS `tag_usage` (
  `source` tinyint NOT NULL,
  `tagFQN` varchar(512) NOT NULL,
  `labelType` tinyint NOT NULL,
  `state` tinyint NOT NULL,
  `tagFQNHash` varchar(768) {ASCII} DEFAULT NULL,
  `targetFQNHash` varchar(768) {ASCII} DEFAULT NULL,
  `reason` text,
  `appliedAt` timestamp(6) NULL DEFAULT CURRENT_TIMESTAMP(6),
  `appliedBy` varchar(64) DEFAULT 'admin',
  `metadata` json DEFAULT NULL,
  UNIQUE KEY `tag_usage_key` (`source`,`tagFQNHash`,`targetFQNHash`),
  KEY `idx_tag_usage_target_fqn_hash` (`targetFQNHash`),
  KEY `idx_tag_usage_tag_fqn_hash` (`tagFQNHash`)
) {MY_TAIL}""",
    f"""CREATE TABLE IF NOT EXISTS `search_index_retry_queue` (
  `entityId` varchar(36) {ASCII} NOT NULL DEFAULT '',
  `entityFqn` varchar(1024) {ASCII} NOT NULL DEFAULT '',
  `failureReason` longtext,
  `status` varchar(32) NOT NULL DEFAULT 'PENDING',
  `entityType` varchar(256) NOT NULL DEFAULT '',
  `retryCount` int NOT NULL DEFAULT '0',
  `claimedAt` timestamp NULL DEFAULT NULL,
  PRIMARY KEY (`entityId`,`entityFqn`),
  KEY `idx_search_index_retry_queue_status` (`status`),
  KEY `idx_search_index_retry_queue_claimed` (`claimedAt`)
) {MY_TAIL}""",
)

PG_SHARED = (
    """CREATE TABLE IF NOT EXISTS entity_relationship (
    fromid character varying(36) NOT NULL,
    toid character varying(36) NOT NULL,
    fromentity character varying(256) NOT NULL,
    toentity character varying(256) NOT NULL,
    relation smallint NOT NULL,
    jsonschema character varying(256),
    json jsonb,
    deleted boolean DEFAULT false NOT NULL,
    relationtype character varying(64) DEFAULT ''::character varying NOT NULL
)""",
    "ALTER TABLE ONLY entity_relationship ADD CONSTRAINT entity_relationship_pkey "
    "PRIMARY KEY (fromid, toid, relation, relationtype)",
    "CREATE INDEX IF NOT EXISTS to_index ON entity_relationship (toid, relation)",
    """CREATE TABLE IF NOT EXISTS tag_usage (
    source smallint NOT NULL,
    tagfqn character varying(512) NOT NULL,
    labeltype smallint NOT NULL,
    state smallint NOT NULL,
    tagfqnhash character varying(768),
    targetfqnhash character varying(768),
    reason text,
    targetfqnhash_lower text GENERATED ALWAYS AS (lower((targetfqnhash)::text)) STORED,
    appliedat timestamp without time zone DEFAULT now(),
    appliedby character varying(64) DEFAULT 'admin'::character varying,
    metadata json,
    tagfqn_lower text GENERATED ALWAYS AS (lower((tagfqn)::text)) STORED
)""",
    "ALTER TABLE ONLY tag_usage ADD CONSTRAINT tag_usage_source_tagfqnhash_targetfqnhash_key "
    "UNIQUE (source, tagfqnhash, targetfqnhash)",
    "CREATE INDEX IF NOT EXISTS idx_tag_usage_target_fqn_hash ON tag_usage (targetfqnhash)",
    """CREATE TABLE IF NOT EXISTS search_index_retry_queue (
    entityid character varying(36) DEFAULT ''::character varying NOT NULL,
    entityfqn character varying(1024) DEFAULT ''::character varying NOT NULL,
    failurereason text,
    status character varying(32) DEFAULT 'PENDING'::character varying NOT NULL,
    entitytype character varying(256) DEFAULT ''::character varying NOT NULL,
    retrycount integer DEFAULT 0 NOT NULL,
    claimedat timestamp without time zone
)""",
    "ALTER TABLE ONLY search_index_retry_queue ADD CONSTRAINT search_index_retry_queue_pkey "
    "PRIMARY KEY (entityid, entityfqn)",
    "CREATE INDEX IF NOT EXISTS idx_search_index_retry_queue_status ON search_index_retry_queue (status)",
)

SHARED_TABLES = ("entity_relationship", "tag_usage", "search_index_retry_queue")


def is_postgres(engine: Engine) -> bool:
    """True on PostgreSQL, False on MySQL/MariaDB."""
    return engine.dialect.name.startswith("postgres")


def statements(engine: Engine, reindex_tables: bool = True) -> list[str]:
    """The DDL for the engine's dialect, in order (`reindex_tables`: 1.12's reindex tables too)."""
    if is_postgres(engine):
        pg: list[str] = []
        for et in ENTITY_TYPES.values():
            pg.extend(_pg_entity_table(et))
        return pg + list(PG_SHARED) + list(ddl_reindex.POSTGRES if reindex_tables else ())
    mysql = [_mysql_entity_table(et) for et in ENTITY_TYPES.values()] + list(MYSQL_SHARED)
    return mysql + list(ddl_reindex.MYSQL if reindex_tables else ())


def table_names() -> list[str]:
    """Every table this module creates (dropped in this order)."""
    return (
        [et.table for et in ENTITY_TYPES.values()]
        + list(SHARED_TABLES)
        + list(ddl_reindex.TABLES)
        + ["SERVER_CHANGE_LOG"]
    )


def create_schema(engine: Engine, *, reindex_tables: bool = True, release: str | None = None) -> None:
    """Create OM's tables in the engine's database; a second call changes nothing.
    `reindex_tables=False`: an OpenMetadata older than 1.12 (no search_index_job, no failures);
    `release`: the migrations SERVER_CHANGE_LOG holds stop there."""
    existing = set(_existing_tables(engine))
    created = [et.table for et in ENTITY_TYPES.values()] + list(SHARED_TABLES)
    with engine.begin() as conn:
        for stmt in statements(engine, reindex_tables):
            if stmt.startswith("ALTER TABLE ONLY") and existing.issuperset(created):
                continue  # constraints exist already (PostgreSQL has no ADD CONSTRAINT IF NOT EXISTS)
            conn.execute(text(stmt))
        versions = MIGRATIONS if reindex_tables else MIGRATIONS[:-2]
        if release is not None:
            level = tuple(int(p) for p in release.split("."))
            versions = tuple(v for v in versions if tuple(int(p) for p in v.split(".")) <= level)
        _migrations(conn, is_postgres(engine), versions)


# SERVER_CHANGE_LOG (MigrationHistoryTable): the migrations a 1.12.1 server has applied (a few of
# them: the string maximum, '1.9.0', is not the level); a world without 1.12's tables stops at 1.11
MIGRATIONS = ("1.4.0", "1.5.0", "1.8.0", "1.9.0", "1.10.0", "1.11.0", "1.12.0", "1.12.1")


def _migrations(conn: Any, postgres: bool, versions: tuple[str, ...]) -> None:
    json_type, now = ("jsonb", "now()") if postgres else ("json", "CURRENT_TIMESTAMP")
    conn.execute(
        text(
            "CREATE TABLE IF NOT EXISTS SERVER_CHANGE_LOG (installed_rank SERIAL, "
            "version VARCHAR(256) PRIMARY KEY, migrationFileName VARCHAR(256) NOT NULL, "
            f"checksum VARCHAR(256) NOT NULL, installed_on TIMESTAMP NOT NULL DEFAULT {now}, "
            f"metrics {json_type})"
        )
    )
    have = {str(r[0]) for r in conn.execute(text("SELECT version FROM SERVER_CHANGE_LOG"))}
    for version in versions:
        if version not in have:
            conn.execute(
                text(
                    "INSERT INTO SERVER_CHANGE_LOG (version, migrationFileName, checksum) VALUES (:v, :f, :c)"
                ),
                {"v": version, "f": f"bootstrap/sql/migrations/native/{version}", "c": "0"},
            )


def drop_schema(engine: Engine) -> None:
    """Drop OM's tables from the engine's database."""
    with engine.begin() as conn:
        for table in table_names():
            conn.execute(text(f"DROP TABLE IF EXISTS {table}"))


def _existing_tables(engine: Engine) -> list[str]:
    from sqlalchemy import inspect

    return list(inspect(engine).get_table_names())
