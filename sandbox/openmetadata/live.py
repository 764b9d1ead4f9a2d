"""Live writes: a background thread updating entities through the OM-like server at a rate.

Each write is a real PATCH (description, sometimes owners) with its DB commit and its
synchronous search write, so a scan running meanwhile sees rows and docs moving as they do
on a busy OpenMetadata server.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence

from sandbox.openmetadata.entities import OmEntity
from sandbox.openmetadata.server import OmServer

DEFAULT_KINDS = ("table", "dashboard", "topic", "pipeline", "glossaryTerm")


class LiveWriter:
    """Updates random live entities at `rate` writes a second until `stop()`."""

    def __init__(
        self, server: OmServer, rate: float = 5.0, *, seed: int = 0, kinds: Sequence[str] = DEFAULT_KINDS
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive (writes per second)")
        self.server, self.rate, self.kinds = server, rate, tuple(kinds)
        self.rng = random.Random(seed)
        self.writes = 0
        self.errors: list[str] = []
        self.written: list[str] = []  # entity ids, in write order
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LiveWriter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> LiveWriter:
        """Start the thread (once)."""
        if self._thread is not None:
            raise RuntimeError("LiveWriter already started")
        self._thread = threading.Thread(target=self._run, name="om-live-writer", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> int:
        """Stop and wait for the thread; returns the number of writes made."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        return self.writes

    def _candidates(self) -> list[OmEntity]:
        with self.server._lock:
            return [e for e in self.server.entities.values() if e.type in self.kinds and not e.deleted]

    def _run(self) -> None:
        interval = 1.0 / self.rate
        next_at = time.monotonic()
        owners = [e for e in self.server.entities.values() if e.type in ("user", "team")]
        while not self._stop.is_set():
            candidates = self._candidates()
            if candidates:
                entity = self.rng.choice(candidates)
                try:
                    if owners and self.rng.random() < 0.3:
                        self.server.update(entity, owners=[self.rng.choice(owners)])
                    else:
                        self.server.update(entity, description=f"live {self.writes}")
                    self.writes += 1
                    self.written.append(entity.id)
                except Exception as exc:  # keep writing; the test reads the errors
                    self.errors.append(f"{type(exc).__name__}: {exc}")
            next_at += interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))
