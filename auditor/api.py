"""The auditor as plain functions (the CLI is a thin layer over these): scan, and what it opens."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack, closing
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from auditor.backends.connect import open_events, open_search, open_state, open_store
from auditor.core.model import Classified, Report, Selection
from auditor.core.plan import RebuildOutcome, RestoreEvidence
from auditor.core.registry import Registry
from auditor.core.triage import TriageResult
from auditor.errors import ConfigError
from auditor.scan.join import Progress
from auditor.scan.run import ScanBackends, ScanOptions, ScanTarget
from auditor.scan.shards import ShardPlan, make_plan
from auditor.scan.v3 import scan_with_v3
from auditor.settings import Settings
from auditor.triage import walk

if TYPE_CHECKING:
    from auditor.rebuild.run import RebuildRequest

__all__ = ["ScanOptions", "plan_shards", "rebuild", "scan", "scan_target", "triage"]


def scan_target(settings: Settings) -> ScanTarget:
    """Where the scan looks and its default judgement, from the settings."""
    return ScanTarget(
        index_prefix=settings.index_prefix,
        versioned_topic=settings.mcl_versioned_topic,
        timeseries_topic=settings.mcl_timeseries_topic,
        group=settings.mae_consumer_group,
        grace=settings.grace_seconds,
        sample_window=settings.sample_window_seconds,
        visibility=settings.index_visibility_seconds,
        prefetch=settings.scan_prefetch,
    )


def scan(
    settings: Settings,
    selection: Selection | None = None,
    options: ScanOptions | None = None,
    progress: Progress | None = None,
    *,
    registry: Registry | None = None,
    log: Callable[[str], None] | None = None,
) -> Report:
    """Compare the store with the search cluster (and the consumer offsets) and judge it.

    The join's findings are candidates; each is re-observed in causal order before it gets a
    verdict, so a scan during live writes does not call a delay diverged. Read-only.
    """
    options = options or ScanOptions()
    if settings.platform == "openmetadata":
        return om_scan(settings, selection, options, progress)
    report = Report(
        started_at=datetime.now(UTC),
        scope=selection or Selection(),
        index_prefix=settings.index_prefix,
        consumer_group=settings.mae_consumer_group,
        sources=settings.describe(),
    )
    if settings.kafka_bootstrap:  # the topics it read: a repair of the report defaults to them
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


def _om_state(settings: Settings) -> Settings:
    """The default state file is DataHub's: OpenMetadata's history is kept beside it."""
    if settings.state_file == Settings.model_fields["state_file"].default:
        own = settings.state_file.replace(".sqlite", "-openmetadata.sqlite")
        return settings.model_copy(update={"state_file": own})
    return settings


def om_triage(
    settings: Settings, text: str, entity_types: tuple[str, ...] = (), grace: float | None = None
) -> TriageResult:
    """OpenMetadata's "I can't find my table": one entity (its fully qualified name or id) from
    its row through the retry queue to its document. Read-only (the state file is only read)."""
    from auditor.backends.connect import open_om_search, open_om_store
    from auditor.backends.state import ScanState
    from auditor.core.om_naming import entities
    from auditor.scan.om_run import OmScanOptions
    from auditor.triage.om_walk import om_walk

    chosen = entities(entity_types)
    settings = _om_state(settings)
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
    settings: Settings,
    selection: Selection | None = None,
    options: ScanOptions | None = None,
    progress: Progress | None = None,
) -> Report:
    """The OpenMetadata profile's scan: entity tables against `<cluster_alias>_<entity>_search_index`.

    No change log: verdicts rest on the retry queue, the change's age and the state file. Read-only.
    """
    from auditor.backends.connect import open_om_search, open_om_store
    from auditor.core.om_naming import entities
    from auditor.scan.om_run import NO_KAFKA, OmScanOptions, run_om_scan

    selection = selection or Selection()
    options = options or ScanOptions()
    for flag, used in (("--urn-like", selection.urn_like), ("--since", selection.since),
                       ("--shard", selection.shard)):  # fmt: skip
        if used:
            raise ConfigError(
                f"{flag} is not supported with --platform openmetadata",
                hint="select with --entity-type (an entity type or its table)",
            )
    chosen = entities(selection.entity_types)
    settings = _om_state(settings)
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
    )
    with ExitStack() as opened:
        store = opened.enter_context(closing(open_om_store(settings)))
        search = opened.enter_context(closing(open_om_search(settings)))
        report.sources["store_version"] = store.ping()
        report.sources["search_version"] = search.search.version()
        if not selection.entity_types:  # every known type whose table this database has
            chosen = [e for e in chosen if store.columns(e.table, required=False) is not None]
            if store.denied:
                refused = ", ".join(sorted(store.denied))
                report.warnings.append(f"SELECT refused on {refused}: not scanned (grant it, or not OM's?)")
        state = opened.enter_context(closing(open_state(settings, options.use_state)))
        return run_om_scan(store, search, state, chosen, report, om_options, progress)


def plan_shards(settings: Settings, n: int, entity_types: tuple[str, ...] = ()) -> ShardPlan:
    """N urn ranges of about equal rows for `scan --shard i/N --shard-plan` (reads the urns only)."""
    with closing(open_store(settings)) as store:
        return make_plan(store, n, entity_types)


def triage(settings: Settings, text: str, grace: float | None = None, settle: float = 10.0) -> TriageResult:
    """Walk one entity from its rows to its MCLs, the consumer, its document, fields and edges.

    `text`: a urn as pasted (quoted, URL-encoded, with whitespace, or a DataHub URL). Read-only:
    the state file (when there is one) is read for the last scan's offsets, never written.
    """

    from auditor.backends.state import ScanState
    from auditor.core.urn_text import normalize
    from auditor.core.urns import UrnError

    try:
        urn, read_as = normalize(text)
    except UrnError as exc:
        raise ConfigError(
            f"not a urn: {exc}", hint="e.g. 'urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)'"
        ) from None
    with ExitStack() as opened:
        store = opened.enter_context(closing(open_store(settings)))
        search = opened.enter_context(closing(open_search(settings)))
        warnings: list[str] = []
        events = open_events(settings, warnings)
        if events is not None:
            opened.callback(events.close)
        state = opened.enter_context(closing(ScanState(settings.state_file, read_only=True)))
        backends = ScanBackends(store, search, events, state)
        target = scan_target(settings)
        result = walk(
            backends,
            Registry.load(),
            target,
            urn,
            asked=text,
            read_as=read_as,
            grace=target.grace if grace is None else grace,
            settle=settle,
        )
        result.warnings = warnings + result.warnings
        return result


def rebuild(settings: Settings, request: RebuildRequest) -> RebuildOutcome:
    """Plan a repair and, with `request.apply`, do it (replay or reindex) and verify it."""
    from pathlib import Path

    from auditor.backends.connect import kafka_config
    from auditor.backends.index_writer import IndexWriter
    from auditor.backends.producer import MclProducer
    from auditor.rebuild.run import RebuildBackends
    from auditor.rebuild.run import rebuild as run_rebuild

    findings = request.findings or ()
    if settings.platform == "openmetadata" or any(
        c.finding.details.get("platform") == "openmetadata" for c in findings
    ):
        return om_rebuild(settings, request)
    if settings.stores and request.mode != "plan":  # one repair per store (docs/federation.md)
        from auditor.rebuild.federation import rebuild_federation

        return rebuild_federation(settings, request, rebuild)
    with ExitStack() as opened:
        store = opened.enter_context(closing(open_store(settings)))
        search = opened.enter_context(closing(open_search(settings)))
        warnings: list[str] = []
        events = open_events(settings, warnings) if request.mode != "plan" else None
        if events is not None:
            opened.callback(events.close)
        state = opened.enter_context(closing(open_state(settings, use=False)))
        producer = None
        if settings.kafka_bootstrap:

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


def om_rebuild(settings: Settings, request: RebuildRequest) -> RebuildOutcome:
    """The OpenMetadata profile's repair: reindex from the database (targeted, or --full with an
    atomic alias swap), verified with the scan's own steps. A plan of a report needs no server."""
    from auditor.backends.connect import open_om_search, open_om_store
    from auditor.backends.index_writer import IndexWriter
    from auditor.core.om_naming import entities
    from auditor.core.plan import RebuildOutcome, plan
    from auditor.rebuild.openmetadata import OmRepairRequest, chosen_findings, repair, resolve_ids
    from auditor.rebuild.openmetadata_full import FullRebuild

    if request.mode == "replay":
        raise ConfigError(
            "OpenMetadata has no change log to replay through",
            hint="use `auditor rebuild reindex --platform openmetadata` (writes the docs from the rows)",
        )
    selection = request.selection
    if selection is not None:
        for flag, used in (("--urn-like", selection.urn_like), ("--aspect", selection.aspects),
                           ("--since", selection.since), ("--until", selection.until)):  # fmt: skip
            if used:
                raise ConfigError(f"{flag} is not supported with --platform openmetadata",
                                  hint="select with --entity-type and --urn (an id or an FQN)")  # fmt: skip
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
        chosen_types = [
            e for e in entities(types) if types or store.columns(e.table, required=False) is not None
        ]
        writer = IndexWriter(search.search)
        if request.full and request.apply:
            if request.findings is not None or (selection is not None and selection.urns):
                raise ConfigError("--full rebuilds whole entity types", hint="select them with --entity-type")
            full = FullRebuild(store, search, writer)
            for entity in chosen_types:
                full.run(entity)
            outcome = RebuildOutcome("reindex", True, plan([]), notes=full.notes)
            outcome.counts, outcome.failed = full.work.counts, sorted(full.work.failed)
            outcome.why = dict(full.work.failed)
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
        )
        return repair(store, search, writer, om_request)


