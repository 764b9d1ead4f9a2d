"""The stores read through the database's own driver (psycopg, PyMySQL), not SQLAlchemy: DataHub's
aspect table, OpenMetadata's entity and bookkeeping tables.

The store's reads are plain SQL with named parameters; what they need of an engine is small: a
pooled connection, a query's rows whole or streamed from a server-side cursor in partitions, and
an error that says whether the connection was lost.

Each round trip counts when the database is a few milliseconds away (bench/net_bench.py), so a
read costs one: PostgreSQL's connections are in autocommit (a transaction, begun and rolled
back, only around a server-side cursor, which needs one), and a pooled connection is not pinged
before use: the first statement on it is sent again on a new connection when the server had
dropped it (nothing was read on it yet). PyMySQL's connection is still rolled back when given
back (its snapshot let go). Before, every `with connect()` block paid a ping, a
BEGIN and a ROLLBACK besides its statements: three quarters of an OpenMetadata triage's round
trips. SQLAlchemy and its dialect
cost a cold process 0.14-0.19 s of imports on this project's machine (medians 0.37 s with it,
0.19 s without), the largest single import of a cold triage; and its first connection asks the
server for its settings (sql_mode, the isolation level, the version) before the first query.

`DirectEngine` is that subset, with the same names (`connect()`, `execute(sql, params)`,
`execution_options(stream_results=..., yield_per=...)`, `scalar()`, `one()`, `all()`,
`partitions(n)`, `dialect.name`, `dispose()`), so the store's code reads the same on both. It
serves a plain URL the drivers understand as SQLAlchemy's dialects would read it
(`postgresql+psycopg://` with libpq's parameters in the query; `mysql+pymysql://` or
`mariadb+pymysql://` with `charset`, `connect_timeout` and the `ssl_*` keys); anything else (IAM's
token hook, another driver, options SQLAlchemy would translate) stays with SQLAlchemy:
`direct_engine(url)` returns None for it. `sql_of(engine)` and `errors_of(engine)` say how a
query is handed to either kind of engine and what it raises, for code that is given one. With
`json_text`, PostgreSQL's json and jsonb come as text (as `backends/json_text.py` makes
SQLAlchemy's engine do): the caller decodes them with its guarded decoder.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

POSTGRES = ("postgresql+psycopg",)
MYSQL = ("mysql+pymysql", "mariadb+pymysql")
# the MySQL URL keys read here as SQLAlchemy's PyMySQL dialect reads them; any other key: SQLAlchemy
MYSQL_KEYS = {
    "charset": str,
    "connect_timeout": int,
    "read_timeout": int,
    "write_timeout": int,
    "ssl_ca": str,
    "ssl_key": str,
    "ssl_cert": str,
    "ssl_capath": str,
    "ssl_cipher": str,
    "ssl_check_hostname": bool,
}
# SQLAlchemy's text(): `:name` is a parameter unless after a word character, a colon or a
# backslash, or before a colon (PostgreSQL's `::cast`, a literal 'urn:li:...')
_PARAM = re.compile(r"(?<![:\w\\]):(\w+)(?!:)")
POOL = 5  # idle connections kept, as SQLAlchemy's default pool


class DirectError(Exception):
    """A driver's error, as the store reads SQLAlchemy's: the driver's own in `orig`, and whether
    the connection it happened on is gone (`connection_invalidated`)."""

    def __init__(self, orig: BaseException, connection_invalidated: bool):
        super().__init__(str(orig))
        self.orig = orig
        self.connection_invalidated = connection_invalidated


def _typed(kind: type, value: str) -> Any:
    """A query value as SQLAlchemy coerces it (its `asbool` words); ValueError otherwise."""
    if kind is bool:
        word = value.strip().lower()
        if word in ("true", "yes", "on", "y", "t", "1"):
            return True
        if word in ("false", "no", "off", "n", "f", "0"):
            return False
        raise ValueError(value)
    return kind(value)


class _Dialect:
    def __init__(self, name: str, driver: str):
        self.name, self.driver = name, driver


def no_such_table(exc: Exception) -> bool:
    """The query failed because its table does not exist (PostgreSQL's undefined_table, MySQL's
    and MariaDB's ER_NO_SUCH_TABLE, SQLite's message), not because the server did not answer."""
    cause = getattr(exc, "orig", None) or exc
    if getattr(cause, "sqlstate", None) == "42P01":
        return True
    args = getattr(cause, "args", ())
    if args and args[0] == 1146:
        return True
    said = str(cause).lower()
    return "no such table" in said or ("does not exist" in said and "relation" in said)


def has_table(engine: Any, table: str) -> bool:
    """Whether the database holds `table` (False only when the server says it has none; a server
    not answering raises as any query does)."""
    if not table.replace("_", "").isalnum():
        return False
    try:
        with engine.connect() as conn:
            conn.execute(sql_of(engine)(f"SELECT 1 FROM {table} WHERE 1 = 0"))
    except errors_of(engine) as exc:
        if no_such_table(exc):
            return False
        raise
    return True


def sql_of(engine: Any) -> Callable[[str], Any]:
    """How a query is handed to this engine: the string itself, or SQLAlchemy's `text()`."""
    if isinstance(engine, DirectEngine):
        return str
    from sqlalchemy import text

    return text


