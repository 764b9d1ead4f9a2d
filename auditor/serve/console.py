"""The console's resident half: the settings, the registry and warm backends, for many requests.

A `Session` is one set of opened backends (the store's and the search cluster's connection
pools, the Kafka clients), used by one request at a time: the Kafka consumer is not thread-safe,
and a walk's backends hold per-walk state. `Sessions` keeps up to `size` of them and hands one
out per triage; a session whose backend failed is closed, not returned, so the next request
opens fresh ones: the service rides out a backend restart without a restart of its own. The
state file is opened per walk (SQLite's connections stay in their thread), read-only.

Everything here is synchronous; the web layer (auditor.serve.app) runs it in worker threads
with a deadline.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from typing import Any

from auditor.core.triage import TriageResult
from auditor.errors import AuditorError, BackendUnavailable, ConfigError
from auditor.settings import Settings

log = logging.getLogger("auditor.serve")


class Session:
    """One request's backends, opened once and reused by the requests that follow."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.opened = ExitStack()
        self.warnings: list[str] = []
        self.events: Any = None
        try:
            if settings.platform == "openmetadata":
                from auditor.backends.connect import open_om_search, open_om_store

                self.store: Any = self.opened.enter_context(closing(open_om_store(settings)))
                self.search: Any = self.opened.enter_context(closing(open_om_search(settings)))
            else:
                from auditor.backends.connect import open_events, open_search, open_store

                self.store = self.opened.enter_context(closing(open_store(settings)))
                self.search = self.opened.enter_context(closing(open_search(settings)))
                self.events = open_events(settings, self.warnings)
                if self.events is not None:
                    self.opened.callback(self.events.close)
        except BaseException:
            self.close()
            raise

    @property
    def degraded(self) -> bool:
        """Kafka is configured but could not be opened (the walk ran with weaker verdicts)."""
        return (
            self.settings.platform != "openmetadata"
            and bool(self.settings.kafka_bootstrap)
            and (self.events is None)
        )

    def close(self) -> None:
        try:
            self.opened.close()
        except Exception as exc:  # a pool that lost its server may fail to close: it is gone anyway
            log.debug("closing a session: %s", exc)


