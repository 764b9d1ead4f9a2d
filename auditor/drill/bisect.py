"""Bisecting checksums over key ranges (the data-diff technique) down to a row-level diff.

The table is cut at boundaries sampled from one side into segments of about `segment_rows`.
One query per segment and side, inside the database, returns `factor` checksums (count + sum of
60-bit row hashes), one per bucket of the segment (a bucket: the first byte of MD5(key) modulo
`factor`); the sides' queries run in parallel. Only buckets whose checksums differ are looked
into: where they hold at most `threshold` rows, their row keys and row hashes are fetched from
both sides and compared (the leaf), and the rows that differ are fetched column by column; a
bigger one has its segment cut into `factor` ranges (boundaries from its own keys), checksummed
again. With the buckets, the first pass already narrows a difference to 1/factor of a segment.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

from auditor.core.drill import RowChange, RowDiff, TableStats
from auditor.drill.spec import TableSpec, strip_length

Bound = str | None
Segment = tuple[Bound, Bound]


class Checksummed(Protocol):
    @property
    def count(self) -> int: ...
    @property
    def total(self) -> int: ...


class DrillSide(Protocol):
    role: str

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]: ...
    def checksums(
        self, spec: TableSpec, lo: Bound, hi: Bound, divisors: dict[str, int], buckets: int
    ) -> Mapping[int, Checksummed]: ...
    def keys_in(self, spec: TableSpec, lo: Bound, hi: Bound) -> list[str]: ...
    def sample_keys(self, spec: TableSpec, wanted: int) -> list[str]: ...
    def ranges_use_index(self, spec: TableSpec) -> bool: ...
    def row_hashes(
        self,
        spec: TableSpec,
        lo: Bound,
        hi: Bound,
        divisors: dict[str, int],
        only: tuple[int, ...] = (),
        buckets: int = 1,
    ) -> dict[tuple[Any, ...], str]: ...
    def rows_for(
        self, spec: TableSpec, keys: list[tuple[Any, ...]], divisors: dict[str, int]
    ) -> dict[tuple[Any, ...], dict[str, str]]: ...


SCAN_BUCKET_ROWS = 256  # rows per hash bucket when the table is read in one pass
MAX_BUCKETS = 65_536  # the bucket is 16 bits of MD5(key)


@dataclass(frozen=True)
class BisectOptions:
    segment_rows: int = 16_384  # rows per first-level segment (the sample's spacing)
    factor: int = 32  # buckets per segment; ranges a segment is cut into when a bucket is too big
    threshold: int = 2_048  # a differing bucket this small is diffed row by row
    max_segments: int = 4_096  # first-level segments at most


@dataclass
class _Progress:
    segments: int = 0
    leaf_rows: int = 0
    levels: int = 0
    diffs: list[RowDiff] = field(default_factory=list)


def usable_bound(key: str) -> bool:
    """A boundary both engines cut at the same place: no control character, no trailing space
    (MySQL's PAD SPACE compares 'a\\t' below 'a'; the widened index range relies on this)."""
    return bool(key) and not key.endswith(" ") and all(ord(ch) >= 0x20 for ch in key)


def boundaries(keys: list[str], parts: int) -> list[str]:
    """Up to `parts - 1` cut points at even spacing through the keys sorted as bytes."""
    ordered = sorted({k for k in keys if usable_bound(k)})
    if parts <= 1 or not ordered:
        return []
    step = len(ordered) / parts
    cuts = {ordered[int(i * step)] for i in range(1, parts) if int(i * step) < len(ordered)}
    return sorted(cuts)


def segments_of(cuts: list[str], lo: Bound = None, hi: Bound = None) -> list[Segment]:
    inner = [c for c in cuts if (lo is None or c > lo) and (hi is None or c < hi)]
    edges: list[Bound] = [lo, *inner, hi]
    return [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


def diff_table(
    spec: TableSpec,
    source: DrillSide,
    target: DrillSide,
    divisors: dict[str, int],
    estimate: int,
    options: BisectOptions = BisectOptions(),
    say: Callable[[str], None] = lambda _: None,
) -> tuple[list[RowDiff], TableStats]:
    """Every row that differs between the two sides' copies of `spec`, and how it was found."""
    started = time.monotonic()
    scan = not (source.ranges_use_index(spec) and target.ranges_use_index(spec))
    if scan:  # a key range would be a full scan on one side: one pass, hash buckets only
        cuts: list[str] = []
        first = min(max(estimate // SCAN_BUCKET_ROWS, options.factor), MAX_BUCKETS)
        say(
            f"{spec.name}: one pass in {first} hash buckets "
            "(no index serves byte ranges of the key on one side)"
        )
    else:
        wanted = min(max(estimate // options.segment_rows, 1), options.max_segments)
        cuts = boundaries(source.sample_keys(spec, wanted * 8), wanted) if wanted > 1 else []
        first = options.factor
        say(f"{spec.name}: {len(cuts) + 1} first-level segments from a sample of {source.role}")
    progress = _Progress()
    rows = [0, 0]
    level = segments_of(cuts)
    depth = 0
    while level:
        depth += 1
        b = first if depth == 1 else options.factor
        progress.segments += len(level)
        sums = [
            (
                seg,
                source.submit(source.checksums, spec, *seg, divisors, b),
                target.submit(target.checksums, spec, *seg, divisors, b),
            )
            for seg in level
        ]
        level = []
        leaves: list[tuple[Segment, tuple[int, ...]]] = []
        differ = 0
        for seg, a_future, b_future in sums:
            a, t = a_future.result(), b_future.result()
            if depth == 1:
                rows[0] += sum(c.count for c in a.values())
                rows[1] += sum(c.count for c in t.values())
            buckets = tuple(sorted(k for k in set(a) | set(t) if _pair(a.get(k)) != _pair(t.get(k))))
            if not buckets:
                continue
            differ += 1
            size = max(max(_pair(a.get(k))[0], _pair(t.get(k))[0]) for k in buckets)
            parts = (
                boundaries(_keys_of_bigger(spec, source, target, seg), options.factor)
                if size > options.threshold
                else []
            )
            if parts:
                level.extend(segments_of(parts, *seg))
            else:
                leaves.append((seg, buckets))
        say(f"{spec.name}: level {depth}: {len(sums)} segments, {differ} differ")
        _diff_leaves(spec, source, target, leaves, divisors, b, progress)
    progress.levels = depth
    stats = TableStats(
        spec.name, rows[0], rows[1], progress.segments, progress.leaf_rows, depth, time.monotonic() - started
    )
    return sorted(progress.diffs, key=lambda d: _sortable(d.key)), stats


def _pair(c: Checksummed | None) -> tuple[int, int]:
    return (0, 0) if c is None else (c.count, c.total)


def _sortable(key: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(str(k) for k in key)


def _keys_of_bigger(spec: TableSpec, source: DrillSide, target: DrillSide, seg: Segment) -> list[str]:
    a, b = source.submit(source.keys_in, spec, *seg), target.submit(target.keys_in, spec, *seg)
    ka, kb = a.result(), b.result()
    return ka if len(ka) >= len(kb) else kb


def _diff_leaves(
    spec: TableSpec,
    source: DrillSide,
    target: DrillSide,
    leaves: list[tuple[Segment, tuple[int, ...]]],
    divisors: dict[str, int],
    buckets: int,
    progress: _Progress,
) -> None:
    pending = [
        (
            source.submit(source.row_hashes, spec, *seg, divisors, only, buckets),
            target.submit(target.row_hashes, spec, *seg, divisors, only, buckets),
        )
        for seg, only in leaves
    ]
    added: list[tuple[Any, ...]] = []
    removed: list[tuple[Any, ...]] = []
    changed: list[tuple[Any, ...]] = []
    for a_future, b_future in pending:
        a, b = a_future.result(), b_future.result()
        progress.leaf_rows += len(a) + len(b)
        removed.extend(k for k in a if k not in b)
        added.extend(k for k in b if k not in a)
        changed.extend(k for k, h in a.items() if k in b and b[k] != h)
    if not (added or removed or changed):
        return
    wanted = added + removed + changed
    a_rows = source.submit(source.rows_for, spec, wanted, divisors)
    b_rows = target.submit(target.rows_for, spec, wanted, divisors)
    src, dst = a_rows.result(), b_rows.result()
    names = [c.name for c in spec.columns]
    for key in removed:
        progress.diffs.append(
            RowDiff(spec.name, key, RowChange.REMOVED, source=_shown(src.get(key, {}), names))
        )
    for key in added:
        progress.diffs.append(
            RowDiff(spec.name, key, RowChange.ADDED, target=_shown(dst.get(key, {}), names))
        )
    for key in changed:
        s, t = src.get(key, {}), dst.get(key, {})
        cols = tuple(n for n in names if s.get(n) != t.get(n))
        if not cols:  # written between the two reads and equal again: nothing to report
            continue
        progress.diffs.append(
            RowDiff(spec.name, key, RowChange.CHANGED, cols, _shown(s, cols), _shown(t, cols))
        )


SHOWN_CHARS = 300


def _shown(texts: dict[str, str], names: Any) -> dict[str, str | None]:
    """The columns' values as the evidence shows them (long values cut to SHOWN_CHARS)."""
    out: dict[str, str | None] = {}
    for n in names:
        value = strip_length(texts.get(n))
        out[n] = value if value is None or len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS] + "…"
    return out
