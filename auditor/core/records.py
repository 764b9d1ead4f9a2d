"""The records the backends hand to the kernel: rows, offset samples, MCL hits, documents."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


def _json_parser() -> Callable[[str | bytes], Any]:
    """orjson parses the aspect JSON several times faster; the stdlib is the fallback."""
    try:
        from orjson import loads
    except ImportError:  # pragma: no cover
        from json import loads  # type: ignore[assignment]
    return loads


json_loads: Callable[[str | bytes], Any] = _json_parser()


@dataclass(slots=True)
class SearchDoc:
    """A document as read from an index."""

    index: str
    id: str
    source: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AspectRow:
    """One version-0 row, its JSON still as text (parsed lazily by who needs it)."""

    aspect: str
    metadata: str
    systemmetadata: str | None
    created: Any  # as the driver returns it (naive UTC datetime); see `createdon`

    @property
    def createdon(self) -> datetime:
        """The write time, timezone-aware (UTC); converted on demand, off the hot path."""
        return as_utc(self.created)


@dataclass(frozen=True, slots=True)
class EntityRows:
    """All version-0 rows of one urn."""

    urn: str
    rows: dict[str, AspectRow]
    # aspects with more than one version-0 row (a table without DataHub's primary key)
    duplicated: frozenset[str] = frozenset()

    @property
    def changed_at(self) -> datetime:
        return as_utc(max(r.created for r in self.rows.values()))


def as_utc(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)


@dataclass(frozen=True)
class OffsetSample:
    """One reading of a partition: the group's committed offset and the log's bounds."""

    topic: str
    partition: int
    committed: int | None
    start: int
    end: int
    members: int
    taken_at: float  # epoch seconds
    owner: str | None = None  # the group member the partition is assigned to


@dataclass(frozen=True)
class MclHit:
    """An MCL found on a partition for a urn of interest."""

    urn: str
    offset: int
    timestamp: datetime
    aspect: str | None  # None when the value could not be decoded (no registry)
    change_type: str | None
    value: bytes | None = None  # the aspect's JSON as published (None: not decoded)
