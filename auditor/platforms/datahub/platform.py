"""The DataHub platform: `metadata_aspect_v2` against the entity indices, judged with the MAE
consumer's Kafka offsets; repaired by replaying MCLs or reindexing from the rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING

from auditor.errors import ConfigError
from auditor.platforms.base import Capability, Platform
from auditor.platforms.datahub import commands
from auditor.platforms.datahub.modes import EXECUTORS
from auditor.platforms.datahub.sections import SECTIONS
from auditor.settings.model import Settings

if TYPE_CHECKING:  # the pipelines are imported when one runs (pipelines.py): a refused urn loads none
    from auditor.backends.search import SearchIndex
    from auditor.core.model import Report, Selection
    from auditor.core.plan import RebuildOutcome, RepairPlan, RestoreEvidence
    from auditor.core.triage import TriageResult
    from auditor.core.watch_model import ProbeResult, WatchConfig
    from auditor.drill.spec import TableSpec
    from auditor.platforms.base import Canary, Watching
    from auditor.platforms.datahub.registry.registry import Registry
    from auditor.platforms.resident import Resident
    from auditor.rebuild.request import RebuildRequest
    from auditor.scan.options import Progress, ScanOptions
    from auditor.scan.shards import ShardPlan


class DataHub(Platform):
    name = "datahub"
    title = "DataHub"
    capabilities = frozenset(Capability)
    fills_repair_datahub = True
    paste_hint = "a urn or a DataHub URL (quoted, URL-encoded: as pasted)"
    executors = EXECUTORS
    renderer = commands.RENDERER
    report_sections = SECTIONS

    @property
    def flag(self) -> str:
        return ""  # the default platform: a command line need not name it

    def open_resident(self, settings: Settings) -> Resident:
        from auditor.platforms.datahub.registry.registry import Registry
        from auditor.platforms.datahub.resident import DataHubResident

        return DataHubResident(settings, Registry.load())

    def readiness(self, settings: Settings) -> dict[str, Callable[[], str]]:
        from auditor.platforms.datahub import pipelines
        from auditor.platforms.resident import search_probe

        out = {"database": lambda: pipelines.ping_store(settings), "search": lambda: search_probe(settings)}
        if settings.kafka_bootstrap:
            out["kafka"] = lambda: pipelines.ping_kafka(settings)
        return out

    def drill_tables(self) -> tuple[TableSpec, ...]:
        from auditor.platforms.datahub.drill import METADATA_ASPECT_V2

        return (METADATA_ASPECT_V2,)

    def drill_search_counts(self, search: SearchIndex, prefix: str) -> dict[str, dict[str, int]]:
        from auditor.platforms.datahub.drill import search_counts

        return search_counts(search, prefix)

    def check_name(self, text: str) -> None:
        from auditor.platforms.datahub.urn_text import normalize
        from auditor.platforms.datahub.urns import UrnError

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
        from auditor.platforms.datahub import pipelines

        return pipelines.scan(settings, selection, options, progress, registry=registry, log=log)

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
        from auditor.platforms.datahub import pipelines

        return pipelines.rebuild(settings, request)

    def restore_window(self, settings: Settings, first: Report) -> RestoreEvidence:
        """How far search is behind the database: the last write against the system metadata."""
        from auditor.platforms.datahub import pipelines

        return pipelines.restore_window(settings, first)

    def native_commands(
        self, repairs: RepairPlan, *, group: str, until: datetime | None, per_urn: int
    ) -> list[str]:
        return commands.native_commands(repairs, group=group, until=until, per_urn=per_urn)

    def holders(self, settings: Settings, urns: Sequence[str]) -> dict[str, list[str]]:
        from auditor.platforms.datahub import pipelines

        return pipelines.holders(settings, urns)

    def plan_shards(self, settings: Settings, n: int, entity_types: tuple[str, ...] = ()) -> ShardPlan:
        from auditor.platforms.datahub import tools

        return tools.plan_shards(settings, n, entity_types)

    def open_watch(
        self, settings: Settings, config: WatchConfig, group: str, topics: Sequence[str], start: str
    ) -> AbstractContextManager[Watching]:
        from auditor.platforms.datahub.watch.session import open_watch

        return open_watch(settings, config, group, topics, start)

    def open_canary(
        self, settings: Settings, gms_url: str | None, gms_token: str | None, topic: str | None
    ) -> AbstractContextManager[Canary]:
        from auditor.platforms.datahub.watch.probe_session import open_writer

        return open_writer(settings, gms_url, gms_token, topic)

    def probe(
        self,
        settings: Settings,
        canary: Canary,
        slo: float,
        timeout: float,
        interval: float,
        topic: str | None,
    ) -> ProbeResult:
        from auditor.platforms.datahub.watch.probe_session import run_probe

        return run_probe(settings, canary, slo, timeout, interval, topic)  # type: ignore[arg-type]

    def schema_table(self, entity_type: str | None) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
        from auditor.platforms.datahub import tools

        return tools.schema_table(entity_type)

    def config_from_environment(self, environ: Mapping[str, str]) -> tuple[str, list[str]]:
        from auditor.platforms.datahub import tools

        return tools.config_from_environment(environ)


PLATFORM = DataHub()
