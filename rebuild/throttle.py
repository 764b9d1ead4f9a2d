"""A rate limit: at most `rate` operations per second, smoothed (None: unlimited)."""

from __future__ import annotations

import time
from collections.abc import Callable


class Throttle:
    def __init__(
        self,
        rate: float | None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval = 1.0 / rate if rate else 0.0
        self.clock, self.sleep = clock, sleep
        self.next_at = 0.0

    def wait(self) -> None:
        if not self.interval:
            return
        now = self.clock()
        if self.next_at > now:
            self.sleep(self.next_at - now)
            now = self.next_at
        self.next_at = max(self.next_at, now) + self.interval
