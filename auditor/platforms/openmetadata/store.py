"""OpenMetadata's database: the entity tables, with owners and tags joined (the server's own
bookkeeping tables are read by `bookkeeping.Bookkeeping`, which the store is).

Read-only, on MySQL, MariaDB or PostgreSQL, through the database's own driver for a plain URL
(auditor/backends/dbapi.py: a cold triage imports no SQLAlchemy), through SQLAlchemy for what it
alone serves (IAM's token hook, another driver, an engine given). Rows come in id byte order
(`ORDER BY BINARY id`, `COLLATE "C"`), streamed per entity table (on PostgreSQL a first page by
a plain query, the rest through a server-side cursor), so a scan's memory does not grow with the
table. Owners are the `entity_relationship` rows of relation owns
(8) to the entity, tags the `tag_usage` rows whose targetFQNHash is the entity's own hash
column; both aggregated per row as JSON by the database (any character in a name survives).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from auditor.backends.dbapi import direct_engine, errors_of, no_such_table, sql_of
from auditor.backends.protocols import Capability
from auditor.backends.replica import Replica, replica_state
from auditor.core.json_guard import load_object, loads
from auditor.errors import AccessRefused, BackendUnavailable, ConfigError
from auditor.platforms.openmetadata.bookkeeping import IN_LIST, Bookkeeping, in_marks
from auditor.platforms.openmetadata.child_tags import TagSpill, with_child_tags
from auditor.platforms.openmetadata.derive import CHILD_TAGGED, INHERITS
from auditor.platforms.openmetadata.document import fqn_hash
from auditor.platforms.openmetadata.inherit import Inheritance
from auditor.platforms.openmetadata.naming import ENTITIES, RETRY_QUEUE_TABLE, OmEntity
from auditor.platforms.openmetadata.records import OmRow, om_row
from auditor.platforms.openmetadata.reindex_rows import FAILURE_TABLE, JOB_TABLE, PARTITION_TABLE
from auditor.platforms.openmetadata.relations import LINKS, service_link
from auditor.redact import redact_url

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

CONTAINS, OWNS, HAS = 0, 8, 10  # entityRelationship.json: contains, owns, has
# the tables a scan reads beside the entity tables (SERVER_CHANGE_LOG is not among them: its
# name's case is the server's, which the catalog's lowercased look-up cannot tell)
BESIDE = ("entity_relationship", "tag_usage", RETRY_QUEUE_TABLE, JOB_TABLE, PARTITION_TABLE, FAILURE_TABLE)
# the current account as information_schema's privilege tables name it: 'user'@'host'
MYSQL_ME = (
    "CONCAT(CHAR(39), SUBSTRING_INDEX(CURRENT_USER(), '@', 1), CHAR(39), '@', CHAR(39), "
    "SUBSTRING_INDEX(CURRENT_USER(), '@', -1), CHAR(39))"
)


def _first_line(exc: Exception) -> str:
    cause = getattr(exc, "orig", None) or exc
    return f"{type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''}"


def _decoded(value: Any) -> tuple[dict[str, Any], ...]:
    if value is None:
        return ()
    if isinstance(value, bytes | bytearray):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        value = loads(value)  # orjson first, the guard's reading of what it refuses
    return tuple([v for v in value if isinstance(v, dict)]) if value else ()  # a list: no generator


def reference(kind: str, entity_id: str, data: dict[str, Any]) -> dict[str, Any]:
    """An EntityReference as OpenMetadata builds it from a row (getEntityReferenceById): id, type,
    name, fullyQualifiedName, deleted, and its description and displayName where set."""
    name = data.get("name")
    ref = {
        "id": entity_id,
        "type": kind,
        "name": name,
        "fullyQualifiedName": data.get("fullyQualifiedName") or name,
        "deleted": bool(data.get("deleted") is True),
    }
    for extra in ("description", "displayName"):
        if data.get(extra):
            ref[extra] = data[extra]
    return ref


def _object(value: Any) -> dict[str, Any]:
    """One JSON object (text, bytes or decoded); {} when it is not one."""
    return load_object(value) or {}


class OmStore(Bookkeeping):
    """Reads OpenMetadata's entity tables (SELECT only)."""

    capabilities = frozenset({Capability.READ})

    def __init__(self, url: str, *, engine: Engine | None = None) -> None:
        self.description = redact_url(url)
        # json and jsonb as text: a too-deep row is decoded (and refused) by us, not the driver
        direct = direct_engine(url, json_text=True) if engine is None else None
        if direct is not None:
            self.engine: Any = direct
        else:
            from sqlalchemy import create_engine

            from auditor.backends.json_text import json_as_text

            try:
                self.engine = engine or create_engine(url, pool_pre_ping=True)
            except Exception as exc:  # a bad URL or a missing driver
                raise ConfigError(f"cannot use store URL {self.description}: {exc}") from None
            json_as_text(self.engine)
        self.sql, self.errors = sql_of(self.engine), errors_of(self.engine)
        self.postgres = self.engine.dialect.name == "postgresql"
        self._columns: dict[str, set[str] | None] = {}
        self.denied: set[str] = set()  # tables whose SELECT was refused
        self.rows_read = 0

    def close(self) -> None:
        self.engine.dispose()

    def _fail(self, what: str, exc: Exception) -> BackendUnavailable:
        return BackendUnavailable(f"metadata store {self.description}: {what}: {_first_line(exc)}")

    def replica(self) -> Replica:
        """Whether the database is a replica and how far behind (never raises: unknown instead)."""
        return replica_state(self.engine.connect, self.sql, self.errors, self.postgres)

    def ping(self) -> str:
        try:
            with self.engine.connect() as conn:
                return str(conn.execute(self.sql("SELECT version()")).scalar())
        except self.errors as exc:
            raise self._fail("unreachable", exc) from None

    def columns(self, table: str, *, required: bool = True) -> set[str] | None:
        """The table's columns, lowercased (None: no such table). A refused SELECT is AccessRefused
        when `required`, else None and the table is remembered in `denied` (MySQL and MariaDB
        refuse a table the user may not see the same way whether it exists or not)."""
        if table not in self._columns:
            if not table.replace("_", "").isalnum():
                raise ConfigError(f"invalid table name {table!r}")
            try:
                with self.engine.connect() as conn:
                    result = conn.execute(self.sql(f"SELECT * FROM {table} WHERE 1 = 0"))
                    self._columns[table] = {str(k).lower() for k in result.keys()}
            except self.errors as exc:
                said = str(getattr(exc, "orig", exc)).lower()
                if "permission denied" in said or "command denied" in said or "access denied" in said:
                    self.denied.add(table)
                elif not no_such_table(exc):  # the server is not answering: never "no such table"
                    raise self._fail(f"reading {table}", exc) from None
                self._columns[table] = None
        if required and table in self.denied:
            raise AccessRefused(
                f"metadata store {self.description}: SELECT on {table} refused",
                hint=f"GRANT SELECT ON {table} to the auditor's user (or SELECT on the whole database; "
                "docs/openmetadata.md lists every table the profile reads)",
            )
        return self._columns[table]

    def present(self, entities: Sequence[OmEntity]) -> list[OmEntity]:
        """The entity types whose table this database has. None of them at all is the wrong
        database: a ConfigError naming what was looked for and whose tables are there instead
        (a scan of it would audit no entity and call that clean). The tables' columns are read in
        one statement first (`known_columns`), not one probe a table, and with them the tables a
        scan reads beside (relationships, tag usages, the server's reindex bookkeeping)."""
        self.known_columns([e.table for e in entities] + list(BESIDE))
        found = [e for e in entities if self.columns(e.table, required=False) is not None]
        if found or not entities or self.denied:
            return found
        from auditor import platforms

        looked = ", ".join(e.table for e in entities[:4]) + (" ..." if len(entities) > 4 else "")
        raise ConfigError(
            f"metadata store {self.description} has none of OpenMetadata's {len(entities)} entity "
            f"tables ({looked})",
            hint=platforms.whose_tables(
                lambda t: self.columns(t, required=False) is not None, "openmetadata"
            ),
        )

    def known_columns(self, tables: Sequence[str]) -> None:
        """The columns of these tables read in one statement from the catalog, for `columns` to
        answer from: a triage probes every entity table of every release, one round trip each
        over a slow link. A table the catalog shows absent is absent without a probe when the
        catalog would show it (PostgreSQL: pg_class, whatever the user's grants; MySQL: the user
        may SELECT the whole database); any other table is left to `columns`' own probe, which
        tells missing from refused."""
        wanted = [t for t in tables if t not in self._columns and t.replace("_", "").isalnum()]
        if not wanted:
            return
        marks, params = in_marks("t", [t.lower() for t in wanted])
        try:
            with self.engine.connect() as conn:
                rows = list(conn.execute(self.sql(self._catalog_sql(marks)), params))
        except self.errors:  # no catalog to read: each table is probed
            return
        found: dict[str, set[str]] = {}
        whole = False  # every table of the schema would be listed
        for table, column in rows:
            if column is not None:
                found.setdefault(str(table), set()).add(str(column))
            elif table == "":
                whole = True
            else:
                found.setdefault(str(table), set())
        for table in wanted:
            columns = found.get(table.lower())
            if columns:
                self._columns[table] = columns
            elif columns is None and (whole or self.postgres):
                self._columns[table] = None  # no such table

    def _catalog_sql(self, marks: str) -> str:
        if self.postgres:
            return (
                "SELECT LOWER(table_name), LOWER(column_name) FROM information_schema.columns "
                f"WHERE table_schema = current_schema() AND LOWER(table_name) IN ({marks}) UNION ALL "
                f"SELECT LOWER(relname), NULL FROM pg_catalog.pg_class WHERE LOWER(relname) IN ({marks}) "
                "AND relkind IN ('r', 'v', 'm', 'p', 'f') AND pg_catalog.pg_table_is_visible(oid)"
            )
        me = MYSQL_ME
        return (
            "SELECT LOWER(table_name), LOWER(column_name) FROM information_schema.columns "
            f"WHERE table_schema = DATABASE() AND LOWER(table_name) IN ({marks}) UNION ALL "
            "SELECT '', NULL FROM information_schema.schema_privileges WHERE table_schema = DATABASE() "
            f"AND privilege_type = 'SELECT' AND grantee = {me} UNION ALL "
            "SELECT '', NULL FROM information_schema.user_privileges "
            f"WHERE privilege_type = 'SELECT' AND grantee = {me}"
        )

    # -- the entity rows ----------------------------------------------------------------
    def _select(self, entity: OmEntity) -> str:
        cols = self.columns(entity.table)
        if cols is None:
            raise ConfigError(
                f"the entity table {entity.table} ({entity.entity_type}) is not in {self.description}",
                hint="is this OpenMetadata's database? pass --entity-type for the tables it has",
            )
        obj, agg = ("json_build_object", "json_agg") if self.postgres else ("JSON_OBJECT", "JSON_ARRAYAGG")
        owners = domains = parent = links = "NULL"
        if self.columns("entity_relationship") is not None:
            ref = f"{obj}('id', r.fromId, 'type', r.fromEntity)"
            owners = (
                f"(SELECT {agg}({ref}) FROM entity_relationship r "
                f"WHERE r.toId = e.id AND r.relation = {OWNS} AND r.toEntity = :etype)"
            )
            domains = (
                f"(SELECT {agg}({ref}) FROM entity_relationship r WHERE r.toId = e.id "
                f"AND r.relation = {HAS} AND r.fromEntity = 'domain' AND r.toEntity = :etype)"
            )
            link = f"{obj}('r', r.relation, 'id', r.fromId, 'type', r.fromEntity, 'json', r.json)"
            links = (  # a service's `contains`, follows, upstream, voted (relations.py)
                f"(SELECT {agg}({link}) FROM entity_relationship r "
                "WHERE r.toId = e.id AND r.toEntity = :etype "
                f"AND (r.relation IN ({', '.join(map(str, LINKS))}) "
                f"OR (r.relation = {CONTAINS} AND RIGHT(r.fromEntity, 7) = 'Service')))"
            )
            if entity.entity_type in INHERITS:  # the container it inherits owners and domains from
                parent = (
                    "(SELECT MIN(r.fromId) FROM entity_relationship r WHERE r.toId = e.id "
                    f"AND r.relation = {CONTAINS} AND r.fromEntity = '{INHERITS[entity.entity_type][0]}')"
                )
        tags = "NULL"
        hashed = "fqnhash" if "fqnhash" in cols else "namehash" if "namehash" in cols else None
        if hashed and self.columns("tag_usage") is not None:
            label = (
                f"{obj}('tagFQN', t.tagFQN, 'source', t.source, 'labelType', t.labelType, 'state', t.state, "
                "'target', t.targetFQNHash)"
            )
            tags = f"(SELECT {agg}({label}) FROM tag_usage t WHERE t.targetFQNHash = e.{hashed})"
        updated = "e.updatedAt" if "updatedat" in cols else "NULL"
        deleted = "e.deleted" if "deleted" in cols else "NULL"
        return (
            f"SELECT e.id, e.json, {updated} AS updated_at, {deleted} AS deleted, "
            f"{owners} AS owners, {tags} AS tags, {domains} AS domains, {parent} AS parent, {links} AS links "
            f"FROM {entity.table} e"
        )

    def _order(self) -> str:
        return 'ORDER BY e.id COLLATE "C"' if self.postgres else "ORDER BY BINARY e.id"

    def _row(self, r: Any, entity: OmEntity | None = None, heir: Inheritance | None = None) -> OmRow:
        owners, domains = _decoded(r[4]), _decoded(r[6]) if len(r) > 6 else ()
        links = _decoded(r[8]) if len(r) > 8 else ()
        if entity is not None and heir is not None and (not owners or not domains) and r[7] is not None:
            up_owners, up_domains = heir.inherited(entity.entity_type, str(r[7]))
            owners = owners or tuple(up_owners)
            domains = domains or tuple(up_domains)
        if entity is not None and heir is not None and r[7] is not None and service_link(links) is None:
            service = heir.service_of(entity.entity_type, str(r[7]))  # a schema's, a table's: walked up
            if service is not None:
                links = (*links, {"r": CONTAINS, "id": service, "type": "databaseService"})
        return om_row(
            str(r[0]),
            r[1],
            int(r[2]) if r[2] is not None else None,
            bool(r[3]) if r[3] is not None else None,
            owners,
            _decoded(r[5]),
            domains,
            links=links,
        )

    def _child_tags(self, entity: OmEntity, rows: Iterable[OmRow]) -> Iterable[OmRow]:
        """The rows with their children's tags (as they are when the server has no tag_usage)."""
        if self.columns("tag_usage", required=False) is None:
            return rows
        return with_child_tags(self.engine, entity.entity_type, rows)

    def tag_spill(self, entities: Iterable[OmEntity]) -> TagSpill | None:
        """tag_usage read once for streams of these types (None: none merges child tags, or the
        server has no tag_usage); the caller closes it."""
        if not any(e.entity_type in CHILD_TAGGED for e in entities):
            return None
        if self.columns("tag_usage", required=False) is None:
            return None
        try:
            return TagSpill(self.engine)
        except self.errors as exc:
            raise self._fail("reading tag_usage", exc) from None

    def stream(
        self,
        entity: OmEntity,
        *,
        since: datetime | None = None,
        page: int = 2000,
        tags: TagSpill | None = None,
    ) -> Iterator[OmRow]:
        """Every row of the entity's table in id byte order (`_raw_rows`: a page at a time).
        `tags`: the children's labels (read here when not given)."""
        where: list[str] = []
        params: dict[str, Any] = {"etype": entity.entity_type}
        if since is not None:
            where.append("e.updatedAt >= :since")
            params["since"] = int(since.timestamp() * 1000)
        heir = Inheritance(self.engine, whole=True)  # each parent type read once, whole
        own = self.tag_spill([entity]) if tags is None else None
        spill = tags or own
        try:
            with self.engine.connect() as conn:
                raw = self._raw_rows(conn, self._select(entity), where, params, page)
                rows: Iterable[OmRow] = (self._row(r, entity, heir) for r in raw)
                for row in spill.attach(entity.entity_type, rows) if spill else rows:  # columns' tags
                    self.rows_read += 1
                    yield row
        except self.errors as exc:
            raise self._fail(f"reading {entity.table}", exc) from None
        finally:
            if own is not None:
                own.close()

    def _raw_rows(
        self, conn: Any, select: str, where: list[str], params: dict[str, Any], page: int
    ) -> Iterator[Any]:
        """The query's rows in id byte order. On PostgreSQL, a first page by a plain query (one
        round trip), and only the rows after it through a server-side cursor: a cursor costs five
        round trips besides its FETCHes (BEGIN, DECLARE, its description, CLOSE, ROLLBACK), and
        most entity tables fit in a page (a 2,000-entity scan's 18 cursors were 125 of its 155
        statements). MySQL's and MariaDB's stream is one round trip already. The first page and
        the rest are two statements (each its own snapshot, as every read of a scan is: a row
        changed in between is seen as it is then, and re-observed like any other)."""

        def query(conds: list[str]) -> str:
            return f"{select}{' WHERE ' + ' AND '.join(conds) if conds else ''} {self._order()}"

        if not self.postgres:
            yield from conn.execution_options(stream_results=True, yield_per=page).execute(
                self.sql(query(where)), params
            )
            return
        head = list(conn.execute(self.sql(f"{query(where)} LIMIT {int(page)}"), params))
        yield from head
        if len(head) < page:
            return
        after = {**params, "after": str(head[-1][0])}
        del head
        rest = [*where, 'e.id COLLATE "C" > :after']
        yield from conn.execution_options(stream_results=True, yield_per=page).execute(
            self.sql(query(rest)), after
        )

    def read(self, entity: OmEntity, ids: Sequence[str]) -> dict[str, OmRow]:
        """The rows of these ids (those that exist)."""
        out: dict[str, OmRow] = {}
        base = self._select(entity)
        heir = Inheritance(self.engine)  # the parents of these rows, read now
        try:
            with self.engine.connect() as conn:
                for i in range(0, len(ids), IN_LIST):
                    chunk = list(ids[i : i + IN_LIST])
                    marks = ", ".join(f":i{n}" for n in range(len(chunk)))
                    params: dict[str, Any] = {f"i{n}": v for n, v in enumerate(chunk)}
                    params["etype"] = entity.entity_type
                    got = list(conn.execute(self.sql(f"{base} WHERE e.id IN ({marks})"), params))
                    heir.preload(entity.entity_type, [str(r[7]) for r in got if r[7] is not None])
                    found = [self._row(r, entity, heir) for r in got]
                    for row in self._child_tags(entity, found):
                        out[row.id] = row
        except self.errors as exc:
            raise self._fail(f"reading {entity.table}", exc) from None
        return out

    def find_by_fqn(self, entity: OmEntity, fqns: Sequence[str], *, scan: bool = True) -> dict[str, str]:
        """FQN -> id for the names given (a triage's or a rebuild's --urn may be either). First by
        the table's indexed hash column (`fqnHash`, or `nameHash`: FullyQualifiedName.buildHash of
        the name, checked against the JSON's own FQN); the names not found so, with `scan`, by the
        JSON's fullyQualifiedName, which no index serves (every row of the table read: a large
        catalog's triage by name paid it in every entity table)."""
        cols = self.columns(entity.table) if fqns else None
        if cols is None:
            return {}
        path = (  # MariaDB has no ->> operator
            "e.json ->> 'fullyQualifiedName'"
            if self.postgres
            else "JSON_UNQUOTE(JSON_EXTRACT(e.json, '$.fullyQualifiedName'))"
        )
        hashed = "fqnhash" if "fqnhash" in cols else "namehash" if "namehash" in cols else None
        out: dict[str, str] = {}
        try:
            with self.engine.connect() as conn:
                by_hash = {fqn_hash(f): f for f in fqns if f} if hashed is not None else {}
                if by_hash:
                    marks, params = in_marks("h", list(by_hash))
                    sql = f"SELECT {path}, e.id FROM {entity.table} e WHERE e.{hashed} IN ({marks})"
                    out = {str(f): str(i) for f, i in conn.execute(self.sql(sql), params) if f in fqns}
                left = [f for f in fqns if f not in out]
                if left and scan:
                    marks, params = in_marks("f", left)
                    sql = f"SELECT {path}, e.id FROM {entity.table} e WHERE {path} IN ({marks})"
                    out.update({str(f): str(i) for f, i in conn.execute(self.sql(sql), params)})
        except self.errors as exc:
            raise self._fail(f"reading {entity.table}", exc) from None
        return out

    def holders(
        self, entities: Sequence[OmEntity], *, entity_id: str = "", fqn: str = ""
    ) -> dict[str, str] | None:
        """Entity type -> the id of its row whose id is `entity_id`, or whose hash column is
        `fqn`'s (checked against the JSON's own name), in one statement over the tables (UNION
        ALL): a triage asked each table on its own, a round trip each. Tables without a hash
        column are not asked for a name; None when the statement is refused (the caller asks
        table by table)."""
        path = (
            "e.json ->> 'fullyQualifiedName'"
            if self.postgres
            else "JSON_UNQUOTE(JSON_EXTRACT(e.json, '$.fullyQualifiedName'))"
        )
        parts = []
        for entity in entities:
            cols = self.columns(entity.table, required=False) or set()
            column = "id" if entity_id else "fqnhash" if "fqnhash" in cols else "namehash"
            if column in cols and entity.entity_type.isidentifier():  # a name of ours, as a literal
                kind = f"'{entity.entity_type}'"
                parts.append(f"SELECT {kind}, e.id, {path} FROM {entity.table} e WHERE e.{column} = :v")
        if not parts:
            return {}
        try:
            with self.engine.connect() as conn:
                rows = list(
                    conn.execute(self.sql(" UNION ALL ".join(parts)), {"v": entity_id or fqn_hash(fqn)})
                )
        except self.errors:
            return None
        return {str(t): str(i) for t, i, f in rows if entity_id or f == fqn}

    def count(self, entity: OmEntity) -> int:
        try:
            with self.engine.connect() as conn:
                return int(conn.execute(self.sql(f"SELECT COUNT(*) FROM {entity.table}")).scalar() or 0)
        except self.errors as exc:
            raise self._fail(f"counting {entity.table}", exc) from None

    def owner_refs(self, refs: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """id -> {id, type, name, fullyQualifiedName, displayName, deleted} of owners (users, teams)."""
        out: dict[str, dict[str, Any]] = {}
        by_table = {"user": "user_entity", "team": "team_entity", "domain": "domain_entity"}
        with self.engine.connect() as conn:
            for kind, table in by_table.items():
                ids = sorted({str(r["id"]) for r in refs if r.get("type") == kind and r.get("id")})
                if not ids or self.columns(table) is None:
                    continue
                for entity_id, raw in self._json_of(conn, table, ids):
                    data = _object(raw)
                    out[entity_id] = {
                        "id": entity_id,
                        "type": kind,
                        "name": data.get("name"),
                        "fullyQualifiedName": data.get("fullyQualifiedName") or data.get("name"),
                        "displayName": data.get("displayName") or data.get("name"),
                        "deleted": bool(data.get("deleted") is True),
                    }
                    if data.get("description"):  # an EntityReference carries it when set
                        out[entity_id]["description"] = data["description"]
        return out

    def refs_by_name(self, kind: str, names: Sequence[str]) -> dict[str, dict[str, Any]]:
        """name -> the EntityReference of each entity of type `kind` so named (a service, found
        by the first part of its assets' FQNs); unknown names and a missing table give nothing."""
        entity = ENTITIES.get(kind)
        wanted = sorted({n for n in names if n})
        if entity is None or not wanted or self.columns(entity.table, required=False) is None:
            return {}
        out: dict[str, dict[str, Any]] = {}
        asked = set(wanted)
        with self.engine.connect() as conn:
            for entity_id, raw in self._json_of(conn, entity.table, wanted, column="name"):
                data = _object(raw)
                name = data.get("name")
                if name not in asked:  # PAD SPACE or a case-insensitive collation: not this one
                    continue
                out[str(name)] = reference(kind, str(entity_id), data)
        return out

    def entity_json(self, wanted: Iterable[tuple[str, str]]) -> dict[str, tuple[str, dict[str, Any]]]:
        """id -> (type, JSON) of the entities named as (type, id): a service, an upstream entity, a
        lineage edge's pipeline; one IN list per type and 1,000 ids. Unknown types, missing tables
        and rows give nothing."""
        by_type: dict[str, set[str]] = {}
        for kind, entity_id in wanted:
            if kind and entity_id:
                by_type.setdefault(str(kind), set()).add(str(entity_id))
        out: dict[str, tuple[str, dict[str, Any]]] = {}
        with self.engine.connect() as conn:
            for kind, ids in sorted(by_type.items()):
                entity = ENTITIES.get(kind)
                if entity is None or self.columns(entity.table, required=False) is None:
                    continue
                for entity_id, raw in self._json_of(conn, entity.table, sorted(ids)):
                    out[entity_id] = (kind, _object(raw))
        return out

    def _json_of(
        self, conn: Any, table: str, ids: list[str], column: str = "id"
    ) -> Iterator[tuple[str, Any]]:
        """(id, json) of the rows whose `column` is one of `ids`, an IN list at a time."""
        for i in range(0, len(ids), IN_LIST):
            chunk = ids[i : i + IN_LIST]
            marks = ", ".join(f":i{n}" for n in range(len(chunk)))
            params = {f"i{n}": v for n, v in enumerate(chunk)}
            sql = f"SELECT id, json FROM {table} WHERE {column} IN ({marks})"
            for entity_id, raw in conn.execute(self.sql(sql), params):
                yield str(entity_id), raw
