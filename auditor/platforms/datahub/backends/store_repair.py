"""The reads of a repair: keyset pages, their digests and the rows' fingerprints (the ordering guard)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from auditor.core.model import Selection
from auditor.core.records import AspectRow, RowsDigest
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.backends.store_sql import StoreQueries, first_line

# urns per IN list: past about 150 values MariaDB's optimizer leaves the primary key's ranges for
# a scan of every version-0 row (measured on the 786k-row bench table: 100 urns 8 ms, 200 urns 577 ms)
IN_LIST = 100
PAGE_URNS = IN_LIST  # urns per IN list when a repair walks a list of urns


def row_fingerprint(row: AspectRow) -> tuple[Any, str]:
    """The fingerprint `MetadataStore.fingerprints` reads for a row, computed from the row itself."""
    text_ = f"{row.metadata or ''}|{row.systemmetadata or ''}"
    return row.created, hashlib.md5(text_.encode("utf-8"), usedforsecurity=False).hexdigest()


class RepairReads(StoreQueries):
    """Keyset pages of version-0 rows, digests of their key ranges, fingerprints of urns."""

    engine: Any  # backends/dbapi.DirectEngine, or SQLAlchemy's Engine
    errors: tuple[type[Exception], ...]  # what the engine raises
    sql: Any  # a query's text as the engine takes it (str, or SQLAlchemy's text())
    description: str

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
        sql = self.sql(f"SELECT COUNT(*), SUM({value}), MAX(createdon) FROM {source} WHERE {where}")
        try:
            with self.engine.connect() as conn:
                count, total, newest = conn.execute(sql, params).one()
        except self.errors as exc:
            raise BackendUnavailable(f"metadata store {self.description}: {first_line(exc)}") from None
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
                raw = [(r[0], AspectRow(r[1], r[2], r[3], r[4])) for r in conn.execute(self.sql(sql), params)]
        except self.errors as exc:
            raise BackendUnavailable(f"metadata store {self.description} failed: {first_line(exc)}") from None
        found = raw
        if urns and not self.postgres:  # PAD SPACE: `IN ('b')` also matches 'b '
            wanted = set(urns)
            found = [r for r in raw if r[0] in wanted]
        if selection.shard is not None and selection.urn_range is None:  # crc32 shard: read, kept
            found = [r for r in found if selection.in_shard(r[0])]
        if raw and not found and len(raw) == limit:  # a page of others' rows only: the next page
            return self.page_rows(selection, (raw[-1][0], raw[-1][1].aspect), limit)
        if not found and len(urns) > PAGE_URNS:  # this window of urns is done: the next one
            return self.page_rows(selection, (urns[PAGE_URNS], ""), limit)
        return found

    def count_rows(self, selection: Selection) -> int:
        """Version-0 rows a repair of `selection` walks (`since`/`until` on the rows' createdon)."""
        if selection.urns or (selection.shard is not None and selection.urn_range is None):
            return sum(1 for _ in self._pages(selection))
        params: dict[str, Any] = {}
        prefixes = tuple(f"urn:li:{t}:" for t in sorted(selection.entity_types))
        where = self._where(prefixes, selection.urn_like, None, params)
        where += self._exact_range(selection, params) + self._row_bounds(selection, params)
        try:
            with self.engine.connect() as conn:
                found = conn.execute(self.sql(f"SELECT COUNT(*) FROM {self.table} WHERE {where}"), params)
                total = int(found.scalar() or 0)
        except self.errors as exc:
            raise BackendUnavailable(f"metadata store {self.description}: {first_line(exc)}") from None
        return total

    def _pages(self, selection: Selection) -> Iterator[tuple[str, AspectRow]]:
        after: tuple[str, str] | None = None
        while page := self.page_rows(selection, after, 5000):
            yield from page
            after = (page[-1][0], page[-1][1].aspect)

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
            sql = self.sql(f"SELECT urn, aspect, createdon, {digest} FROM {self.table} WHERE {where}")
            try:
                with self.engine.connect() as conn:
                    for urn, aspect, created, md5 in conn.execute(sql, params):
                        if urn in wanted:  # PAD SPACE: `IN ('b')` also matches 'b '
                            out[(urn, aspect)] = (created, md5)
            except self.errors as exc:
                raise BackendUnavailable(f"metadata store {self.description}: {first_line(exc)}") from None
        return out
