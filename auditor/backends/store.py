"""The metadata store: DataHub's `metadata_aspect_v2` read through SQLAlchemy, in urn byte order."""

from __future__ import annotations

import gc
import hashlib
import heapq
import logging
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from auditor.backends.protocols import Capability
from auditor.core.model import Selection
from auditor.core.records import AspectRow, EntityRows, RowsDigest, as_utc
from auditor.errors import BackendUnavailable, ConfigError
from auditor.settings import redact_url

log = logging.getLogger(__name__)

# urns per IN list: past about 150 values MariaDB's optimizer leaves the primary key's ranges for
# a scan of every version-0 row (measured on the 786k-row bench table: 100 urns 8 ms, 200 urns 577 ms)
IN_LIST = 100
PAGE_URNS = IN_LIST  # urns per IN list when a repair walks a list of urns


def _first_line(exc: SQLAlchemyError) -> str:
    cause = getattr(exc, "orig", None) or exc
    return f"{type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''}"


RESUME_ATTEMPTS = 4  # a row stream's reconnects after a lost connection (backoff 0.5 s .. 4 s)


def _connection_lost(exc: SQLAlchemyError) -> bool:
    """The connection went away (restart, killed session, network), not a bad query."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    orig = getattr(exc, "orig", None)
    code = orig.args[0] if orig is not None and orig.args and isinstance(orig.args[0], int) else None
    if code in (2006, 2013, 2055, 1927, 4031):  # MySQL/MariaDB: gone away, lost, killed, timed out
        return True
    text_ = str(orig or exc).lower()
    return any(
        s in text_
        for s in (
            "lost connection",
            "server has gone away",
            "connection was killed",
            "terminating connection",
            "server closed the connection",
            "the database system is shutting down",
            "consuming input failed",
            "connection refused",
            "connection reset",
            "broken pipe",
        )
    )


def row_fingerprint(row: AspectRow) -> tuple[Any, str]:
    """The fingerprint `MetadataStore.fingerprints` reads for a row, computed from the row itself."""
    text_ = f"{row.metadata or ''}|{row.systemmetadata or ''}"
    return row.created, hashlib.md5(text_.encode("utf-8"), usedforsecurity=False).hexdigest()


def prefix_upper_bound(prefix: str) -> str:
    """The smallest string greater than every string that starts with `prefix`."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


# MySQL's and MariaDB's utf8mb4_bin is PAD SPACE: a urn is compared as if padded with spaces, so
# 'a\t' sorts before 'a' there. Urns without a control character or a trailing space sort the
# same there as by code point (the index's order); the others are "odd" and are put in place here.
_ODD = re.compile(r"[\x00-\x1f]| $")
_PRINTABLE = bytes(range(0x20, 0x100))  # what the partition check deletes: a control is left


def _odd(urn: str) -> bool:
    return _ODD.search(urn) is not None


def _maybe_odd(part: Sequence[Any]) -> bool:
    """Whether a partition holds an odd urn, in C-level passes over its urns (measured: 103 ns a
    row on ASCII urns, 181 ns on urns with accents)."""
    urns = [r[0] for r in part]
    joined = "".join(urns).encode("utf-8")
    if joined.translate(None, _PRINTABLE):  # a control character in some urn
        return True
    return b" " in joined and any(u.endswith(" ") for u in urns)


def byte_ordered(parts: Iterable[Sequence[Any]]) -> Iterator[Sequence[Any]]:
    """Partitions of rows in (urn, aspect) code-point order, from partitions in PAD SPACE order.

    An odd urn never arrives after a normal urn that sorts after it by code point (a normal urn
    that follows it under PAD SPACE is greater by code point too), so an odd urn's rows are
    held until the first normal row that sorts after them: a buffer of the odd rows only. A
    partition without an odd urn is handed on as it is (no per-row Python step).
    """
    held: list[tuple[tuple[str, str], int, Any]] = []
    seq = 0
    for part in parts:
        if not held and not _maybe_odd(part):
            yield part
            continue
        out = []
        for row in part:
            key = (row[0], row[1])
            if _odd(row[0]):
                seq += 1
                heapq.heappush(held, (key, seq, row))
                continue
            while held and held[0][0] < key:
                out.append(heapq.heappop(held)[2])
            out.append(row)
        if out:
            yield out
    if held:
        yield [heapq.heappop(held)[2] for _ in range(len(held))]


