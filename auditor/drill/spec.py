"""The tables a drill compares: key, compared columns, and each column's canonical text per engine.

A row's canonical text is the same bytes on PostgreSQL and on MySQL/MariaDB for the same row:
the byte length of every column's value (`~` for NULL) and then the values (so no separator
inside a value can shift one column into the next), integers in decimal, times as an integer
count of epoch microseconds divided down to the precision both sides keep. Its MD5 is computed inside each
database; the per-segment checksum is the count and the sum of the first 60 bits of those MD5s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

NULL_TEXT = "~"


class ColumnKind(StrEnum):
    TEXT = "text"  # varchar/text/longtext (JSON kept as stored text included)
    INT = "int"
    TIME = "time"  # timestamp / datetime, no time zone
    BOOL = "bool"  # PostgreSQL boolean, MySQL tinyint(1)
    # a JSON document: PostgreSQL `jsonb` (its normalised text) or MySQL `json` (the text as
    # written): the same text only on the same engine, so a table with one compares same-engine only
    JSON = "json"


@dataclass(frozen=True)
class Column:
    name: str
    kind: ColumnKind = ColumnKind.TEXT


@dataclass(frozen=True)
class TableSpec:
    """A compared table: its key (the first key column defines the segments) and its columns."""

    name: str
    key: tuple[str, ...]
    columns: tuple[Column, ...]  # every compared column, key columns included
    # what else a drill counts in this table (`--counts`): a kind ("entities", ...) and a function
    # of the side and the table's name to {name: count}, computed in the database
    counts: tuple[tuple[str, Callable[[Any, str], dict[str, int]]], ...] = ()

    @property
    def segment_column(self) -> str:
        return self.key[0]

    @property
    def cross_engine(self) -> bool:
        """Can a PostgreSQL copy be compared with a MySQL/MariaDB one?"""
        return all(c.kind is not ColumnKind.JSON for c in self.columns)

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)


def value_sql(column: Column, postgres: bool, divisor: int = 1) -> str:
    """SQL for one column's value as text (NULL stays NULL), the same characters on both engines.

    `divisor` brings epoch microseconds down to the precision both sides keep (1 for
    microseconds, 1000 for milliseconds); both engines divide integers truncating toward zero."""
    c = column.name
    if column.kind is ColumnKind.TEXT:
        return c
    if column.kind is ColumnKind.JSON:
        return f"{c}::text" if postgres else c
    if column.kind is ColumnKind.INT:
        return f"{c}::text" if postgres else f"CAST({c} AS CHAR)"
    if column.kind is ColumnKind.BOOL:
        if postgres:
            return f"CASE WHEN {c} THEN '1' WHEN NOT {c} THEN '0' END"
        return f"CASE WHEN {c} <> 0 THEN '1' WHEN {c} = 0 THEN '0' END"
    # TIME: no time zone applied on either side (PostgreSQL `timestamp`, MySQL `datetime`)
    if postgres:
        return f"((EXTRACT(EPOCH FROM {c}) * 1000000)::bigint / {divisor})::text"
    return f"CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {c}) DIV {divisor} AS CHAR)"


def _length(value: str, postgres: bool) -> str:
    return f"octet_length({value})" if postgres else f"LENGTH({value})"


def column_text(column: Column, postgres: bool, divisor: int = 1) -> str:
    """SQL for one column's canonical text, never NULL: `<bytes>:<value>` or `~`."""
    v = value_sql(column, postgres, divisor)
    inner = (
        f"{_length(v, postgres)}::text || ':' || {v}"
        if postgres
        else f"CONCAT({_length(v, postgres)}, ':', {v})"
    )
    return f"COALESCE({inner}, '{NULL_TEXT}')"


def row_text(spec: TableSpec, postgres: bool, divisors: dict[str, int] | None = None) -> str:
    """SQL for a row's canonical text: a header of every column's byte length (`~` for NULL),
    `|`, then the values one after the other. The header fixes where each value ends, so the
    text is unambiguous, and each (possibly large) value is copied once."""
    values = [value_sql(c, postgres, (divisors or {}).get(c.name, 1)) for c in spec.columns]
    if postgres:
        header = " || ',' || ".join(f"COALESCE({_length(v, True)}::text, '~')" for v in values)
        body = " || ".join(f"COALESCE({v}, '')" for v in values)
        return f"{header} || '|' || {body}"
    header = ", ',', ".join(f"COALESCE({_length(v, False)}, '~')" for v in values)
    body = ", ".join(f"COALESCE({v}, '')" for v in values)
    return f"CONCAT({header}, '|', {body})"


def row_hash60(spec: TableSpec, postgres: bool, divisors: dict[str, int] | None = None) -> str:
    """SQL for the first 60 bits of the MD5 of a row's canonical text, as an integer."""
    md5 = f"MD5({row_text(spec, postgres, divisors)})"
    if postgres:
        return f"('x' || LEFT({md5}, 15))::bit(60)::bigint"
    return f"CAST(CONV(LEFT({md5}, 15), 16, 10) AS UNSIGNED)"


def strip_length(text: str | None) -> str | None:
    """A canonical column text back to its value (`5:hello` -> `hello`, `~` -> None)."""
    if text is None or text == NULL_TEXT:
        return None
    head, sep, rest = text.partition(":")
    return rest if sep and head.isdigit() else text
