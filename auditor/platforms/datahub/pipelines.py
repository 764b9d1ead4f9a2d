"""DataHub's pipelines as the platform runs them: the scan over its backends (V2, then V3), the
repair (replay or reindex, a federation store by store), the after-restore window and the
readiness probes. Imported when one runs (the platform object itself stays light: a refused
urn is refused before any of this loads)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack, closing
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from auditor.backends.connect import open_search, open_state
from auditor.backends.registry import registry_of
from auditor.core.model import Report, Selection
from auditor.core.plan import RebuildOutcome, RestoreEvidence
from auditor.platforms.datahub.backends.connect import open_events, open_store
from auditor.platforms.datahub.modes import EXECUTORS
from auditor.platforms.datahub.naming import PLATFORM
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.join import Progress
from auditor.platforms.datahub.scan.run import ScanBackends, ScanOptions
from auditor.platforms.datahub.target import scan_target
from auditor.platforms.datahub.v3 import scan_with_v3
from auditor.settings.model import Settings

if TYPE_CHECKING:
    from auditor.rebuild.request import RebuildRequest


def scan(
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
        sources={"platform": PLATFORM, **settings.describe()},  # every platform's report names it
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


def rebuild(settings: Settings, request: RebuildRequest) -> RebuildOutcome:
    from auditor.backends.connect import kafka_config
    from auditor.backends.index_writer import IndexWriter
    from auditor.platforms.datahub.backends.producer import MclProducer
    from auditor.rebuild.datahub.run import RebuildBackends
    from auditor.rebuild.datahub.run import rebuild as run_rebuild

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
            from auditor.platforms.datahub.backends.pgqueue_open import open_pgqueue_producer

            def producer() -> MclProducer:
                return open_pgqueue_producer(settings)

        elif settings.kafka_bootstrap:

            def producer() -> MclProducer:
                return MclProducer(
                    kafka_config(settings), registry_of(settings), settings.mcl_versioned_topic
                )

        backends = RebuildBackends(
            ScanBackends(store, search, events, state),
            store,
            producer,
            lambda: IndexWriter(search),
            f"{store.description} {search.description}",
        )
        outcome = run_rebuild(backends, Registry.load(), scan_target(settings), request, EXECUTORS)
    outcome.warnings = warnings + outcome.warnings
    return outcome


def restore_window(settings: Settings, first: Report) -> RestoreEvidence:
    """How far search is behind the database: the last write against the system metadata."""
    from auditor.platforms.datahub.naming import system_metadata_index
    from auditor.rebuild.datahub.after_restore import ms_to_datetime, window

    with closing(open_store(settings)) as store, closing(open_search(settings)) as search:
        sysmeta = search.max_of(system_metadata_index(settings.index_prefix), "lastUpdated")
        return window(first, store.last_write(), ms_to_datetime(sysmeta))


def ping_store(settings: Settings) -> str:
    with closing(open_store(settings)) as store:
        return str(store.ping())


def ping_kafka(settings: Settings) -> str:
    from auditor.backends.connect import kafka_config
    from auditor.errors import BackendUnavailable
    from auditor.platforms.datahub.backends.events import EventLog

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


def holders(settings: Settings, urns: Sequence[str]) -> dict[str, list[str]]:
    """For each of `urns`, the federation's stores that hold rows of it now (each opened once)."""
    from auditor.rebuild.federation import store_settings

    out: dict[str, list[str]] = {u: [] for u in urns}
    for entry in settings.stores:
        with closing(open_store(store_settings(settings, entry.name))) as store:
            for urn in urns:
                if store.versions(urn):
                    out[urn].append(entry.name)
    return out