# collations PostgreSQL sorts in byte (code point) order; the C.UTF-8 ones are checked by a probe
BYTE_ORDER_COLLATIONS = frozenset({"C", "POSIX", "ucs_basic", "C.UTF-8", "C.utf8", "pg_c_utf8"})
COLLATION_PROBE = tuple(
    "a B b _ - ~ a_b ab a-b A Z z é Ä a\u0301 \u00ff \u0100 \ufb00 数据 😀 urn:li:a urn:li:A".split()
) + (" ", "a b", "a\tb")


class MetadataStore:
    """Reads DataHub's aspect table on MySQL, MariaDB or PostgreSQL (read-only)."""

    capabilities = frozenset({Capability.READ})

    def __init__(self, url: str, table: str = "metadata_aspect_v2", *, engine: Engine | None = None):
        if not table.replace("_", "").isalnum():
            raise ConfigError(f"invalid table name: {table!r}")
        self.table = table
        self.description = redact_url(url)
        try:
            self.engine = engine or create_engine(url, pool_pre_ping=True)
        except Exception as exc:  # bad URL or missing driver
            raise ConfigError(f"cannot use store URL {self.description}: {exc}") from None
        self.postgres = self.engine.dialect.name == "postgresql"
        self._sorts_as_bytes: bool | None = None
        self.resumed = 0  # reads resumed after a lost connection (the scan reports it)
        self.rows_read = 0  # rows fetched by the row streams (a shard's share of the table)

    def close(self) -> None:
        """Close the pooled connections (a long-lived caller scans again with a new store)."""
        self.engine.dispose()

    # -- query building (dialect only) -------------------------------------------------
    def _order(self, column: str) -> str:
        # byte order on both sides of the merge-join: PostgreSQL's collation may not be; where
        # the columns' own collation is byte order, the primary key serves it (no sort)
        return f'{column} COLLATE "C"' if self.postgres and not self.sorts_as_bytes() else column

    def sorts_as_bytes(self) -> bool:
        """PostgreSQL: do `urn` and `aspect` sort in byte order under their own collation?

        Then ORDER BY and ranges use the columns as they are and the primary key serves them
        (measured on 786k rows: the first row after 0.06 s instead of 2.05 s, the read 17%
        faster, no sort to spill). Yes for "C", "POSIX", "ucs_basic", and C.UTF-8 once a probe
        of awkward strings sorts the same as under "C"; no for en_US and the like. Asked once;
        if the catalog cannot be read, no (COLLATE "C": always right, only slower)."""
        if self._sorts_as_bytes is None:
            self._sorts_as_bytes = self.postgres and self._probe_collation()
        return self._sorts_as_bytes

    def _probe_collation(self) -> bool:
        columns = text(
            "SELECT c.collname FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation "
            "WHERE a.attrelid = to_regclass(:table) AND a.attname IN ('urn', 'aspect')"
        )
        database = text("SELECT datcollate FROM pg_database WHERE datname = current_database()")
        values = ", ".join(f"(:p{i})" for i in range(len(COLLATION_PROBE)))
        params = {f"p{i}": v for i, v in enumerate(COLLATION_PROBE)}
        try:
            with self.engine.connect() as conn:
                used = {str(name) for (name,) in conn.execute(columns, {"table": self.table})}
                if not used:
                    return False
                default = str(conn.execute(database).scalar()) if "default" in used else None
                for name in used:
                    if (default if name == "default" else name) not in BYTE_ORDER_COLLATIONS or '"' in name:
                        return False
                    own, byte = f'ORDER BY x COLLATE "{name}"', 'ORDER BY x COLLATE "C"'
                    probe = f"SELECT array_agg(x {own}) = array_agg(x {byte}) FROM (VALUES {values}) v(x)"
                    if not conn.execute(text(probe), params).scalar():
                        return False
                return True
        except SQLAlchemyError:
            return False

    def _where(
        self,
        prefixes: tuple[str, ...],
        urn_like: str | None,
        since: datetime | None,
        params: dict[str, Any],
        urns: tuple[str, ...] = (),
        urn_range: tuple[str | None, str | None] | None = None,
    ) -> str:
        clauses = ["version = 0"]
        if urn_range is not None:
            clauses.extend(self._range(urn_range, params))
        if urns:
            names = []
            for i, urn in enumerate(urns):
                params[f"u{i}"] = urn
                names.append(f":u{i}")
            clauses.append(f"urn IN ({', '.join(names)})")
        if prefixes:
            ranges = []
            for i, prefix in enumerate(prefixes):
                params[f"lo{i}"], params[f"hi{i}"] = prefix, prefix_upper_bound(prefix)
                ranges.append(f"({self._order('urn')} >= :lo{i} AND {self._order('urn')} < :hi{i})")
            clauses.append("(" + " OR ".join(ranges) + ")")
        if urn_like:
            params["urn_like"] = urn_like
            clauses.append("urn LIKE :urn_like")
        if since is not None:
            params["since"] = since.astimezone(UTC).replace(tzinfo=None)
            clauses.append(f"urn IN (SELECT urn FROM {self.table} WHERE version = 0 AND createdon >= :since)")
        return " AND ".join(clauses)

    def _range(self, urn_range: tuple[str | None, str | None], params: dict[str, Any]) -> list[str]:
        """A shard's urns [lo, hi) as an index range. Under PAD SPACE (MySQL/MariaDB) 'lo' + a tab
        sorts before 'lo' though it follows it by code point: read from one character before lo
        (a shard plan's bounds have no control character and no trailing space, which makes that
        enough); the join keeps exactly [lo, hi) by code point."""
        lo, hi = urn_range
        urn, clauses = self._order("urn"), []
        if lo is not None:
            params["range_lo"] = lo if self.postgres else lo[:-1]
            clauses.append(f"{urn} >= :range_lo")
        if hi is not None:
            params["range_hi"] = hi
            clauses.append(f"{urn} < :range_hi")
        return clauses

    def _row_bounds(self, selection: Selection, params: dict[str, Any]) -> str:
        """A repair's row filters: its aspects, and `since`/`until` on the row's own createdon."""
        where = ""
        if selection.aspects:
            names = []
            for i, name in enumerate(selection.aspects):
                params[f"a{i}"] = name
                names.append(f":a{i}")
            where += f" AND aspect IN ({', '.join(names)})"
        for bound, op in (("since", ">="), ("until", "<")):
            value = getattr(selection, bound)
            if value is not None:
                params[bound] = value.astimezone(UTC).replace(tzinfo=None)
                where += f" AND createdon {op} :{bound}"
        return where

    # -- reading ------------------------------------------------------------------------
    def stream_rows(
        self,
        entity_types: tuple[str, ...] = (),
        urn_like: str | None = None,
        since: datetime | None = None,
        urns: tuple[str, ...] = (),
        batch: int = 5000,
        urn_range: tuple[str | None, str | None] | None = None,
    ) -> Iterator[tuple[str, str, str, str | None, Any]]:
        """Version-0 rows `(urn, aspect, metadata, systemmetadata, createdon)` in byte order.

        A connection lost mid-read (a server restart, a killed session, a failover) is opened
        again and the read resumes after the last row handed out, on the same (urn, aspect) key
        order, up to RESUME_ATTEMPTS times with backoff; then BackendUnavailable. The stream is
        never silently short (a short one would make every later document look like an orphan).
        """
        if len(urns) > IN_LIST:  # in sorted chunks: the whole stays in urn order
            ordered = sorted(set(urns))
            for i in range(0, len(ordered), IN_LIST):
                yield from self.stream_rows(
                    entity_types, urn_like, since, tuple(ordered[i : i + IN_LIST]), batch, urn_range
                )
            return
        parts = self._resumable(entity_types, urn_like, since, urns, batch, urn_range)
        if not self.postgres:  # PostgreSQL reads with COLLATE "C": already in byte order
            parts = byte_ordered(parts)
        for part in parts:
            yield from part

    def _resumable(
        self,
        entity_types: tuple[str, ...],
        urn_like: str | None,
        since: datetime | None,
        urns: tuple[str, ...],
        batch: int,
        urn_range: tuple[str | None, str | None] | None = None,
    ) -> Iterator[Sequence[Any]]:
        """The query's partitions in the database's order; a lost connection resumes after the
        last row received (keyset on the same order, so nothing is skipped or read twice)."""
        wanted = set(urns) if urns and not self.postgres else None  # MySQL: 'b' IN also finds 'b '
        after: tuple[str, str] | None = None
        attempt = 0
        while True:
            try:
                # a partition is fetched whole before it is handed out, so `after` is exact
                for part in self._stream_once(entity_types, urn_like, since, urns, batch, after, urn_range):
                    self.rows_read += len(part)
                    after = (part[-1][0], part[-1][1])
                    if wanted is not None:
                        part = [r for r in part if r[0] in wanted]
                    if part:
                        yield part
                return
            except SQLAlchemyError as exc:
                what = _first_line(exc)
                if attempt >= RESUME_ATTEMPTS or not _connection_lost(exc):
                    raise BackendUnavailable(f"metadata store {self.description} failed: {what}") from None
                attempt += 1
                self.resumed += 1
                log.warning("metadata store connection lost (%s); resuming after %s", what, after)
            # the lost connection's driver objects are finalised here, at a known point, not by a
            # later garbage collection in the middle of whatever runs then (PyMySQL's finaliser
            # raises on a dead socket)
            gc.collect()
            time.sleep(min(2.0**attempt * 0.25, 4.0))

    def _stream_once(
        self,
        entity_types: tuple[str, ...],
        urn_like: str | None,
        since: datetime | None,
        urns: tuple[str, ...],
        batch: int,
        after: tuple[str, str] | None,
        urn_range: tuple[str | None, str | None] | None = None,
    ) -> Iterator[Sequence[Any]]:
        """One query's rows after `after`, partition by partition."""
        params: dict[str, Any] = {}
        prefixes = tuple(f"urn:li:{t}:" for t in sorted(entity_types))
        urn, aspect = self._order("urn"), self._order("aspect")
        where = self._where(prefixes, urn_like, since, params, urns, urn_range)
        if after is not None:
            params["after_urn"], params["after_aspect"] = after
            where += f" AND ({urn} > :after_urn OR ({urn} = :after_urn AND {aspect} > :after_aspect))"
        sql = (
            f"SELECT urn, aspect, metadata, systemmetadata, createdon FROM {self.table} "
            f"WHERE {where} ORDER BY {urn}, {aspect}"
        )
        with self.engine.connect() as conn:
            result = conn.execution_options(stream_results=True, yield_per=batch).execute(text(sql), params)
            yield from result.partitions(batch)

    def stream_entities(
        self,
        entity_types: tuple[str, ...] = (),
        urn_like: str | None = None,
        since: datetime | None = None,
        urns: tuple[str, ...] = (),
        urn_range: tuple[str | None, str | None] | None = None,
    ) -> Iterator[EntityRows]:
        """Group the version-0 rows by urn: one `EntityRows` per entity, in urn byte order."""
        current: str | None = None
        rows: dict[str, AspectRow] = {}
        duplicated: set[str] = set()
        for urn, aspect, metadata, systemmetadata, createdon in self.stream_rows(
            entity_types, urn_like, since, urns, urn_range=urn_range
        ):
            if urn != current:
                if current is not None:
                    yield EntityRows(current, rows, frozenset(duplicated))
                current, rows, duplicated = urn, {}, set()
            if aspect in rows:  # two version-0 rows: DataHub's primary key would refuse this
                duplicated.add(aspect)
            rows[aspect] = AspectRow(aspect, metadata, systemmetadata, createdon)
        if current is not None:
            yield EntityRows(current, rows, frozenset(duplicated))

    def _page_where(
        self,
        selection: Selection,
        urns: tuple[str, ...],
        after: tuple[str, str] | None,
        last: tuple[str, str] | None,
        params: dict[str, Any],
        from_inclusive: bool = False,
    ) -> tuple[str, str, str]:
        """The WHERE of a repair's page of `selection` (its urn window `urns`): keys after
        `after` (or from it, `from_inclusive`) up to `last` (inclusive); and the ORDER BY's
        two expressions."""
        prefixes = tuple(f"urn:li:{t}:" for t in sorted(selection.entity_types))
        where = self._where(prefixes, selection.urn_like, None, params, urns)
        # PostgreSQL without a urn list: the primary key's own order, an index range scan per
        # page. Under COLLATE "C" each page was a sequential scan and a sort of the whole table
        # (measured: 173 ms against 7 ms a page of 1,000 on 786k rows; a walk of the table grew
        # with its square). No urn list is merged with these pages: they need not be byte order.
        native = self.postgres and not urns
        urn, aspect = ("urn", "aspect") if native else (self._order("urn"), self._order("aspect"))
        for name, key, op in (("after", after, ">=" if from_inclusive else ">"), ("last", last, "<=")):
            if key is None:
                continue
            params[f"{name}_urn"], params[f"{name}_aspect"] = key
            if native:
                where += f" AND (urn, aspect) {op} (:{name}_urn, :{name}_aspect)"
            else:
                same = f"{urn} = :{name}_urn AND {aspect} {op} :{name}_aspect"
                where += f" AND ({urn} {op[0]} :{name}_urn OR ({same}))"
        return where + self._row_bounds(selection, params), urn, aspect

    def page_digest(
        self,
        selection: Selection,
        first: tuple[str, str],
        last: tuple[str, str],
        urns: tuple[str, ...],
        rows: int,
    ) -> RowsDigest:
        """The digest of the version-0 rows a page of `page_rows` (of `rows` rows) holds now:
        the keys from its first to its last, of the page's urns when the selection lists urns.
        One row from the database, where comparing fingerprints shipped every row again.

        Read in key order with a LIMIT one past the page: a plain range let PostgreSQL's generic
        plan (psycopg prepares a query run five times) scan the whole table (measured: 170 ms
        against 6 ms a page); one row more than the page still shows a row inserted in it."""
        params: dict[str, Any] = {"limit": rows + 1}
        where, urn, aspect = self._page_where(selection, urns, first, last, params, from_inclusive=True)
        inner = (
            f"SELECT urn, aspect, metadata, systemmetadata, createdon FROM {self.table} "
            f"WHERE {where} ORDER BY {urn}, {aspect} LIMIT :limit"
        )
        return self._digest(f"({inner}) page", "TRUE", params)

    def urns_digest(self, urns: tuple[str, ...]) -> RowsDigest:
        """The digest of every version-0 row of `urns` now (in IN lists of PAGE_URNS)."""
        out = RowsDigest()
        for i in range(0, len(urns), PAGE_URNS):
            params: dict[str, Any] = {}
            where = self._where((), None, None, params, tuple(urns[i : i + PAGE_URNS]))
            out = out + self._digest(self.table, where, params)
        return out

    def _digest(self, source: str, where: str, params: dict[str, Any]) -> RowsDigest:
        text_ = "CONCAT(urn, '|', aspect, '|', COALESCE(metadata, ''), '|', COALESCE(systemmetadata, ''))"
        if self.postgres:
            value = f"('x' || LEFT(MD5({text_}), 15))::bit(60)::bigint"
        else:
            value = f"CAST(CONV(LEFT(MD5({text_}), 15), 16, 10) AS UNSIGNED)"
        sql = text(f"SELECT COUNT(*), SUM({value}), MAX(createdon) FROM {source} WHERE {where}")
        try:
            with self.engine.connect() as conn:
                count, total, newest = conn.execute(sql, params).one()
        except SQLAlchemyError as exc:
            raise BackendUnavailable(f"metadata store {self.description}: {_first_line(exc)}") from None
        return RowsDigest(int(count or 0), int(total or 0), newest)

    def page_rows(
        self, selection: Selection, after: tuple[str, str] | None, limit: int
    ) -> list[tuple[str, AspectRow]]:
        """Up to `limit` version-0 rows after the key `(urn, aspect)`, in (urn, aspect) order
        (byte order; on PostgreSQL without a urn list, the primary key's collation order).

        Keyset pagination (never OFFSET): each page is one index range scan, however deep.
        `since`/`until` bound the rows' own `createdon` (as RestoreIndices' gePit/lePit do).
        """
        params: dict[str, Any] = {"limit": limit}
        urns = tuple(sorted(selection.urns))
        if urns and after is not None:
            urns = tuple(u for u in urns if u >= after[0])
        if selection.urns and not urns:
            return []
        where, urn, aspect = self._page_where(selection, urns[:PAGE_URNS], after, None, params)
        sql = (
            f"SELECT urn, aspect, metadata, systemmetadata, createdon FROM {self.table} "
            f"WHERE {where} ORDER BY {urn}, {aspect} LIMIT :limit"
        )
        try:
            with self.engine.connect() as conn:
                raw = [(r[0], AspectRow(r[1], r[2], r[3], r[4])) for r in conn.execute(text(sql), params)]
        except SQLAlchemyError as exc:
            raise BackendUnavailable(
                f"metadata store {self.description} failed: {_first_line(exc)}"
            ) from None
        found = raw
        if urns and not self.postgres:  # PAD SPACE: `IN ('b')` also matches 'b '
            wanted = set(urns)
            found = [r for r in raw if r[0] in wanted]
            if raw and not found:  # a page of neighbours only: the next page
                return self.page_rows(selection, (raw[-1][0], raw[-1][1].aspect), limit)
        if not found and len(urns) > PAGE_URNS:  # this window of urns is done: the next one
            return self.page_rows(selection, (urns[PAGE_URNS], ""), limit)
        return found

    def urn_weights(
        self, entity_types: tuple[str, ...] = (), batch: int = 20_000
    ) -> Iterator[tuple[str, int]]:
        """`(urn, version-0 rows)` for every entity, in the database's urn order (a shard plan's
        input: one pass over the primary key, nothing else read)."""
        params: dict[str, Any] = {}
        prefixes = tuple(f"urn:li:{t}:" for t in sorted(entity_types))
        where = self._where(prefixes, None, None, params)
        urn = self._order("urn")
        sql = f"SELECT {urn}, COUNT(*) FROM {self.table} WHERE {where} GROUP BY {urn} ORDER BY {urn}"
        try:
            with self.engine.connect() as conn:
                streamed = conn.execution_options(stream_results=True, yield_per=batch)
                for part in streamed.execute(text(sql), params).partitions(batch):
                    yield from ((str(r[0]), int(r[1])) for r in part)
        except SQLAlchemyError as exc:
            raise BackendUnavailable(
                f"metadata store {self.description} failed: {_first_line(exc)}"
            ) from None

    def count_rows(self, selection: Selection) -> int:
        """Version-0 rows a repair of `selection` walks (`since`/`until` on the rows' createdon)."""
        if selection.urns:
            return sum(1 for _ in self._pages(selection))
        params: dict[str, Any] = {}
        prefixes = tuple(f"urn:li:{t}:" for t in sorted(selection.entity_types))
        where = self._where(prefixes, selection.urn_like, None, params)
        where += self._row_bounds(selection, params)
        try:
            with self.engine.connect() as conn:
                found = conn.execute(text(f"SELECT COUNT(*) FROM {self.table} WHERE {where}"), params)
                total = int(found.scalar() or 0)
        except SQLAlchemyError as exc:
            raise BackendUnavailable(f"metadata store {self.description}: {_first_line(exc)}") from None
        return total

    def _pages(self, selection: Selection) -> Iterator[tuple[str, AspectRow]]:
        after: tuple[str, str] | None = None
        while page := self.page_rows(selection, after, 5000):
            yield from page
            after = (page[-1][0], page[-1][1].aspect)

    def last_write(self) -> datetime | None:
        """The newest version-0 `createdon` in the table (the database's high-water mark)."""
        try:
            with self.engine.connect() as conn:
                value = conn.execute(
                    text(f"SELECT MAX(createdon) FROM {self.table} WHERE version = 0")
                ).scalar()
        except SQLAlchemyError as exc:
            raise BackendUnavailable(f"metadata store {self.description}: {_first_line(exc)}") from None
        return as_utc(value) if value is not None else None

    def count_changed_since(self, entity_type: str, since: datetime) -> int:
        """Entities of a type with a version-0 row written at or after `since`."""
        prefix = f"urn:li:{entity_type}:"
        sql = text(
            f"SELECT COUNT(DISTINCT urn) FROM {self.table} WHERE version = 0 "
            f"AND {self._order('urn')} >= :lo AND {self._order('urn')} < :hi AND createdon >= :since"
        )
        params = {
            "lo": prefix,
            "hi": prefix_upper_bound(prefix),
            "since": since.astimezone(UTC).replace(tzinfo=None),
        }
        try:
            with self.engine.connect() as conn:
                return int(conn.execute(sql, params).scalar() or 0)
        except SQLAlchemyError as exc:
            raise BackendUnavailable(f"metadata store {self.description} failed: {exc}") from None

    def fingerprints(self, urns: tuple[str, ...]) -> dict[tuple[str, str], tuple[Any, str]]:
        """(urn, aspect) -> (createdon as the driver returns it, md5 of metadata|systemmetadata).

        What a repair's ordering guard compares with the rows it read, without shipping and
        parsing every aspect's JSON a second time (`row_fingerprint` is the same digest).
        """
        out: dict[tuple[str, str], tuple[Any, str]] = {}
        wanted = set(urns)
        digest = "MD5(CONCAT(COALESCE(metadata, ''), '|', COALESCE(systemmetadata, '')))"
        for i in range(0, len(urns), PAGE_URNS):
            params: dict[str, Any] = {}
            where = self._where((), None, None, params, tuple(urns[i : i + PAGE_URNS]))
            sql = text(f"SELECT urn, aspect, createdon, {digest} FROM {self.table} WHERE {where}")
            try:
                with self.engine.connect() as conn:
                    for urn, aspect, created, md5 in conn.execute(sql, params):
                        if urn in wanted:  # PAD SPACE: `IN ('b')` also matches 'b '
                            out[(urn, aspect)] = (created, md5)
            except SQLAlchemyError as exc:
                raise BackendUnavailable(f"metadata store {self.description}: {_first_line(exc)}") from None
        return out

    def versions(self, urn: str) -> dict[str, tuple[int, str | None]]:
        """Per aspect of one urn: how many versions the table keeps, and who wrote version 0."""
        sql = text(
            f"SELECT urn, aspect, COUNT(*), MAX(CASE WHEN version = 0 THEN createdby END) "
            f"FROM {self.table} WHERE urn = :urn GROUP BY urn, aspect"
        )
        try:
            with self.engine.connect() as conn:  # PAD SPACE: `= 'b'` also matches 'b '
                rows = conn.execute(sql, {"urn": urn})
                return {str(a): (int(n), by) for u, a, n, by in rows if u == urn}
        except SQLAlchemyError as exc:
            raise BackendUnavailable(f"metadata store {self.description}: {_first_line(exc)}") from None

    def ping(self) -> str:
        """Server version; raises BackendUnavailable when the store cannot be reached."""
        try:
            with self.engine.connect() as conn:
                row = conn.execute(text("SELECT version()")).scalar()
                conn.execute(text(f"SELECT 1 FROM {self.table} WHERE 1 = 0"))
        except SQLAlchemyError as exc:
            raise BackendUnavailable(
                f"metadata store {self.description} unreachable: "
                f"{str(getattr(exc, 'orig', exc) or exc).splitlines()[0]}"
            ) from None
        return str(row)
