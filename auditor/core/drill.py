"""A restore drill's result: the differences between two environments and the verdict on them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class RowChange(StrEnum):
    """How a row of the target differs from the source's."""

    ADDED = "added"  # in the target only
    REMOVED = "removed"  # in the source only
    CHANGED = "changed"  # in both, some columns differ


@dataclass(frozen=True)
class RowDiff:
    """One row that differs, with the columns that differ and their canonical values per side."""

    table: str
    key: tuple[Any, ...]
    change: RowChange
    columns: tuple[str, ...] = ()
    source: dict[str, str | None] = field(default_factory=dict)
    target: dict[str, str | None] = field(default_factory=dict)
    explanation: str = ""  # the operator's slot: why this difference is expected (or not)
    paths: tuple[str, ...] = ()  # a JSON column compared by value: where it changed (`json.description`)


@dataclass(frozen=True)
class CountDiff:
    """One count (entities of a type, rows of an aspect, edges, documents) on both sides."""

    kind: str  # entities | aspects | lineage | documents | edges | rows
    name: str
    source: int | None  # None: that side could not be counted (no such index, say)
    target: int | None

    @property
    def delta(self) -> int | None:
        if self.source is None or self.target is None:
            return None
        return self.target - self.source


@dataclass(frozen=True)
class Thresholds:
    """What the operator accepts: row differences per table, and per count kind the |delta|."""

    max_row_diffs: int = 0
    max_count_delta: int = 0
    per_kind: dict[str, int] = field(default_factory=dict)  # kind -> max |delta|

    def count_limit(self, kind: str) -> int:
        return self.per_kind.get(kind, self.max_count_delta)


@dataclass(frozen=True)
class TableStats:
    """How a table was compared: rows on each side, segments checksummed, rows fetched."""

    table: str
    source_rows: int
    target_rows: int
    segments: int  # checksum queries per side
    leaf_rows: int  # row keys + hashes fetched (both sides)
    levels: int  # bisection depth reached
    seconds: float


@dataclass
class DrillResult:
    """Everything a drill found; `passed` against the thresholds."""

    source: str  # descriptions, credentials redacted
    target: str
    started: str  # ISO times (UTC)
    finished: str = ""
    thresholds: Thresholds = field(default_factory=Thresholds)
    versions: dict[str, dict[str, Any]] = field(default_factory=dict)  # side -> server -> version
    tables: list[TableStats] = field(default_factory=list)
    rows: list[RowDiff] = field(default_factory=list)
    counts: list[CountDiff] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)  # timestamped lines, as the bundle's log.txt

    def count_failures(self) -> list[CountDiff]:
        """Counts whose |delta| is past the threshold of their kind (or that one side lacks)."""
        out = []
        for c in self.counts:
            if c.delta is None:
                if (c.source is None) != (c.target is None):
                    out.append(c)
            elif abs(c.delta) > self.thresholds.count_limit(c.kind):
                out.append(c)
        return out

    def row_failures(self) -> dict[str, int]:
        """Tables whose row differences exceed `max_row_diffs`."""
        per: dict[str, int] = {}
        for r in self.rows:
            per[r.table] = per.get(r.table, 0) + 1
        return {t: n for t, n in per.items() if n > self.thresholds.max_row_diffs}

    @property
    def passed(self) -> bool:
        return not self.count_failures() and not self.row_failures()

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"
