"""The OpenMetadata platform: entity tables against `<cluster_alias>_<entity>_search_index`.

No change log: the server writes the database, then the index, in one request, and queues a
search write that failed in `search_index_retry_queue`. So verdicts rest on the retry queue,
the change's age and the state file, and the only repair is a reindex from the rows (targeted,
or `--full`: a staged index per type swapped in with its aliases).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack, closing
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar

from auditor.backends.connect import open_state
from auditor.core.model import Classified, Report, Selection
from auditor.core.plan import RebuildOutcome, plan
from auditor.errors import ConfigError
from auditor.platforms.base import Capability, Platform
from auditor.platforms.openmetadata import commands
from auditor.platforms.openmetadata.connect import om_state
from auditor.platforms.openmetadata.describe import describe
from auditor.platforms.openmetadata.modes import EXECUTORS
from auditor.platforms.openmetadata.version import describe as describe_release
from auditor.platforms.openmetadata.version import migration_level
from auditor.settings.model import Settings

if TYPE_CHECKING:
    from auditor.core.triage import TriageResult
    from auditor.drill.spec import TableSpec
    from auditor.platforms.resident import Resident
    from auditor.rebuild.request import RebuildRequest
    from auditor.scan.options import Progress, ScanOptions

SELECT_BY = "select with --entity-type and --urn (an id or an FQN)"


class OpenMetadata(Platform):
    name = "openmetadata"
    title = "OpenMetadata"
    capabilities = frozenset({Capability.STAGED_REINDEX, Capability.TRIAGE, Capability.SERVE})
    paste_hint = "an OpenMetadata FQN, entity id or entity page URL"
    executors = EXECUTORS
    renderer = commands.RENDERER
    scan_knobs = frozenset()  # no change log: nothing to settle, sample or confirm against
    repair_knobs = frozenset({"rate", "resume", "break_stale_lock", "prefer_store"})
    knobs_instead: ClassVar[dict[str, str]] = {
        "--settle": "OpenMetadata has no change log: a change is judged by its age (--grace) and history",
        "--sample-window": "OpenMetadata has no consumer offsets to sample",
        "--confirm": "scan again later: a finding seen twice is judged by its history",
    }
    weak_evidence = (
        "OpenMetadata writes search synchronously (no Kafka): verdicts rest on its retry "
        "queue, the change's age and earlier scans"
    )
    instead: ClassVar[dict[Capability, str]] = {
        Capability.REPLAY: "use `auditor rebuild reindex --platform openmetadata` (writes the docs from "
        "the rows): OpenMetadata has no change log to replay through",
        Capability.URN_PATTERN: SELECT_BY,
        Capability.TIME_WINDOW: SELECT_BY,
        Capability.ASPECT_FILTER: SELECT_BY,
        Capability.SHARD_PLAN: "one process scans or repairs OpenMetadata; select with --entity-type",
        Capability.FEDERATION: "scan each OpenMetadata server on its own (--store-url)",
        Capability.CHANGE_LOG: "OpenMetadata writes search synchronously: the scan's verdicts rest on "
        "its retry queue, time and history",
        Capability.WATCH: "OpenMetadata has no change log to tail: schedule `auditor scan --platform "
        "openmetadata` instead",
        Capability.PROBE: "OpenMetadata has no change log to time a canary through",
        Capability.AFTER_RESTORE: "after restoring OpenMetadata's search, `auditor rebuild reindex "
        "--platform openmetadata --full --apply`",
    }

    def scan(
        self,
        settings: Settings,
        selection: Selection,
        options: ScanOptions,
        progress: Progress | None = None,
        *,
        log: Callable[[str], None] | None = None,
    ) -> Report:
        return om_scan(self, settings, selection, options, progress)

    def triage(
        self,
        settings: Settings,
        text: str,
        *,
        entity_types: Sequence[str] = (),
        grace: float | None = None,
        settle: float = 10.0,
    ) -> TriageResult:
        return om_triage(settings, text, tuple(entity_types), grace)

    def rebuild(self, settings: Settings, request: RebuildRequest) -> RebuildOutcome:
        return om_rebuild(self, settings, request)

    def open_resident(self, settings: Settings) -> Resident:
        from auditor.platforms.openmetadata.resident import OpenMetadataResident

        return OpenMetadataResident(settings)

    def readiness(self, settings: Settings) -> dict[str, Callable[[], str]]:
        from auditor.platforms.openmetadata.connect import open_om_store
        from auditor.platforms.resident import search_probe

        def database() -> str:
            with closing(open_om_store(settings)) as store:
                return str(store.ping())

        return {"database": database, "search": lambda: search_probe(settings)}

    def drill_tables(self) -> tuple[TableSpec, ...]:
        from auditor.platforms.openmetadata.drill import om_entity_table
        from auditor.platforms.openmetadata.naming import BY_TABLE

        return tuple(om_entity_table(t) for t in sorted(BY_TABLE))

    def describe(self, c: Classified) -> str | None:
        return describe(c)

    def config_from_environment(self, environ: Mapping[str, str]) -> tuple[str, list[str]]:
        """`auditor config init --platform openmetadata`: from the server's own variables."""
        from auditor.core.config_plan import explain
        from auditor.platforms.openmetadata.config_init import plan, render

        p = plan(environ)
        return render(p), explain(p)


