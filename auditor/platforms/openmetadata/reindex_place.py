"""Where a running OpenMetadata reindex job is with one entity: behind it, ahead of it, or unknown.

Followed from open-metadata/OpenMetadata (2.0, distributed/): PartitionCalculator splits each
entity type into `search_index_partition` rows whose [rangeStart, rangeEnd) are offsets into
the type's rows as counted when the job initialised its partitions (listCount with
Include.ALL: soft-deleted rows too); PartitionWorker reads a partition from the row at
rangeStart (EntityRepository.getCursorAtOffset: `ORDER BY name, id LIMIT 1 OFFSET n`, or the
coordinator's precomputed boundary, the same order walked at initialisation) with the keyset
listAfter(name, id), batch by batch, advancing its `processingCursor` (an absolute offset);
completePartition marks it COMPLETED after the sink has flushed its writes; failPartition puts
it back to PENDING (lastError, retryCount + 1) until its retries are spent, then FAILED; a
stopped job CANCELLED.

The order is the database's own `ORDER BY name, id` in its own collation, which the auditor
asks the same database. The offsets, though, are of the rows as they were when the boundaries
were taken (at initialisation, or when a partition was claimed): rows written since the job
began may have moved (a rename), appeared or gone. So an entity's partition is known within
bounds: the rows not written since the job began (`updatedAt` before its createdAt) kept their
places, and at most every other row is before it. What places an entity is its key now: a
partition reads the rows after its boundary by key, so one renamed into a finished partition's
range will not be read by this job, one renamed into a pending one will; and a key past every
row counted is the last partition's to read. Pure: facts in, a placement out (reading them:
bookkeeping.py; judging with them: reindex.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from auditor.platforms.openmetadata.reindex_rows import as_int as _int
from auditor.platforms.openmetadata.reindex_rows import first_line, iso

PASSED = frozenset({"COMPLETED", "FAILED", "CANCELLED"})  # the job will not come back to these
AHEAD = frozenset({"PENDING", "PROCESSING"})


@dataclass(frozen=True)
class Partition:
    """A `search_index_partition` row: one slice of a type's rows, by offset."""

    id: str
    entity_type: str
    index: int
    start: int  # rangeStart (inclusive)
    end: int  # rangeEnd (exclusive)
    status: str
    cursor: int = 0  # processingCursor: the offset read up to
    completed_at: int | None = None
    updated_at: int = 0
    error: str = ""  # lastError, its first line
    retries: int = 0

    def said(self) -> str:
        when = f" at {iso(self.completed_at)}" if self.completed_at and self.status in PASSED else ""
        what = f"partition {self.index} of {self.entity_type} (offsets {self.start}-{self.end - 1}, "
        what += f"{self.status}{when}"
        if self.status == "PROCESSING":
            what += f", read up to offset {self.cursor}"
        if self.retries and self.status in AHEAD:
            what += f", retry {self.retries}"
        if self.error and (self.status == "FAILED" or self.retries):
            what += f": {self.error}"
        return what + ")"

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index, "status": self.status, "range": [self.start, self.end]}
        if self.error and (self.status == "FAILED" or self.retries):
            out["error"] = self.error
        return out


def partition_from_row(row: Mapping[str, Any]) -> Partition:
    """A partition from its row (column names lowercased)."""
    return Partition(
        id=first_line(row.get("id"), 64),
        entity_type=first_line(row.get("entitytype"), 128),
        index=_int(row.get("partitionindex")),
        start=_int(row.get("rangestart")),
        end=_int(row.get("rangeend")),
        status=first_line(row.get("status"), 32).upper() or "PENDING",
        cursor=_int(row.get("processingcursor")),
        completed_at=_int(row.get("completedat")) or None,
        updated_at=_int(row.get("lastupdateat")),
        error=first_line(row.get("lasterror")),
        retries=_int(row.get("retrycount")),
    )


@dataclass(frozen=True)
class Order:
    """What the type's table says of its order since the job began (its createdAt)."""

    rows: int  # rows now
    unchanged: int  # rows whose updatedAt is before the job's createdAt: each kept its place
    before: Mapping[str, int]  # entity id -> the unchanged rows ordered before its (name, id) now


@dataclass(frozen=True)
class Placement:
    """The partitions an entity may be in, and what that makes of the job for it."""

    state: str  # "passed" (the job is done with it), "failed", "ahead" (it will reach it), "unknown"
    partitions: tuple[Partition, ...] = ()
    low: int = 0  # its offset lies in [low, high] (past `total`: after every row counted)
    high: int = 0
    why: str = ""  # for "unknown"; else what the placement rests on
    total: int = 0  # the type's rows the job counted

    def where(self) -> str:
        if self.state == "unknown":
            return f"its place in the job's order is unknown: {self.why}"
        high = min(self.high, self.total - 1)
        if self.low >= self.total:
            at = f"past the last of the {self.total} rows it counted"
        elif self.low == high:
            at = f"offset {self.low} of {self.total}"
        else:
            at = f"offsets {self.low}-{high} of {self.total}"
        parts = "; ".join(p.said() for p in self.partitions)
        said = f"its place in the job's order (name, id) is {at}: {parts}"
        return said + (f" ({self.why})" if self.why else "")

    def summary(self) -> dict[str, Any]:
        if self.state == "unknown":
            return {"state": "unknown", "why": self.why}
        return {
            "state": self.state,
            "offsets": [self.low, self.high],
            "partitions": [p.summary() for p in self.partitions],
        }


def place(entity_id: str, partitions: Sequence[Partition], order: Order | None) -> Placement:
    """The partitions of the running job that may hold the entity, and the job's state with it."""
    if not partitions:
        return Placement("unknown", why="the job has no partition of its type")
    if order is None:
        return Placement("unknown", why="the type's order could not be read")
    if entity_id not in order.before:
        return Placement("unknown", why="its row is gone or has no name")
    total = max(p.end for p in partitions)
    if order.unchanged > total:  # rows it must have counted: the job counted another set
        why = f"{order.unchanged} rows unchanged since the job began, more than the {total} it counted"
        return Placement("unknown", why=why)
    others = max(total, order.rows) - order.unchanged  # rows whose place then is not known
    low = order.before[entity_id]
    high = low + others
    by_index = sorted(partitions, key=lambda p: p.index)
    found = [p for p in by_index if p.start <= high and low < p.end]
    last = by_index[-1]
    if high >= total and last not in found:  # past every row counted: the last partition reads on
        found.append(last)
    notes = []
    if others:
        notes.append(f"{others} rows were written or removed since the job began: their places are not known")
    if high >= total:
        notes.append(f"past the {total} rows it counted, the last partition reads on")
    states = {p.status for p in found}
    if states <= PASSED:
        state = "failed" if states == {"FAILED"} else "passed"
    else:  # PENDING, PROCESSING (or a status this reader does not know): work to come
        state = "ahead"
    return Placement(state, tuple(found), low, high, "; ".join(notes), total)