def _report_cluster_alias(settings: Settings, findings: Sequence[Classified]) -> Settings:
    """A repair of a report writes under the report's cluster alias (read off its index names);
    another one given is a usage error naming both."""
    from auditor.core.om_naming import ENTITIES

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


def after_restore(
    settings: Settings,
    *,
    mode: str = "replay",
    apply: bool = False,
    since: datetime | None = None,
    rate: float | None = None,
    wait_seconds: float = 300.0,
) -> RestoreEvidence:
    """Find how far search is behind the database, repair that window, and keep the evidence."""
    from auditor.backends.connect import open_search, open_store
    from auditor.core.naming import system_metadata_index
    from auditor.rebuild.after_restore import ms_to_datetime, window
    from auditor.rebuild.run import RebuildRequest

    options = ScanOptions(use_state=False, sample_window=2.0)
    first = scan(settings, options=options)
    with closing(open_store(settings)) as store, closing(open_search(settings)) as search:
        sysmeta = search.max_of(system_metadata_index(settings.index_prefix), "lastUpdated")
        evidence = window(first, store.last_write(), ms_to_datetime(sysmeta))
    evidence.mode = mode
    evidence.since = since or evidence.since
    if evidence.since is not None:
        request = RebuildRequest(
            mode, selection=Selection(since=evidence.since), apply=apply, rate=rate, wait_seconds=wait_seconds
        )
        evidence.outcome = rebuild(settings, request)
        if apply:
            final = scan(settings, options=options)
            evidence.final_exit_code = final.exit_code
            for (_, verdict, subkind), n in final.counts.items():
                key = verdict if verdict == subkind else f"{verdict}/{subkind}"
                evidence.final_counts[key] = evidence.final_counts.get(key, 0) + n
    evidence.finished_at = datetime.now(UTC)
    return evidence
