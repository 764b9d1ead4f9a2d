"""The DataHub platform: `metadata_aspect_v2` against the entity indices, judged with the MAE
consumer's Kafka offsets; repaired by replaying MCLs or reindexing from the rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack, closing
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.backends.connect import open_events, open_search, open_state, open_store
from auditor.core.model import Classified, Report, Selection
from auditor.core.plan import RebuildOutcome, RestoreEvidence
from auditor.core.registry import Registry
from auditor.core.triage import TriageResult
from auditor.errors import ConfigError
from auditor.platforms.base import Capability, Platform
from auditor.platforms.datahub import commands
from auditor.platforms.datahub.target import scan_target
from auditor.scan.join import Progress
from auditor.scan.run import ScanBackends, ScanOptions
from auditor.scan.v3 import scan_with_v3
from auditor.settings import Settings

if TYPE_CHECKING:
    from auditor.drill.spec import TableSpec
    from auditor.platforms.resident import Resident
    from auditor.rebuild.run import RebuildRequest


class DataHub(Platform):
    name = "datahub"
    title = "DataHub"
    capabilities = frozenset(Capability)
    fills_repair_datahub = True
    paste_hint = "a urn or a DataHub URL (quoted, URL-encoded: as pasted)"

    def open_resident(self, settings: Settings) -> Resident:
        from auditor.platforms.datahub.resident import DataHubResident

        return DataHubResident(settings, Registry.load())

    def readiness(self, settings: Settings) -> dict[str, Callable[[], str]]:
        from auditor.platforms.resident import search_probe

        out = {"database": lambda: _ping_store(settings), "search": lambda: search_probe(settings)}
        if settings.kafka_bootstrap:
            out["kafka"] = lambda: _ping_kafka(settings)
        return out

    def drill_tables(self) -> tuple[TableSpec, ...]:
        from auditor.drill.spec import METADATA_ASPECT_V2

        return (METADATA_ASPECT_V2,)

    def check_name(self, text: str) -> None:
        from auditor.core.urn_text import normalize
        from auditor.core.urns import UrnError

        try:
            normalize(text)
        except UrnError as exc:
            raise ConfigError(
                f"not a urn: {exc}", hint="e.g. 'urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)'"
            ) from None

    def scan(
        self,
        settings: Settings,
        selection: Selection,
        options: ScanOptions,
        progress: Progress | None = None,
        *,
        registry: Registry | None = None,
        log: Callable[[str], None] | None = None,
    ) -> Report:
        report = Report(
            started_at=datetime.now(UTC),
            scope=selection,
            index_prefix=settings.index_prefix,
            consumer_group=settings.mae_consumer_group,
            sources=settings.describe(),
        )
        if settings.kafka_bootstrap or settings.transport == "pgqueue":  # a repair defaults to them
            report.sources["versioned_topic"] = settings.mcl_versioned_topic
            report.sources["timeseries_topic"] = settings.mcl_timeseries_topic
        with ExitStack() as opened:  # every connection closed after the scan, whatever happens
            store = opened.enter_context(closing(open_store(settings)))
            search = opened.enter_context(closing(open_search(settings)))
            report.sources["store_version"] = store.ping()
            report.sources["search_version"] = search.version()
            registry = registry or Registry.load()
            events = open_events(settings, report.warnings)
            if events is not None:
                opened.callback(events.close)
            state = opened.enter_context(closing(open_state(settings, options.use_state)))
            backends = ScanBackends(store, search, events, state)
            return scan_with_v3(backends, registry, report, options, scan_target(settings), progress, log)

    def triage(
        self,
        settings: Settings,
        text: str,
        *,
        entity_types: Sequence[str] = (),
        grace: float | None = None,
        settle: float = 10.0,
    ) -> TriageResult:
        if entity_types:
            raise ConfigError("--entity-type is for --platform openmetadata (a urn names its type)")
        self.check_name(text)  # refused before anything is connected
        resident = self.open_resident(settings)  # the console's walk, on backends opened for one
        try:
            return resident.triage(text, grace=grace, settle=settle)
        finally:
            resident.close()

    def rebuild(self, settings: Settings, request: RebuildRequest) -> RebuildOutcome:
        from auditor.backends.connect import kafka_config
        from auditor.backends.index_writer import IndexWriter
        from auditor.backends.producer import MclProducer
        from auditor.rebuild.run import RebuildBackends
        from auditor.rebuild.run import rebuild as run_rebuild

        if settings.stores and request.mode != "plan":  # one repair per store (docs/federation.md)
            from auditor.rebuild.federation import rebuild_federation

            return rebuild_federation(settings, request, self.rebuild)
        with ExitStack() as opened:
            store = opened.enter_context(closing(open_store(settings)))
            search = opened.enter_context(closing(open_search(settings)))
            warnings: list[str] = []
            events = open_events(settings, warnings) if request.mode != "plan" else None
            if events is not None:
                opened.callback(events.close)
            state = opened.enter_context(closing(open_state(settings, use=False)))
            producer = None
            if settings.transport == "pgqueue":  # RESTATE rows into DataHub's PostgreSQL queue
                from auditor.backends.pgqueue_open import open_pgqueue_producer

                def producer() -> MclProducer:
                    return open_pgqueue_producer(settings)

            elif settings.kafka_bootstrap:

                def producer() -> MclProducer:
                    return MclProducer(
                        kafka_config(settings), settings.schema_registry_url, settings.mcl_versioned_topic
                    )

            backends = RebuildBackends(
                ScanBackends(store, search, events, state),
                store,
                producer,
                lambda: IndexWriter(search),
                f"{store.description} {search.description}",
            )
            if request.state_dir == Path("."):
                request.state_dir = Path(settings.state_file).parent
            outcome = run_rebuild(backends, Registry.load(), scan_target(settings), request)
        outcome.warnings = warnings + outcome.warnings
        return outcome

    def restore_window(self, settings: Settings, first: Report) -> RestoreEvidence:
        """How far search is behind the database: the last write against the system metadata."""
        from auditor.core.naming import system_metadata_index
        from auditor.rebuild.after_restore import ms_to_datetime, window

        with closing(open_store(settings)) as store, closing(open_search(settings)) as search:
            sysmeta = search.max_of(system_metadata_index(settings.index_prefix), "lastUpdated")
            return window(first, store.last_write(), ms_to_datetime(sysmeta))

    def finding_commands(self, c: Classified, *, group: str, until: datetime | None = None) -> list[str]:
        return commands.finding_commands(c, group=group, until=until)

    def finding_rebuild(self, c: Classified) -> str | None:
        return commands.finding_rebuild(c)

    def repair_commands(
        self, findings: Iterable[Classified], *, group: str, until: datetime | None = None
    ) -> list[str]:
        return commands.repair_commands(findings, group=group, until=until)


def _ping_store(settings: Settings) -> str:
    with closing(open_store(settings)) as store:
        return str(store.ping())


def _ping_kafka(settings: Settings) -> str:
    from auditor.backends.connect import kafka_config
    from auditor.backends.events import EventLog
    from auditor.errors import BackendUnavailable

    events = EventLog(kafka_config(settings), None, timeout=3.0)
    try:
        topic = settings.mcl_versioned_topic
        n = events.partitions(topic)
        if n == 0:
            why = events.topic_errors.get(topic) or "not found"
            raise BackendUnavailable(f"topic {topic}: {why}")
        return f"{topic}: {n} partitions"
    finally:
        events.close()


PLATFORM = DataHub()
