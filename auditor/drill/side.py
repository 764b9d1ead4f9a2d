"""One database of a drill: segment checksums, row hashes and rows, computed inside the database.

Segments are ranges of the segment column compared as bytes on both engines: PostgreSQL
with the column's own collation when it sorts as bytes (else `COLLATE "C"`), MySQL/MariaDB
by `CAST(... AS BINARY)`; there utf8mb4_bin is PAD SPACE ('a\\t' < 'a'), so the range is read
through the index from one character below its lower bound and cut exactly by the binary test.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from auditor.backends.store_order import BYTE_ORDER_COLLATIONS, COLLATION_PROBE
from auditor.drill.spec import ColumnKind, TableSpec, column_text, row_hash60, row_text, value_sql
from auditor.errors import BackendUnavailable, ConfigError
from auditor.redact import redact_url

log = logging.getLogger(__name__)
T = TypeVar("T")
Bound = str | None  # None: unbounded on that side
IN_LIST = 100


@dataclass(frozen=True)
class Checksum:
    count: int
    total: int


class Side:
    """A source or target database, with a small pool of connections for parallel queries."""

    def __init__(self, role: str, url: str, workers: int = 2) -> None:
        self.role = role
        self.description = redact_url(url)
        try:
            parsed = make_url(url)
            if parsed.get_backend_name() in ("mysql", "mariadb") and "charset" not in parsed.query:
                parsed = parsed.update_query_dict({"charset": "utf8mb4"})  # the rows' own bytes
            self.engine: Engine = create_engine(
                parsed, pool_pre_ping=True, pool_size=workers + 1, max_overflow=2
            )
        except Exception as exc:  # bad URL or missing driver
            raise ConfigError(f"{role}: cannot use store URL {self.description}: {exc}") from None
        self.postgres = self.engine.dialect.name == "postgresql"
        if not self.postgres and self.engine.dialect.name not in ("mysql", "mariadb"):
            raise ConfigError(f"{role}: unsupported database {self.engine.dialect.name}")
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"drill-{role}")
        self._bytes_order: dict[str, bool] = {}
        self._lock = threading.Lock()
        self.queries = 0

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.engine.dispose()

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        return self.pool.submit(fn, *args)

    # -- running ---------------------------------------------------------------------
    def fetch(self, sql: str, params: dict[str, Any] | None = None) -> Sequence[Any]:
        """All rows of a query; a failure names this side (BackendUnavailable: exit 3)."""
        with self._lock:
            self.queries += 1
        try:
            with self.engine.connect() as conn:
                return conn.execute(text(sql), params or {}).all()
        except SQLAlchemyError as exc:
            cause = getattr(exc, "orig", None) or exc
            first = str(cause).splitlines()[0] if str(cause) else type(cause).__name__
            raise BackendUnavailable(
                f"{self.role} database {self.description} failed: {first}",
                hint="check that side's URL and that its server is up; the drill only reads, run it again",
            ) from None

    def version(self) -> str:
        return str(self.fetch("SELECT version()")[0][0])

    # -- what the table looks like ---------------------------------------------------
    def sorts_as_bytes(self, spec: TableSpec) -> bool:
        """Does the segment column's own collation order as bytes, so its index serves the byte
        ranges? PostgreSQL: "C", "POSIX", "ucs_basic", or C.UTF-8 once a probe of awkward strings
        sorts as under "C"; MySQL/MariaDB: a `_bin` collation (PAD SPACE is handled by the range)."""
        if spec.name not in self._bytes_order:
            self._bytes_order[spec.name] = self._probe(spec)
        return self._bytes_order[spec.name]

    def _probe(self, spec: TableSpec) -> bool:
        c = spec.segment_column
        if not self.postgres:
            rows = self.fetch(
                "SELECT collation_name FROM information_schema.columns WHERE table_schema = DATABASE() "
                "AND table_name = :t AND column_name = :c",
                {"t": spec.name, "c": c},
            )
            collation = str(rows[0][0]) if rows and rows[0][0] else ""
            return not collation or collation.endswith("_bin")
        rows = self.fetch(
            "SELECT c.collname FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation "
            "WHERE a.attrelid = to_regclass(:t) AND a.attname = lower(:c)",
            {"t": spec.name, "c": c},
        )
        if not rows:
            return False
        name = locale = str(rows[0][0])
        if name == "default":  # the database's locale (C.UTF-8 is no collation name: probe "default")
            where = "SELECT datcollate FROM pg_database WHERE datname = current_database()"
            locale = str(self.fetch(where)[0][0])
        if locale not in BYTE_ORDER_COLLATIONS or '"' in name:
            return False
        values = ", ".join(f"(:p{i})" for i in range(len(COLLATION_PROBE)))
        params = {f"p{i}": v for i, v in enumerate(COLLATION_PROBE)}
        probe = (
            f'SELECT array_agg(x ORDER BY x COLLATE "{name}") = array_agg(x ORDER BY x COLLATE "C") '
            f"FROM (VALUES {values}) v(x)"
        )
        return bool(self.fetch(probe, params)[0][0])

    def time_precision(self, spec: TableSpec, column: str) -> int:
        """Fractional digits the column keeps (6 for timestamp / datetime(6), 0 for datetime)."""
        schema = "current_schema()" if self.postgres else "DATABASE()"
        rows = self.fetch(
            "SELECT datetime_precision FROM information_schema.columns "
            f"WHERE table_schema = {schema} AND table_name = :t AND column_name = :c",
            {"t": spec.name, "c": column},
        )
        if not rows:
            raise ConfigError(f"{self.role}: table {spec.name} has no column {column} ({self.description})")
        return int(rows[0][0] if rows[0][0] is not None else 6)

    def estimated_rows(self, spec: TableSpec) -> int:
        """The planner's row estimate (no scan); -1 when the table was never analysed."""
        if self.postgres:
            sql = "SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass(:t)"
        else:
            sql = (
                "SELECT table_rows FROM information_schema.tables "
                "WHERE table_schema = DATABASE() AND table_name = :t"
            )
        rows = self.fetch(sql, {"t": spec.name})
        if not rows or rows[0][0] is None:
            raise ConfigError(f"{self.role}: no table {spec.name} in {self.description}")
        return int(rows[0][0])

    # -- segments ----------------------------------------------------------------------
    def _range(self, spec: TableSpec, lo: Bound, hi: Bound, params: dict[str, Any]) -> str:
        c = spec.segment_column
        clauses = []
        if self.postgres:
            col = c if self.sorts_as_bytes(spec) else f'{c} COLLATE "C"'
            if lo is not None:
                params["lo"] = lo
                clauses.append(f"{col} >= :lo")
            if hi is not None:
                params["hi"] = hi
                clauses.append(f"{col} < :hi")
        else:  # the exact byte range, and where the index sorts as bytes (_bin) its range too,
            # widened for PAD SPACE; a case-insensitive key (OpenMetadata's ids) scans instead
            indexed = self.sorts_as_bytes(spec)
            if lo is not None:
                params["lo"], params["lo_wide"] = lo, lo[:-1]
                wide = f"{c} >= :lo_wide AND " if indexed else ""
                clauses.append(f"{wide}CAST({c} AS BINARY) >= CAST(:lo AS BINARY)")
            if hi is not None:
                params["hi"] = hi
                wide = f"{c} < :hi AND " if indexed else ""
                clauses.append(f"{wide}CAST({c} AS BINARY) < CAST(:hi AS BINARY)")
        return " AND ".join(clauses) or "1 = 1"

    def bucket(self, spec: TableSpec, buckets: int) -> str:
        """SQL for a row's bucket: the first 16 bits of MD5(key) modulo `buckets` (the same
        number on both engines, so the sides' buckets pair up)."""
        c = spec.segment_column
        if self.postgres:
            return f"(('x' || LEFT(MD5({c}), 4))::bit(16)::int % {buckets})"
        return f"(CONV(LEFT(MD5({c}), 4), 16, 10) % {buckets})"

    def ranges_use_index(self, spec: TableSpec) -> bool:
        """Does an index serve this side's byte ranges of the key (else each range scans)?"""
        return self.sorts_as_bytes(spec)

    def checksums(
        self, spec: TableSpec, lo: Bound, hi: Bound, divisors: dict[str, int], buckets: int
    ) -> dict[int, Checksum]:
        """Per bucket of the segment [lo, hi): rows and the sum of their 60-bit row hashes."""
        params: dict[str, Any] = {}
        where = self._range(spec, lo, hi, params)
        value = row_hash60(spec, self.postgres, divisors)
        b = self.bucket(spec, buckets)
        sql = f"SELECT {b}, COUNT(*), SUM({value}) FROM {spec.name} WHERE {where} GROUP BY {b}"
        return {int(k): Checksum(int(n or 0), int(t or 0)) for k, n, t in self.fetch(sql, params)}

    def keys_in(self, spec: TableSpec, lo: Bound, hi: Bound) -> list[str]:
        """The segment column's values in [lo, hi) (one per row: the sampler weighs by rows)."""
        params: dict[str, Any] = {}
        where = self._range(spec, lo, hi, params)
        c = spec.segment_column
        return [str(r[0]) for r in self.fetch(f"SELECT {c} FROM {spec.name} WHERE {where}", params)]

    def sample_keys(self, spec: TableSpec, wanted: int) -> list[str]:
        """About `wanted` values of the segment column spread over the table, no full read:
        PostgreSQL by TABLESAMPLE SYSTEM; MySQL/MariaDB by keyset steps through the index."""
        estimate = max(self.estimated_rows(spec), 0)
        c = spec.segment_column
        if estimate <= wanted * 4:  # small: every key
            return self.keys_in(spec, None, None)
        if self.postgres:
            pct = min(100.0, 100.0 * wanted * 4 / estimate)
            rows = self.fetch(f"SELECT {c} FROM {spec.name} TABLESAMPLE SYSTEM ({pct:.6f})")
            return [str(r[0]) for r in rows]
        step = max(estimate // wanted, 1)
        out: list[str] = []
        after: str | None = None
        while True:
            where = f"WHERE {c} > :after " if after is not None else ""
            rows = self.fetch(
                f"SELECT {c} FROM {spec.name} {where}ORDER BY {c} LIMIT 1 OFFSET {step}",
                {"after": after} if after is not None else {},
            )
            if not rows:
                return out
            after = str(rows[0][0])
            out.append(after)

    def row_hashes(
        self,
        spec: TableSpec,
        lo: Bound,
        hi: Bound,
        divisors: dict[str, int],
        only: tuple[int, ...] = (),
        buckets: int = 1,
    ) -> dict[tuple[Any, ...], str]:
        """Key -> MD5 of the canonical row text, for the rows in [lo, hi) (of the buckets `only`)."""
        params: dict[str, Any] = {}
        where = self._range(spec, lo, hi, params)
        if only:
            where += f" AND {self.bucket(spec, buckets)} IN ({', '.join(str(int(k)) for k in only)})"
        keys = ", ".join(spec.key)
        sql = f"SELECT {keys}, MD5({row_text(spec, self.postgres, divisors)}) FROM {spec.name} WHERE {where}"
        n = len(spec.key)
        return {tuple(r[:n]): str(r[n]) for r in self.fetch(sql, params)}

    def rows_for(
        self, spec: TableSpec, keys: list[tuple[Any, ...]], divisors: dict[str, int]
    ) -> dict[tuple[Any, ...], dict[str, str]]:
        """Key -> canonical text per column, for the given keys (exact match, also under PAD SPACE)."""
        wanted = set(keys)
        firsts = sorted({k[0] for k in keys})
        c = spec.segment_column
        texts = ", ".join(column_text(col, self.postgres, divisors.get(col.name, 1)) for col in spec.columns)
        out: dict[tuple[Any, ...], dict[str, str]] = {}
        n = len(spec.key)
        for i in range(0, len(firsts), IN_LIST):
            chunk = firsts[i : i + IN_LIST]
            params = {f"k{j}": v for j, v in enumerate(chunk)}
            names = ", ".join(f":k{j}" for j in range(len(chunk)))
            sql = f"SELECT {', '.join(spec.key)}, {texts} FROM {spec.name} WHERE {c} IN ({names})"
            for r in self.fetch(sql, params):
                key = tuple(r[:n])
                if key in wanted:
                    out[key] = {col.name: str(v) for col, v in zip(spec.columns, r[n:], strict=True)}
        return out

    # -- rows read out, for a comparison outside the database --------------------------
    def byte_order(self, spec: TableSpec) -> str:
        """ORDER BY the key as bytes (UTF-8 byte order is Python's str order)."""
        parts = []
        for name in spec.key:
            column = spec.column(name)
            if column.kind is not ColumnKind.TEXT:
                parts.append(name)
            elif self.postgres:
                indexed = name == spec.segment_column and self.sorts_as_bytes(spec)
                parts.append(name if indexed else f'{name} COLLATE "C"')
            else:  # CAST AS BINARY: no PAD SPACE, no case folding (utf8mb4_unicode_ci ids)
                parts.append(f"CAST({name} AS BINARY)")
        return ", ".join(parts)

    def stream_rows(self, spec: TableSpec, divisors: dict[str, int], batch: int) -> Iterator[Sequence[Any]]:
        """Every row, in key byte order, `batch` rows at a time from one streamed query (a
        server-side cursor: memory holds one batch): the key, then each column's value, a JSON
        column as its text (`jsonb::text` on PostgreSQL), the others as `value_sql` gives them."""
        with self._lock:
            self.queries += 1
        values = []
        for column in spec.columns:
            if column.kind is ColumnKind.JSON:
                values.append(f"{column.name}::text" if self.postgres else column.name)
            else:
                values.append(value_sql(column, self.postgres, divisors.get(column.name, 1)))
        sql = (
            f"SELECT {', '.join(spec.key)}, {', '.join(values)} FROM {spec.name} "
            f"ORDER BY {self.byte_order(spec)}"
        )
        try:
            with self.engine.connect() as conn:
                result = conn.execution_options(stream_results=True, yield_per=batch).execute(text(sql))
                yield from result.partitions(batch)
        except SQLAlchemyError as exc:
            cause = getattr(exc, "orig", None) or exc
            first = str(cause).splitlines()[0] if str(cause) else type(cause).__name__
            raise BackendUnavailable(
                f"{self.role} database {self.description} failed: {first}",
                hint="check that side's URL and that its server is up; the drill only reads, run it again",
            ) from None