def errors_of(engine: Any) -> tuple[type[Exception], ...]:
    """What this engine's queries raise: our DirectError, or SQLAlchemy's errors."""
    if isinstance(engine, DirectEngine):
        return (DirectError,)
    from sqlalchemy.exc import SQLAlchemyError

    return (SQLAlchemyError,)


def direct_engine(url: str, *, json_text: bool = False) -> DirectEngine | None:
    """The direct engine for a URL it serves exactly as SQLAlchemy would; None otherwise."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in POSTGRES + MYSQL or parts.fragment:
        return None
    query = parse_qsl(parts.query, keep_blank_values=True)
    if len({k for k, _ in query}) != len(query):  # a repeated key: SQLAlchemy makes a list of it
        return None
    kwargs: dict[str, Any] = {}
    if parts.username:
        kwargs["user"] = unquote(parts.username)
    if parts.password is not None:
        kwargs["password"] = unquote(parts.password)
    if parts.hostname:
        kwargs["host"] = parts.hostname
    if port is not None:
        kwargs["port"] = port
    database = unquote(parts.path[1:]) if parts.path.startswith("/") else ""
    if scheme in POSTGRES:
        if "," in parts.netloc:  # several hosts: SQLAlchemy splits them its own way
            return None
        if database:
            kwargs["dbname"] = database
        kwargs.update(dict(query))  # libpq's own parameters, as SQLAlchemy passes them
        return DirectEngine("postgresql", "psycopg", kwargs, json_text=json_text)
    if database:
        kwargs["database"] = database
    ssl: dict[str, Any] = {}
    for key, value in query:
        kind = MYSQL_KEYS.get(key)
        if kind is None:
            return None
        try:
            typed = _typed(kind, value)
        except ValueError:  # SQLAlchemy's own error says what is wrong with it
            return None
        if key.startswith("ssl_"):
            ssl[key[4:]] = typed
        else:
            kwargs[key] = typed
    if ssl:
        kwargs["ssl"] = ssl
    return DirectEngine(scheme.split("+")[0], "pymysql", kwargs)


def bind(sql: str) -> str:
    """`:name` parameters as the drivers' `%(name)s` (a literal `%` doubled)."""
    return _PARAM.sub(r"%(\1)s", sql.replace("%", "%%"))