class Sessions:
    """Up to `size` sessions; a request waits for one when all are in use."""

    def __init__(self, settings: Settings, size: int) -> None:
        self.settings = settings
        self.size = size
        self.idle: queue.LifoQueue[Session] = queue.LifoQueue()
        self.available = threading.Semaphore(size)

    def use(self, fn: Callable[[Session], Any]) -> Any:
        self.available.acquire()
        try:
            try:
                session = self.idle.get_nowait()
            except queue.Empty:
                session = Session(self.settings)
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
    registry: Any = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.pool = Sessions(self.settings, self.sessions)
        if self.platform == "datahub":
            from auditor.core.registry import Registry

            self.registry = Registry.load()

    @property
    def platform(self) -> str:
        return "openmetadata" if self.settings.platform == "openmetadata" else "datahub"

    @property
    def group(self) -> str:
        return self.settings.mae_consumer_group if self.platform == "datahub" else ""

    def describe(self) -> dict[str, str]:
        """What the console audits (no credentials: Settings.describe redacts them)."""
        return {"platform": self.platform, **self.settings.describe()}

    def triage(self, text: str, entity_types: tuple[str, ...] = ()) -> TriageResult:
        if self.platform == "openmetadata":
            return self._om_triage(text, entity_types)
        from auditor.core.urn_text import normalize
        from auditor.core.urns import UrnError

        if entity_types:
            raise ConfigError("an entity type is for OpenMetadata (a urn names its type)")
        try:  # refused before any backend is used, as the CLI does
            urn, read_as = normalize(text)
        except UrnError as exc:
            raise ConfigError(
                f"not a urn: {exc}", hint="e.g. 'urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)'"
            ) from None
        return self.pool.use(lambda s: self._walk(s, text, urn, read_as))

    def warm(self) -> None:
        """Load the walk's modules and open one session before the first request asks (a cold
        first triage imports the scan pipeline and connects everything: seconds on a busy
        machine). A backend that is down now is simply opened later, by a request."""
        try:
            if self.platform == "openmetadata":
                import auditor.triage.om_walk  # noqa: F401
            else:
                import auditor.triage.walk  # noqa: F401
            self.pool.use(lambda session: None)
        except Exception as exc:
            log.warning("warming up: %s", exc)

    def _walk(self, session: Session, text: str, urn: str, read_as: list[str]) -> TriageResult:
        from auditor.api import scan_target
        from auditor.backends.state import ScanState
        from auditor.scan.run import ScanBackends
        from auditor.triage.walk import walk

        target = scan_target(self.settings)
        with closing(ScanState(self.settings.state_file, read_only=True)) as state:
            backends = ScanBackends(session.store, session.search, session.events, state)
            result = walk(
                backends,
                self.registry,
                target,
                urn,
                asked=text,
                read_as=read_as,
                grace=target.grace if self.grace is None else self.grace,
                settle=self.settle,
            )
        result.warnings = session.warnings + result.warnings
        return result

    def _om_triage(self, text: str, entity_types: tuple[str, ...]) -> TriageResult:
        from auditor.core.om_naming import ENTITIES, entities
        from auditor.core.om_text import om_pasted

        try:
            asked, types, read_as = om_pasted(text, tuple(ENTITIES))
        except ValueError as exc:
            raise ConfigError(str(exc), hint="paste the entity's FQN, its id, or its page's URL") from None
        if not asked:
            raise ConfigError("nothing to look up", hint="paste the entity's FQN, its id, or its page's URL")
        chosen = entities(entity_types or types)
        return self.pool.use(lambda s: self._om_walk(s, text, asked, read_as, chosen))

    def _om_walk(self, session: Session, text: str, asked: str, read_as: list[str], chosen: Any) -> Any:
        from auditor.api import _om_state
        from auditor.backends.state import ScanState
        from auditor.scan.om_run import OmScanOptions
        from auditor.triage.om_walk import om_walk

        settings = _om_state(self.settings)
        options = OmScanOptions(
            grace=settings.grace_seconds if self.grace is None else self.grace,
            visibility=settings.index_visibility_seconds,
            use_state=False,
        )
        with closing(ScanState(settings.state_file, read_only=True)) as state:
            result = om_walk(session.store, session.search, state, chosen, asked, options)
        result.asked, result.read_as = text, read_as + result.read_as
        return result

    # ---------------------------------------------------------------- readiness, one backend each

    def checks(self) -> dict[str, Callable[[], str]]:
        """Each backend's own probe (a fresh connection each, never a pooled session's): name ->
        a function returning its version, raising when it is down."""
        out: dict[str, Callable[[], str]] = {"database": self._check_store, "search": self._check_search}
        if self.platform == "datahub" and self.settings.kafka_bootstrap:
            out["kafka"] = self._check_kafka
        return out

    def _check_store(self) -> str:
        from auditor.backends.connect import open_om_store, open_store

        opener = open_om_store if self.platform == "openmetadata" else open_store
        with closing(opener(self.settings)) as store:
            return str(store.ping())

    def _check_search(self) -> str:
        from auditor.backends.connect import open_search

        with closing(open_search(self.settings)) as search:
            return str(search.version())

    def _check_kafka(self) -> str:
        from auditor.backends.connect import kafka_config
        from auditor.backends.events import EventLog

        events = EventLog(kafka_config(self.settings), None, timeout=3.0)
        try:
            topic = self.settings.mcl_versioned_topic
            n = events.partitions(topic)
            if n == 0:
                why = events.topic_errors.get(topic) or "not found"
                raise BackendUnavailable(f"topic {topic}: {why}")
            return f"{topic}: {n} partitions"
        finally:
            events.close()

    def close(self) -> None:
        self.pool.close()
