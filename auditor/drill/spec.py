"""The tables a drill compares: key, compared columns, and each column's canonical text per engine.

A row's canonical text is the same bytes on PostgreSQL and on MySQL/MariaDB for the same row:
every column as `<characters>:<text>` (length-prefixed, so no separator inside a value can shift
one column into the next), NULL as `~`, integers in decimal, times as an integer count of epoch
microseconds divided down to the precision both sides keep. Its MD5 is computed inside each
database; the per-segment checksum is the count and the sum of the first 60 bits of those MD5s.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

NULL_TEXT = "~"


class ColumnKind(StrEnum):
    TEXT = "text"  # varchar/text/longtext (JSON kept as stored text included)
    INT = "int"
    TIME = "time"  # timestamp / datetime, no time zone
    BOOL = "bool"  # PostgreSQL boolean, MySQL tinyint(1)


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

    @property
    def segment_column(self) -> str:
        return self.key[0]

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)


METADATA_ASPECT_V2 = TableSpec(
    name="metadata_aspect_v2",
    key=("urn", "aspect", "version"),
    columns=(
        Column("urn"),
        Column("aspect"),
        Column("version", ColumnKind.INT),
        Column("metadata"),
        Column("systemmetadata"),
        Column("createdon", ColumnKind.TIME),
        Column("createdby"),
        Column("createdfor"),
    ),
)

TABLES = {METADATA_ASPECT_V2.name: METADATA_ASPECT_V2}


def column_text(column: Column, postgres: bool, divisor: int = 1) -> str:
    """SQL for one column's canonical text (never NULL) on this engine.

    `divisor` brings epoch microseconds down to the precision both sides keep (1 for
    microseconds, 1000 for milliseconds); both engines divide integers truncating toward zero."""
    c = column.name
    if column.kind is ColumnKind.TEXT:
        inner = f"length({c})::text || ':' || {c}" if postgres else f"CONCAT(CHAR_LENGTH({c}), ':', {c})"
    elif column.kind is ColumnKind.INT:
        inner = f"{c}::text" if postgres else f"CAST({c} AS CHAR)"
    elif column.kind is ColumnKind.BOOL:
        inner = (
            f"CASE WHEN {c} THEN '1' ELSE '0' END"
            if postgres
            else f"CASE WHEN {c} IS NULL THEN NULL WHEN {c} <> 0 THEN '1' ELSE '0' END"
        )
    else:  # TIME: no time zone applied on either side (PostgreSQL `timestamp`, MySQL `datetime`)
        if postgres:
            inner = f"((EXTRACT(EPOCH FROM {c}) * 1000000)::bigint / {divisor})::text"
        else:
            inner = f"CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {c}) DIV {divisor} AS CHAR)"
        if postgres:
            inner = f"CASE WHEN {c} IS NULL THEN NULL ELSE {inner} END"
    return f"COALESCE({inner}, '{NULL_TEXT}')"


def row_text(spec: TableSpec, postgres: bool, divisors: dict[str, int] | None = None) -> str:
    """SQL for a row's canonical text: the columns' texts joined by `|`."""
    parts = [column_text(c, postgres, (divisors or {}).get(c.name, 1)) for c in spec.columns]
    return " || '|' || ".join(parts) if postgres else "CONCAT(" + ", '|', ".join(parts) + ")"


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