class DirectEngine:
    """Up to POOL idle connections kept (as SQLAlchemy's pool), each checked before use."""

    def __init__(self, name: str, driver: str, kwargs: dict[str, Any], *, json_text: bool = False):
        self.dialect = _Dialect(name, driver)
        self._kwargs = kwargs
        self._json_text = json_text
        self._idle: list[Any] = []  # list.pop and append: safe between threads

    def _open(self) -> Any:
        try:
            if self.dialect.driver == "psycopg":
                import psycopg

                # a statement is its own transaction (PostgreSQL's READ COMMITTED gives each
                # statement its own snapshot either way): no BEGIN and ROLLBACK around each read
                raw = psycopg.connect(**self._kwargs, autocommit=True)
                if self._json_text:  # decoded by the caller's guarded decoder, not the driver's
                    from psycopg.types.string import TextLoader

                    for name in ("json", "jsonb"):
                        raw.adapters.register_loader(name, TextLoader)
                return raw
            import pymysql

            return pymysql.connect(**self._kwargs)
        except Exception as exc:  # refused, unreachable, bad credentials: the store says which
            raise DirectError(exc, connection_invalidated=False) from None

    def _gone(self, raw: Any) -> bool:
        if self.dialect.driver == "psycopg":
            return bool(raw.closed or raw.broken)
        return not raw.open

    def _pooled(self) -> Any | None:
        """An idle connection the driver has not seen fail (not pinged: see the module's
        docstring); None when there is none."""
        while self._idle:
            try:
                raw = self._idle.pop()
            except IndexError:  # another thread took the last one
                return None
            if not self._gone(raw):
                return raw
        return None

    @contextmanager
    def connect(self) -> Iterator[DirectConnection]:
        raw = self._pooled()
        conn = DirectConnection(self, raw if raw is not None else self._open(), pooled=raw is not None)
        try:
            yield conn
        finally:
            conn.release()

    def _in_transaction(self, raw: Any) -> bool:
        """PostgreSQL's client knows; PyMySQL's status flags come from OK packets only (not a
        result set's end), so a read's REPEATABLE READ snapshot would be kept: always rolled back."""
        if self.dialect.driver == "psycopg":
            from psycopg.pq import TransactionStatus

            return bool(raw.info.transaction_status != TransactionStatus.IDLE)
        return True

    def _give_back(self, raw: Any, clean: bool) -> None:
        if clean and not self._gone(raw):
            try:
                if self._in_transaction(raw):
                    raw.rollback()  # what was read in the block's transaction is let go
                if self.dialect.driver == "psycopg":
                    raw.autocommit = True  # a stream's transaction is over
            except Exception:
                clean = False
        if clean and len(self._idle) < POOL:
            self._idle.append(raw)
        else:
            _close(raw)

    def dispose(self) -> None:
        while self._idle:
            _close(self._idle.pop())

    def error(self, raw: Any, exc: BaseException) -> DirectError:
        """The driver's error; the connection is lost when the driver closed or broke it (the
        store also reads the driver's codes and messages: platforms/datahub/backends/store.py)."""
        return DirectError(exc, connection_invalidated=self._gone(raw))


def _close(raw: Any) -> None:
    try:
        raw.close()
    except Exception:  # already gone: nothing to give back
        pass