def om_triage(
    settings: Settings, text: str, entity_types: tuple[str, ...] = (), grace: float | None = None
) -> TriageResult:
    """OpenMetadata's "I can't find my table": one entity (its fully qualified name or id) from
    its row through the retry queue to its document. Read-only (the state file is only read)."""
    from auditor.backends.state import ScanState
    from auditor.platforms.openmetadata.connect import open_om_search, open_om_store
    from auditor.platforms.openmetadata.naming import entities
    from auditor.platforms.openmetadata.scan import OmScanOptions
    from auditor.platforms.openmetadata.triage import om_walk

    chosen = entities(entity_types)
    settings = om_state(settings)
    options = OmScanOptions(
        grace=settings.grace_seconds if grace is None else grace,
        visibility=settings.index_visibility_seconds,
        use_state=False,
    )
    with ExitStack() as opened:
        store = opened.enter_context(closing(open_om_store(settings)))
        search = opened.enter_context(closing(open_om_search(settings)))
        state = opened.enter_context(closing(ScanState(settings.state_file, read_only=True)))
        return om_walk(store, search, state, chosen, text, options)


def om_scan(
    platform: Platform,
    settings: Settings,
    selection: Selection,
    options: ScanOptions,
    progress: Progress | None = None,
) -> Report:
    """The OpenMetadata profile's scan: entity tables against `<cluster_alias>_<entity>_search_index`.

    No change log: verdicts rest on the retry queue, the change's age and the state file. Read-only.
    """
    from auditor.platforms.openmetadata.connect import open_om_search, open_om_store
    from auditor.platforms.openmetadata.naming import entities
    from auditor.platforms.openmetadata.scan import NO_KAFKA, OmScanOptions, run_om_scan

    platform.require_selection(selection)
    chosen = entities(selection.entity_types)
    settings = om_state(settings)
    report = Report(
        started_at=datetime.now(UTC),
        scope=selection,
        index_prefix=settings.cluster_alias,
        consumer_group="",
        sources={"platform": "openmetadata", **settings.describe()},
        warnings=[NO_KAFKA],
    )
    om_options = OmScanOptions(
        grace=settings.grace_seconds if options.grace is None else options.grace,
        visibility=settings.index_visibility_seconds if options.visibility is None else options.visibility,
        max_findings=options.max_findings,
        use_state=options.use_state,
        findings_out=options.findings_out,
    )
    with ExitStack() as opened:
        store = opened.enter_context(closing(open_om_store(settings)))
        search = opened.enter_context(closing(open_om_search(settings)))
        report.sources["store_version"] = store.ping()
        report.sources["search_version"] = search.search.version()
        level = migration_level(store.migrations() or ())
        report.sources["platform_version"], said = describe_release(level, settings.platform_version)
        report.warnings += said
        if not selection.entity_types:  # every known type whose table this database has
            chosen = store.present(chosen)
            if store.denied:
                refused = ", ".join(sorted(store.denied))
                report.warnings.append(f"SELECT refused on {refused}: not scanned (grant it, or not OM's?)")
        state = opened.enter_context(closing(open_state(settings, options.use_state)))
        return run_om_scan(store, search, state, chosen, report, om_options, progress)


