"""A consumer's time lag and status over a long run (kafka-lag-exporter's table, Burrow's rules).

The scan judges a partition over one short sampling window (`core/consumer.py`); a watch that
runs for days keeps, per partition, a bounded table of (log end offset, time) points and a
bounded window of the group's commits, and reads both at any moment.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import StrEnum


class LagTable:
    """kafka-lag-exporter's lookup table: (offset, time) points of the log end, at most `size`.

    The time lag of the group is now minus the time the log end reached the committed offset:
    linear interpolation between the two points bracketing it, extrapolation past either end.
    """

    def __init__(self, size: int = 60) -> None:
        self.points: deque[tuple[int, float]] = deque(maxlen=size)

    def add(self, end_offset: int, at: float) -> None:
        if self.points and self.points[-1][0] == end_offset:
            # a quiet log: keep the first time it reached this offset, slide only the newest
            if len(self.points) >= 2 and self.points[-2][0] == end_offset:
                self.points[-1] = (end_offset, at)
                return
        if self.points and end_offset < self.points[-1][0]:
            self.points.clear()  # the topic was recreated: the old points mean nothing
        self.points.append((end_offset, at))

    def time_of(self, offset: int) -> float | None:
        """When the log end reached `offset` (interpolated / extrapolated); None: too few points."""
        pts = [p for i, p in enumerate(self.points) if i == 0 or p[0] != self.points[i - 1][0]]
        if len(pts) < 2:
            return pts[0][1] if pts and offset >= pts[0][0] else None
        if offset <= pts[0][0]:
            (o1, t1), (o2, t2) = pts[0], pts[1]
        elif offset >= pts[-1][0]:
            (o1, t1), (o2, t2) = pts[-2], pts[-1]
        else:
            i = next(i for i in range(1, len(pts)) if pts[i][0] >= offset)
            (o1, t1), (o2, t2) = pts[i - 1], pts[i]
        if o2 == o1:
            return t2
        return t1 + (t2 - t1) * (offset - o1) / (o2 - o1)

    def time_lag(self, committed: int, end: int, now: float) -> float:
        """Seconds behind: 0 with no lag, else now minus when the log end was at `committed`."""
        if committed >= end:
            return 0.0
        at = self.time_of(committed)
        return max(0.0, now - at) if at is not None else 0.0


class GroupStatus(StrEnum):
    """Burrow's evaluation of one partition over its window of commits."""

    OK = "ok"
    WARN = "warn"  # lag never decreased across the window
    STALL = "stall"  # commits keep coming, the offset repeats, lag > 0
    STOP = "stop"  # no commit for longer than the window's commit span (nobody left to commit)
    REWIND = "rewind"  # a committed offset went down


@dataclass(frozen=True)
class Commit:
    """One observation of the group's committed offset on a partition."""

    offset: int
    lag: int
    at: float  # when it was read
    members: int = 1  # active members of the group then


class CommitWindow:
    """The last `size` distinct observations of a partition's commits, evaluated like Burrow."""

    def __init__(self, size: int = 10) -> None:
        self.commits: deque[Commit] = deque(maxlen=size)
        self.last_change = 0.0  # when the committed offset last moved

    def add(self, offset: int, lag: int, at: float, members: int = 1) -> None:
        if not self.commits or self.commits[-1].offset != offset:
            self.last_change = at
        self.commits.append(Commit(offset, lag, at, members))

    def status(self, now: float) -> GroupStatus:
        """REWIND > OK (no lag) > STOP/STALL (no progress over the window) > WARN > OK.

        Kafka does not say when a group last committed, only what: an offset that did not move
        over the whole window is STOP when the group has no member left to commit (the time
        since its last commit then keeps growing past the window's span), else STALL.
        """
        c = list(self.commits)
        if len(c) < 2:
            return GroupStatus.OK
        if any(b.offset < a.offset for a, b in zip(c, c[1:], strict=False)):
            return GroupStatus.REWIND
        last = c[-1]
        if last.lag == 0:
            return GroupStatus.OK
        if c[0].offset == last.offset and now - self.last_change >= last.at - c[0].at:
            return GroupStatus.STOP if last.members == 0 else GroupStatus.STALL
        if all(b.lag >= a.lag for a, b in zip(c, c[1:], strict=False)) and last.lag > c[0].lag:
            return GroupStatus.WARN
        return GroupStatus.OK
