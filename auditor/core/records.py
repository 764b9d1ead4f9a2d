"""The records the backends hand to the kernel: rows, offset samples, MCL hits, documents."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
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


# in a search backend's `mapped_fields`: the mapping adds the fields new documents bring (a
# marker, never a field name)
DYNAMIC = "*dynamic*"


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
class CommitRun:
    """Since when a partition's committed offset has held its value, as the broker's log of the
    group's commits (`__consumer_offsets`) shows it. `offset` None: no commit in the window read,
    so whatever the offset is now it was before `since` (the window's start); -1: deleted.
    `before`: the value the run replaced, when the window read shows one (None: the run may be
    older than the window, or follows a deletion), so the group moved from it at `since`;
    `before_since`: when that value was first committed in the window read (the start of the
    window read at the earliest: the step between the two is the group's commit cadence, or less)."""

    offset: int | None
    since: float  # epoch seconds, the broker's clock
    before: int | None = None
    before_since: float | None = None
    # every value the window read shows since its last deletion, with when it was first
    # committed, in order (the last is `offset`'s): what the group held at an instant in the window
    moves: tuple[tuple[int, float], ...] = field(default=(), compare=False)

    def held_at(self, when: float) -> int | None:
        """The committed offset at `when` (the broker's clock), as the window read shows it; None
        when it does not (`when` before the first value it shows, or no value at all)."""
        held = None
        for offset, since in self.moves:
            if since > when:
                break
            held = offset
        return held


@dataclass(frozen=True)
class MclHit:
    """An MCL found on a partition for a urn of interest."""

    urn: str
    offset: int
    timestamp: datetime
    aspect: str | None  # None when the value could not be decoded (no registry)
    change_type: str | None
    value: bytes | None = None  # the aspect's JSON as published (None: not decoded)
    # the change's audit stamp as GMS put it in the MCL (`created.time`): the row's createdon of
    # the write that published it (None: not decoded, or not given)
    created: datetime | None = None


@dataclass(frozen=True)
class RowsDigest:
    """A set of version-0 rows in one value: how many, the sum of a 60-bit digest of each
    (urn, aspect, metadata, systemmetadata), and the newest createdon. The database computes it
    over what it holds now (`MetadataStore.page_digest`, `urns_digest`), `rows_digest` over rows
    as read: equal, nothing was written, deleted or rewritten in between (a collision needs two
    sums of 60-bit digests to meet); unequal, the guard compares row by row."""

    count: int = 0
    total: int = 0
    newest: Any = None

    def __add__(self, other: RowsDigest) -> RowsDigest:
        newest = max((t for t in (self.newest, other.newest) if t is not None), default=None)
        return RowsDigest(self.count + other.count, self.total + other.total, newest)


def rows_digest(rows: Iterable[tuple[str, AspectRow]]) -> RowsDigest:
    """`RowsDigest` of rows as read (the same text the database digests, the same MD5)."""
    count = total = 0
    newest = None
    for urn, row in rows:
        text_ = f"{urn}|{row.aspect}|{row.metadata or ''}|{row.systemmetadata or ''}"
        total += int(hashlib.md5(text_.encode("utf-8"), usedforsecurity=False).hexdigest()[:15], 16)
        count += 1
        if newest is None or row.created > newest:
            newest = row.created
    return RowsDigest(count, total, newest)