class DirectConnection:
    """A connection for one `with` block: what it began is rolled back at the end."""

    def __init__(self, engine: DirectEngine, raw: Any, *, pooled: bool = False):
        self.engine, self.raw = engine, raw
        self._unproven = pooled  # from the pool, not used since: the server may have dropped it
        self._stream = False
        self._batch = 1000
        self._broken = False
        self._open_cursors: list[Any] = []

    def execution_options(self, stream_results: bool = False, yield_per: int = 1000) -> DirectConnection:
        self._stream, self._batch = stream_results, yield_per
        return self

    def execute(self, sql: str, params: dict[str, Any] | None = None) -> DirectResult:
        try:
            cursor = self._execute(sql, params)
        except Exception as exc:
            if self._unproven and (_dropped(exc) or self.engine._gone(self.raw)):  # while idle in the pool
                self._replace()
                return self.execute(sql, params)
            self._unproven = False
            # a statement the server refused (no such table, a denied SELECT) leaves the connection
            # usable, rolled back when given back, as SQLAlchemy's pool keeps it; anything else
            # closes it. A triage probes every entity table of a release: each missing one cost a
            # new connection (and PyMySQL's TLS context, 20 ms, for each)
            self._broken = self._broken or not _refused_statement(exc) or self.engine._gone(self.raw)
            raise self.engine.error(self.raw, exc) from None
        self._unproven = False
        return DirectResult(self, cursor, self._batch)

    def _execute(self, sql: str, params: dict[str, Any] | None) -> Any:
        cursor = self._stream_cursor() if self._stream else self.raw.cursor()
        self._open_cursors.append(cursor)
        cursor.execute(bind(sql), params or {})
        return cursor

    def _replace(self) -> None:
        """A new connection for this block (its first statement failed: nothing was read)."""
        _close(self.raw)
        self._open_cursors = []
        self._unproven = False
        self.raw = self.engine._open()

    def _stream_cursor(self) -> Any:
        if self.engine.dialect.driver == "psycopg":
            if self.raw.autocommit:  # a server-side cursor lives in a transaction
                self.raw.autocommit = False
            cursor = self.raw.cursor(name=f"auditor_{id(self):x}_{len(self._open_cursors)}")
            cursor.itersize = self._batch
            return cursor
        import pymysql.cursors

        return self.raw.cursor(pymysql.cursors.SSCursor)

    def fetch(self, cursor: Any, many: int | None) -> Sequence[Any]:
        try:
            return cursor.fetchmany(many) if many else cursor.fetchall()
        except Exception as exc:
            self._broken = True
            raise self.engine.error(self.raw, exc) from None

    def release(self) -> None:
        abandoned = self.engine.dialect.driver == "pymysql" and any(_unread(c) for c in self._open_cursors)
        for cursor in self._open_cursors:
            if abandoned:  # not drained (closing would read every row left): the connection goes
                result = getattr(cursor, "_result", None)
                if result is not None:  # nor drained later by its finaliser, on a closed socket
                    result.unbuffered_active = False
                continue
            try:
                cursor.close()
            except Exception:
                self._broken = True
        self._open_cursors = []
        self.engine._give_back(self.raw, clean=not (self._broken or abandoned))


def _refused_statement(exc: BaseException) -> bool:
    """An error the server answered a statement with: a SQLSTATE outside class 08 (connection
    exception) from psycopg; a server error number (1000-1999) from PyMySQL."""
    state = getattr(exc, "sqlstate", None)
    if isinstance(state, str):
        return not state.startswith("08")
    code = exc.args[0] if exc.args else None
    return isinstance(code, int) and 1000 <= code < 2000


def _dropped(exc: BaseException) -> bool:
    """The session is over: a connection error, or the server ending it (PostgreSQL's 57P01-03:
    terminated, shutting down; MariaDB's 1927: connection killed)."""
    state = getattr(exc, "sqlstate", None)
    code = exc.args[0] if exc.args else None
    ended = (isinstance(state, str) and state.startswith("57P")) or code == 1927
    return ended or not _refused_statement(exc)


def _unread(cursor: Any) -> bool:
    """A PyMySQL stream left with rows on the wire (a server-side cursor on PostgreSQL is closed
    with the transaction instead)."""
    result = getattr(cursor, "_result", None)
    return bool(getattr(result, "unbuffered_active", False))


class DirectResult:
    """A query's rows as SQLAlchemy's Result hands them (tuples; whole, one, or in partitions)."""

    def __init__(self, conn: DirectConnection, cursor: Any, batch: int):
        self._conn, self._cursor, self._batch = conn, cursor, batch

    def partitions(self, size: int | None = None) -> Iterator[Sequence[Any]]:
        while rows := self._conn.fetch(self._cursor, size or self._batch):
            yield rows

    def __iter__(self) -> Iterator[Any]:
        for part in self.partitions():
            yield from part

    def all(self) -> list[Any]:
        return list(self._conn.fetch(self._cursor, None))

    def keys(self) -> list[str]:
        """The columns' names, as the server gives them."""
        return [str(d[0]) for d in self._cursor.description or ()]

    def mappings(self) -> Iterator[dict[str, Any]]:
        """Each row as a dict by column name."""
        names = self.keys()
        for row in self:
            yield dict(zip(names, row, strict=True))

    def one(self) -> Any:
        rows = self.all()
        if len(rows) != 1:
            raise DirectError(LookupError(f"expected one row, got {len(rows)}"), connection_invalidated=False)
        return rows[0]

    def scalar(self) -> Any:
        rows = self._conn.fetch(self._cursor, 1)
        return rows[0][0] if rows else None
