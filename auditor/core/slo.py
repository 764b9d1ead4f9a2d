"""Freshness SLO math in fixed memory: a latency histogram and multi-window burn rates."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

# Prometheus-style upper bounds (seconds): fine where search usually lands, coarse beyond
DEFAULT_BUCKETS: tuple[float, ...] = (
    0.25,
    0.5,
    1,
    2,
    3,
    5,
    7.5,
    10,
    15,
    20,
    30,
    45,
    60,
    90,
    120,
    180,
    300,
    600,
    1200,
    1800,
    3600,
)


class LatencyHistogram:
    """Cumulative-bucket histogram (Prometheus semantics): memory is the number of buckets."""

    def __init__(self, bounds: Sequence[float] = DEFAULT_BUCKETS) -> None:
        if list(bounds) != sorted(set(bounds)) or not bounds:
            raise ValueError("histogram bounds must be distinct and increasing")
        self.bounds = tuple(float(b) for b in bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.total = 0
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.total += 1
        self.sum += seconds

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, events at or below it), +Inf last: the `_bucket` series."""
        out, running = [], 0
        for bound, n in zip((*self.bounds, math.inf), self.counts, strict=True):
            running += n
            out.append((bound, running))
        return out

    def quantile(self, q: float) -> float | None:
        """Prometheus' histogram_quantile: linear within the bucket; the top bound past the last.

        None without observations; `math.inf` is never returned (a quantile in the +Inf bucket
        is the highest finite bound, as Prometheus does: read it as "at least").
        """
        if self.total == 0:
            return None
        rank = q * self.total
        lower, below = 0.0, 0
        for bound, count in zip(self.bounds, self.counts, strict=False):
            if below + count >= rank and count > 0:
                return lower + (bound - lower) * (rank - below) / count
            below += count
            lower = bound
        return self.bounds[-1]


@dataclass(frozen=True)
class BurnWindow:
    """One multi-window burn-rate alert: fires when both windows burn faster than `factor`."""

    name: str  # e.g. "page-1h"
    severity: str  # page | ticket
    long_seconds: float
    short_seconds: float
    factor: float


# The SRE workbook's multi-window, multi-burn-rate alerts for a 30-day SLO (sloth's google-30d)
GOOGLE_30D: tuple[BurnWindow, ...] = (
    BurnWindow("page-1h", "page", 3600, 300, 14.4),  # 2% of the budget in 1 h
    BurnWindow("page-6h", "page", 6 * 3600, 1800, 6.0),  # 5% in 6 h
    BurnWindow("ticket-3d", "ticket", 3 * 86400, 6 * 3600, 1.0),  # 10% in 3 days
)


def scaled(windows: Sequence[BurnWindow], scale: float) -> tuple[BurnWindow, ...]:
    """The same alerts over windows `scale` times as long (tests: 0.001 makes 1 h 3.6 s)."""
    return tuple(
        BurnWindow(w.name, w.severity, w.long_seconds * scale, w.short_seconds * scale, w.factor)
        for w in windows
    )


class BurnRate:
    """Good/total event counts in a ring of fixed-width time buckets; burn rate per window.

    Memory: longest window / bucket width slots (3 days of minutes: 4320 pairs of ints).
    burn rate = (bad / total over the window) / (1 - objective); 1.0 spends the budget exactly
    over the SLO period. A window with no events burns nothing.
    """

    def __init__(
        self, objective: float, windows: Sequence[BurnWindow] = GOOGLE_30D, bucket_seconds: float = 60.0
    ) -> None:
        if not 0 < objective < 1:
            raise ValueError("the objective is a share strictly between 0 and 1, e.g. 0.99")
        if bucket_seconds <= 0:
            raise ValueError("bucket width must be positive")
        self.objective = objective
        self.windows = tuple(windows)
        self.bucket_seconds = bucket_seconds
        longest = max((w.long_seconds for w in self.windows), default=bucket_seconds)
        self.slots = max(1, math.ceil(longest / bucket_seconds)) + 1
        self.good = [0] * self.slots
        self.total = [0] * self.slots
        self.stamp = [-1] * self.slots  # which bucket index a slot currently holds

    def _slot(self, now: float) -> int:
        index = int(now // self.bucket_seconds)
        slot = index % self.slots
        if self.stamp[slot] != index:  # a slot from an older lap: start it afresh
            self.stamp[slot], self.good[slot], self.total[slot] = index, 0, 0
        return slot

    def record(self, now: float, good: bool, n: int = 1) -> None:
        slot = self._slot(now)
        self.total[slot] += n
        self.good[slot] += n if good else 0

    def counts(self, now: float, seconds: float) -> tuple[int, int]:
        """(good, total) over the last `seconds` (whole buckets, the current one included)."""
        current = int(now // self.bucket_seconds)
        span = max(1, math.ceil(seconds / self.bucket_seconds))
        good = total = 0
        for index in range(current - min(span, self.slots) + 1, current + 1):
            slot = index % self.slots
            if self.stamp[slot] == index:
                good += self.good[slot]
                total += self.total[slot]
        return good, total

    def rate(self, now: float, seconds: float) -> float:
        good, total = self.counts(now, seconds)
        if total == 0:
            return 0.0
        return ((total - good) / total) / (1.0 - self.objective)

    def firing(self, now: float) -> list[tuple[BurnWindow, float, float]]:
        """Each window whose long and short burn rates both exceed its factor, with both rates."""
        out = []
        for w in self.windows:
            long_rate, short_rate = self.rate(now, w.long_seconds), self.rate(now, w.short_seconds)
            if long_rate > w.factor and short_rate > w.factor:
                out.append((w, long_rate, short_rate))
        return out
