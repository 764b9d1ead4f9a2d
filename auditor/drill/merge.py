"""Comparing a table outside the databases: both sides streamed in key byte order, merged row by row.

For a table whose JSON column has no common text across engines (OpenMetadata's `json`: `jsonb`
on PostgreSQL, the text as written on MySQL/MariaDB), each side runs ONE query, ordered by the key
as bytes and read through a server-side cursor `batch` rows at a time; a thread per side parses
each row's JSON into its canonical text (canonical_json) while the database streams the next
batch, and the main thread merges the two ordered streams: a key on one side only is added or
removed, a key on both whose values differ is changed, with the JSON paths that changed. Every
row is compared by its full canonical values (no hash, so no collision); memory holds a few
batches per side, whatever the table's size.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from auditor.core.drill import RowChange, RowDiff, TableStats
from auditor.drill.canonical_json import INVALID, Canonical, changed_paths, shown
from auditor.drill.spec import ColumnKind, TableSpec
from auditor.errors import BackendUnavailable

SHOWN_CHARS = 300
QUEUED_BATCHES = 4  # per side: what memory holds besides the batch being merged
Row = tuple[tuple[Any, ...], tuple[str | None, ...]]  # key, each column's canonical value


class StreamingSide(Protocol):
    role: str

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any: ...

    def stream_rows(
        self, spec: TableSpec, divisors: dict[str, int], batch: int
    ) -> Iterator[Sequence[Any]]: ...


class _Done:
    """The end of a side's stream."""


def _produce(
    side: StreamingSide,
    spec: TableSpec,
    divisors: dict[str, int],
    batch: int,
    out: queue.Queue[Any],
    stop: threading.Event,
) -> None:
    canonical = Canonical()
    n = len(spec.key)
    kinds = [c.kind for c in spec.columns]

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                out.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    try:
        for part in side.stream_rows(spec, divisors, batch):
            rows: list[Row] = []
            for r in part:
                values = tuple(
                    canonical.text(None if v is None else str(v))[0]
                    if kind is ColumnKind.JSON
                    else (None if v is None else str(v))
                    for kind, v in zip(kinds, r[n:], strict=True)
                )
                rows.append((tuple(r[:n]), values))
            if not put(rows):
                return
        put(_Done())
    except BaseException as exc:  # handed to the merging thread, which raises it
        put(exc)


def _rows(role: str, q: queue.Queue[Any]) -> Iterator[Row]:
    previous: tuple[Any, ...] | None = None
    while True:
        item = q.get()
        if isinstance(item, _Done):
            return
        if isinstance(item, BaseException):
            raise item
        for row in item:
            if previous is not None and not row[0] > previous:
                raise BackendUnavailable(
                    f"{role} database returned key {row[0]!r} after {previous!r}: not in byte order",
                    hint="the key's text does not order as bytes there; report the table to the maintainers",
                )
            previous = row[0]
            yield row


def merge_table(
    spec: TableSpec,
    source: StreamingSide,
    target: StreamingSide,
    divisors: dict[str, int],
    batch: int = 2_000,
    say: Callable[[str], None] = lambda _: None,
) -> tuple[list[RowDiff], TableStats]:
    """Every row that differs between the two sides' copies of `spec`, compared outside the
    databases (each side's reader runs on that side's own thread pool)."""
    started = time.monotonic()
    say(f"{spec.name}: both sides streamed in key byte order, JSON compared by value (outside the databases)")
    stop = threading.Event()
    queues: list[queue.Queue[Any]] = [queue.Queue(QUEUED_BATCHES), queue.Queue(QUEUED_BATCHES)]
    for side, q in zip((source, target), queues, strict=True):
        side.submit(_produce, side, spec, divisors, batch, q, stop)
    counts = [0, 0]
    diffs: list[RowDiff] = []
    try:
        a_rows, b_rows = _rows(source.role, queues[0]), _rows(target.role, queues[1])
        a, b = next(a_rows, None), next(b_rows, None)
        while a is not None or b is not None:
            if b is None or (a is not None and a[0] < b[0]):
                assert a is not None
                diffs.append(_one_side(spec, a, RowChange.REMOVED))
                counts[0] += 1
                a = next(a_rows, None)
            elif a is None or b[0] < a[0]:
                diffs.append(_one_side(spec, b, RowChange.ADDED))
                counts[1] += 1
                b = next(b_rows, None)
            else:
                if a[1] != b[1]:
                    diffs.append(_changed(spec, a, b))
                counts[0] += 1
                counts[1] += 1
                a, b = next(a_rows, None), next(b_rows, None)
    finally:
        stop.set()
    seconds = time.monotonic() - started
    batches = max((counts[0] + batch - 1) // batch, (counts[1] + batch - 1) // batch, 1)
    stats = TableStats(spec.name, counts[0], counts[1], batches, counts[0] + counts[1], 1, seconds)
    return diffs, stats


def _cut(value: str | None) -> str | None:
    return value if value is None or len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS] + "…"


def _one_side(spec: TableSpec, row: Row, change: RowChange) -> RowDiff:
    values = {c.name: _cut(v) for c, v in zip(spec.columns, row[1], strict=True)}
    if change is RowChange.REMOVED:
        return RowDiff(spec.name, row[0], change, source=values)
    return RowDiff(spec.name, row[0], change, target=values)


def _changed(spec: TableSpec, a: Row, b: Row) -> RowDiff:
    columns: list[str] = []
    paths: list[str] = []
    src: dict[str, str | None] = {}
    dst: dict[str, str | None] = {}
    for column, x, y in zip(spec.columns, a[1], b[1], strict=True):
        if x == y:
            continue
        columns.append(column.name)
        if column.kind is ColumnKind.JSON and x is not None and y is not None:
            found = changed_paths(_parsed(x), _parsed(y))
            paths.extend(f"{column.name}{p[1:]}" for p, _, _ in found)
            src[column.name] = _cut(_at_paths(found, 1))
            dst[column.name] = _cut(_at_paths(found, 2))
        else:
            src[column.name], dst[column.name] = _cut(x), _cut(y)
    return RowDiff(spec.name, a[0], RowChange.CHANGED, tuple(columns), src, dst, paths=tuple(paths))


def _parsed(canonical_text: str) -> Any:
    if canonical_text.startswith(INVALID):
        return canonical_text
    return Canonical().parse(canonical_text)[0]


def _at_paths(found: list[tuple[str, Any, Any]], side: int) -> str:
    """`{"$.path": value, ...}` for one side (a path absent on that side is left out)."""
    parts = []
    for entry in found:
        text = shown(entry[side])
        if text is not None:
            parts.append(f"{shown(entry[0])}:{text}")
    return "{" + ",".join(parts) + "}"