def om_rebuild(platform: Platform, settings: Settings, request: RebuildRequest) -> RebuildOutcome:
    """The OpenMetadata profile's repair: reindex from the database (targeted, or --full with an
    atomic alias swap), verified with the scan's own steps. A plan of a report needs no server.
    Its outcome speaks OpenMetadata's words (entity rows, no replay: reports/rebuild_report.py)."""
    outcome = _om_rebuild(platform, settings, request)
    outcome.platform = "openmetadata"
    return outcome


def _om_rebuild(platform: Platform, settings: Settings, request: RebuildRequest) -> RebuildOutcome:
    from auditor.backends.index_writer import IndexWriter
    from auditor.platforms.openmetadata.connect import open_om_search, open_om_store
    from auditor.platforms.openmetadata.naming import entities
    from auditor.rebuild.guard import locked
    from auditor.rebuild.openmetadata import OmRepairRequest, chosen_findings, repair, resolve_ids
    from auditor.rebuild.openmetadata.full import FullRebuild

    if request.mode == "replay":
        platform.require(Capability.REPLAY, "rebuild replay")
    selection = request.selection
    platform.require_selection(selection, aspects_too=True)
    if request.mode == "plan" and request.findings is not None:
        outcome = RebuildOutcome("plan", False, plan(chosen_findings(request.findings, request.include)))
        outcome.rows = len(outcome.plan.urns)
        return outcome
    types = selection.entity_types if selection is not None else ()
    if request.findings is not None:
        types = tuple(sorted({c.finding.entity_type for c in request.findings}))
        settings = _report_cluster_alias(settings, request.findings)
    with ExitStack() as opened:
        store = opened.enter_context(closing(open_om_store(settings)))
        search = opened.enter_context(closing(open_om_search(settings)))
        chosen_types = entities(types) if types else store.present(entities(types))
        writer = IndexWriter(search.search)
        if request.full and request.apply:
            if request.findings is not None or (selection is not None and selection.urns):
                raise ConfigError("--full rebuilds whole entity types", hint="select them with --entity-type")
            from auditor.platforms.openmetadata.reindex_rows import refuse_full

            now_ms = int(datetime.now(UTC).timestamp() * 1000)
            refuse_full(store.reindex_jobs(), [e.entity_type for e in chosen_types], now_ms)
            full = FullRebuild(
                store,
                search,
                writer,
                settings.platform_version,
                rate=request.rate,
                allow_delete=request.allow_delete,
                replace_concrete=request.replace_concrete,
                state_dir=request.state_dir,
                leave_out_invalid=request.leave_out_invalid,
                prefer_store=request.prefer_store,
            )
            with locked(request, store.description, search.cluster_alias):  # one repair at a time
                for entity in chosen_types:
                    full.run(entity)
            outcome = RebuildOutcome("reindex", True, plan([]), notes=full.notes)
            outcome.counts, outcome.failed = full.work.counts, sorted(full.work.failed)
            outcome.why = dict(full.work.failed)
            outcome.still_wrong = full.invalid  # promoted beside them: the rows are to be fixed
            outcome.verified_urns = full.loaded
            return outcome
        ids = resolve_ids(store, chosen_types, selection.urns) if selection is not None else ()
        om_request = OmRepairRequest(
            chosen_types,
            findings=request.findings,
            include=request.include,
            ids=ids,
            apply=request.apply and request.mode != "plan",
            batch=request.batch,
            visibility=settings.index_visibility_seconds,
            progress=request.progress,
            release=settings.platform_version,
            rate=request.rate,
            prefer_store=request.prefer_store,
            guard=request,
        )
        return repair(store, search, writer, om_request)


def _report_cluster_alias(settings: Settings, findings: Sequence[Classified]) -> Settings:
    """A repair of a report writes under the report's cluster alias (read off its index names);
    another one given is a usage error naming both."""
    from auditor.platforms.openmetadata.naming import ENTITIES

    seen: set[str] = set()
    for c in findings:
        known = ENTITIES.get(c.finding.entity_type)
        index = c.finding.index or ""
        if known is not None and index.endswith(known.index):
            seen.add(index[: -len(known.index)].removesuffix("_"))
    if len(seen) != 1:
        return settings
    (alias,) = seen
    if settings.cluster_alias and settings.cluster_alias != alias:
        raise ConfigError(
            f"the report was scanned under the cluster alias {alias!r}, not {settings.cluster_alias!r}",
            hint="drop --cluster-alias (the report's is used) or repair with a report of that cluster",
        )
    return settings.model_copy(update={"cluster_alias": alias})


PLATFORM = OpenMetadata()
