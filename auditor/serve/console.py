"""The console's resident half: the settings and warm backends, for many requests.

A session is the platform's warm backends (`Platform.open_resident`: the store's and the search
cluster's connection pools, the Kafka clients), used by one request at a time: the Kafka
consumer is not thread-safe, and a walk's backends hold per-walk state. `Sessions` keeps up to
`size` of them and hands one out per triage; a session whose backend failed is closed, not
returned, so the next request opens fresh ones: the service rides out a backend restart without
a restart of its own. The state file is opened per walk (SQLite's connections stay in their
thread), read-only.

Everything here is synchronous; the web layer (auditor.serve.app) runs it in worker threads
with a deadline.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from auditor import platforms
from auditor.core.triage import TriageResult
from auditor.errors import AuditorError, BackendUnavailable
from auditor.platforms.base import Capability
from auditor.platforms.resident import Resident
from auditor.settings.model import Settings

log = logging.getLogger("auditor.serve")


class Sessions:
    """Up to `size` sessions; a request waits for one when all are in use."""

    def __init__(self, settings: Settings, size: int) -> None:
        self.settings = settings
        self.platform = platforms.get(settings.platform)
        self.size = size
        self.idle: queue.LifoQueue[Resident] = queue.LifoQueue()
        self.available = threading.Semaphore(size)

    def use(self, fn: Callable[[Resident], Any]) -> Any:
        self.available.acquire()
        try:
            try:
                session = self.idle.get_nowait()
            except queue.Empty:
                session = self.platform.open_resident(self.settings)
            try:
                out = fn(session)
            except BackendUnavailable:  # its pools may be dead: the next request opens new ones
                session.close()
                raise
            except AuditorError:
                self.idle.put(session)
                raise
            except Exception:
                session.close()
                raise
            if session.degraded:  # opened while Kafka was down: the next request tries it again
                session.close()
            else:
                self.idle.put(session)
            return out
        finally:
            self.available.release()

    def close(self) -> None:
        while True:
            try:
                self.idle.get_nowait().close()
            except queue.Empty:
                return


@dataclass
class Console:
    """What `auditor serve` holds: settings, registry, sessions. `triage(text)` is the walk of
    `auditor triage TEXT` on warm backends: the same result, the same verdicts."""

    settings: Settings
    sessions: int = 8
    grace: float | None = None
    settle: float = 10.0
    pool: Sessions = field(init=False)
    of: platforms.base.Platform = field(init=False)

    def __post_init__(self) -> None:
        self.pool = Sessions(self.settings, self.sessions)
        self.of = platforms.get(self.settings.platform)
        self.of.require(Capability.SERVE)

    @property
    def platform(self) -> str:
        return self.of.name

    @property
    def paste_hint(self) -> str:
        return self.of.paste_hint

    @property
    def group(self) -> str:
        return self.settings.mae_consumer_group if self.of.supports(Capability.CHANGE_LOG) else ""

    def describe(self) -> dict[str, str]:
        """What the console audits (no credentials: Settings.describe redacts them)."""
        return {"platform": self.platform, **self.settings.describe()}

    def triage(self, text: str, entity_types: tuple[str, ...] = ()) -> TriageResult:
        """`auditor triage TEXT` on warm backends: the same walk, the same result."""
        return self.pool.use(
            lambda s: s.triage(text, entity_types=entity_types, grace=self.grace, settle=self.settle)
        )

    def warm(self) -> None:
        """Open one session before the first request asks (a cold first triage imports the
        walk and connects everything: seconds on a busy machine). A backend that is down now is
        simply opened later, by a request."""
        try:
            self.pool.use(lambda session: None)
        except Exception as exc:
            log.warning("warming up: %s", exc)

    # ---------------------------------------------------------------- readiness, one backend each

    def checks(self) -> dict[str, Callable[[], str]]:
        """Each backend's own probe (a fresh connection each, never a pooled session's): name ->
        a function returning its version, raising when it is down."""
        return self.of.readiness(self.settings)

    def close(self) -> None:
        self.pool.close()
