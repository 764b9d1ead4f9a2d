"""DataHub's warm backends for `auditor serve`: the store's and search's pools, the Kafka clients,
the registry; a triage is `auditor triage`'s walk on them."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from typing import Any

from auditor.backends.connect import open_search
from auditor.core.triage import TriageResult
from auditor.errors import ConfigError
from auditor.platforms.datahub.backends.connect import open_events, open_store
from auditor.platforms.resident import Resident
from auditor.settings.model import Settings


class DataHubResident(Resident):
    def __init__(self, settings: Settings, registry: Any) -> None:
        super().__init__()
        self.settings, self.registry = settings, registry
        self.events = None
        try:
            self.store = self.opened.enter_context(closing(open_store(settings)))
            if settings.transport == "pgqueue" or not settings.kafka_bootstrap:
                self.search = self.opened.enter_context(closing(open_search(settings)))
                self.events = open_events(settings, self.warnings)
            else:
                self.search, self.events = self._beside(settings)
            if self.events is not None:
                self.opened.callback(self.events.close)
        except BaseException:
            self.close()
            raise

    def _beside(self, settings: Settings) -> tuple[Any, Any]:
        """The search client and the event log, the broker's round trips (its metadata, the topics)
        taken beside the search client's start. What the thread imports is imported here first:
        two threads importing at once can deadlock on a cycle between their modules."""
        import confluent_kafka.admin  # noqa: F401

        with ThreadPoolExecutor(1, thread_name_prefix="kafka-open") as pool:
            events = pool.submit(open_events, settings, self.warnings)
            try:
                search = self.opened.enter_context(closing(open_search(settings)))
            except BaseException:
                opened = events.result() if events.exception() is None else None
                if opened is not None:
                    opened.close()  # its clients destroyed now, the search's error raised
                raise
            return search, events.result()

    @property
    def degraded(self) -> bool:
        return bool(self.settings.kafka_bootstrap) and self.events is None

    def triage(
        self, text: str, *, entity_types: Sequence[str] = (), grace: float | None = None, settle: float = 10.0
    ) -> TriageResult:
        from auditor.backends.state import ScanState
        from auditor.platforms.datahub.scan.run import ScanBackends
        from auditor.platforms.datahub.target import scan_target
        from auditor.platforms.datahub.triage.walk import walk
        from auditor.platforms.datahub.urn_text import normalize
        from auditor.platforms.datahub.urns import UrnError

        if entity_types:
            raise ConfigError("an entity type is for OpenMetadata (a urn names its type)")
        try:
            urn, read_as = normalize(text)
        except UrnError as exc:
            raise ConfigError(
                f"not a urn: {exc}", hint="e.g. 'urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)'"
            ) from None
        target = scan_target(self.settings)
        with closing(ScanState(self.settings.state_file, read_only=True)) as state:
            backends = ScanBackends(self.store, self.search, self.events, state)
            result = walk(
                backends,
                self.registry,
                target,
                urn,
                asked=text,
                read_as=read_as,
                grace=target.grace if grace is None else grace,
                settle=settle,
            )
        result.warnings = self.warnings + result.warnings
        return result
