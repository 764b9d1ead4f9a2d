"""The auditor as functions (the CLI is a thin layer over these): scan, and its backends."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from auditor.backends.events import EventLog
from auditor.backends.search import SearchIndex
from auditor.backends.store import MetadataStore
from auditor.core.classify import classify, mark_restores, restore_candidates
from auditor.core.model import Classified, Finding, Report, ScanScope, Verdict
from auditor.core.registry import Registry
from auditor.core.state import ScanState
from auditor.core.urns import urn_partition
from auditor.errors import AuditorError, BackendUnavailable, ConfigError
from auditor.evidence import ConsumerView, close_window, gather, start_window
from auditor.scan import Progress, Scanner, Selection
from auditor.settings import Settings
from checks import BUILTIN_CHECKS


@dataclass(frozen=True)
class ScanOptions:
    """How a scan judges what it sees."""

    grace: float | None = None  # None: the settings' grace
    settle: float = 10.0  # a change younger than this may not have its MCL produced yet
    sample_window: float | None = None  # None: the settings' window
    confirm: float = 0.0  # re-check in-flight findings after this many seconds
    max_findings: int = 10_000  # findings kept in detail (all are counted)
    use_state: bool = True


def open_store(settings: Settings) -> MetadataStore:
    if settings.store_url is None:
        raise ConfigError("no metadata store configured", hint="pass --store-url or set AUDITOR_STORE_URL")
    return MetadataStore(settings.store_url.get_secret_value(), settings.store_table)


def open_search(settings: Settings) -> SearchIndex:
    if not settings.search_url:
        raise ConfigError("no search cluster configured", hint="pass --search-url or set AUDITOR_SEARCH_URL")
    return SearchIndex(
        settings.search_url,
        settings.search_kind,
        username=settings.search_username,
        password=settings.search_password.get_secret_value() if settings.search_password else None,
        verify_certs=settings.search_verify_certs,
        ca_certs=settings.search_ca_certs,
    )


def open_events(settings: Settings, warnings: list[str]) -> EventLog | None:
    """The event log, or None (with a warning) when Kafka is not configured or unreachable."""
    if not settings.kafka_bootstrap:
        warnings.append("no Kafka configured: verdicts rest on time and history only (weaker)")
        return None
    try:
        events = EventLog(settings)
        if events.partitions(settings.mcl_versioned_topic) == 0:
            warnings.append(
                f"topic {settings.mcl_versioned_topic} not found on {settings.kafka_bootstrap}: "
                "verdicts rest on time and history only (weaker)"
            )
            events.close()
            return None
        return events
    except BackendUnavailable as exc:
        warnings.append(f"{exc}: verdicts rest on time and history only (weaker)")
        return None


def _repair_hint(f: Finding) -> str:
    for check in BUILTIN_CHECKS:
        if check.id == f.check:
            return check.repair.format(
                urn=f.urn.replace("'", "'\\''"),
                index=f.index or "",
                doc_id=f.details.get("doc_id", ""),
            )
    return ""


def scan(
    settings: Settings,
    selection: Selection | None = None,
    options: ScanOptions | None = None,
    progress: Progress | None = None,
    *,
    registry: Registry | None = None,
    log: Callable[[str], None] | None = None,
) -> Report:
    """Compare the store with the search cluster (and the consumer offsets) and judge it."""
    selection = selection or Selection()
    options = options or ScanOptions()
    started = datetime.now(UTC)
    grace = settings.grace_seconds if options.grace is None else options.grace
    window = settings.sample_window_seconds if options.sample_window is None else options.sample_window
    report = Report(
        started_at=started,
        scope=ScanScope(
            entity_types=selection.entity_types,
            urn_like=selection.urn_like,
            since=selection.since,
            index_prefix=settings.index_prefix,
            shard=selection.shard,
        ),
        sources=settings.describe(),
    )
    store = open_store(settings)
    search = open_search(settings)
    report.sources["store_version"] = store.ping()
    report.sources["search_version"] = search.version()
    registry = registry or Registry.load()
    events = open_events(settings, report.warnings)
    report.kafka_available = events is not None
    topics = [settings.mcl_versioned_topic, settings.mcl_timeseries_topic]
    group = settings.mae_consumer_group
    state = ScanState(settings.state_file if options.use_state else None)
    try:
        view: ConsumerView | None = None
        if events is not None:
            try:
                view = start_window(events, topics, group)
            except BackendUnavailable as exc:
                report.warnings.append(f"{exc}: verdicts rest on time and history only (weaker)")
                report.kafka_available = False
        scanner = Scanner(store, search, registry, index_prefix=settings.index_prefix, now=started)
        joined = scanner.run(selection, progress)
        report.entities, report.documents = joined.entities, joined.documents
        report.unknown, report.warnings = joined.unknown, report.warnings + joined.warnings
        evidence = {}
        if events is not None and view is not None:
            if log:
                log("sampling the MAE consumer's offsets")
            previous = state.previous_samples(group)
            try:
                close_window(events, view, topics, window, previous)
                report.partitions = sorted(view.positions.values(), key=lambda p: (p.topic, p.partition))
                metadata = _metadata_of(joined.findings, store)
                evidence = gather(events, view, settings.mcl_versioned_topic, joined.findings, metadata)
                state.record_samples(group, view.last)
            except BackendUnavailable as exc:
                # Kafka went away mid-scan: the comparison stands, the verdicts get weaker
                report.warnings.append(f"{exc}: verdicts rest on time and history only (weaker)")
                report.kafka_available = False
                report.partitions, view, evidence = [], None, {}
        now = datetime.now(UTC)
        history = state.history(f.key for f in joined.findings)
        topic = settings.mcl_versioned_topic
        partitions = sum(1 for t, _ in view.positions if t == topic) if view is not None else 0
        classified = [
            _judge(f, now, grace, options.settle, view, evidence, history, topic, partitions)
            for f in joined.findings
        ]
        candidates = restore_candidates(classified)
        if candidates:
            changed = {
                index: (
                    instant,
                    store.count_changed_since(_type_of_index(index, registry, settings), instant),
                )
                for index, instant in candidates.items()
            }
            classified = mark_restores(classified, changed)
        if options.confirm > 0:
            classified = _confirm(classified, options.confirm, scanner, store, search, report)
        if options.use_state:
            # forget findings not seen again only when the whole of their types was scanned
            narrowed = bool(selection.since or selection.urn_like or selection.urns)
            state.record_findings(
                joined.findings, started, selection.entity_types, forget_unseen=not narrowed
            )
    finally:
        state.close()
        if events is not None:
            events.close()
    for c in classified:
        key = (c.finding.entity_type, c.verdict.value, c.subkind)
        report.counts[key] = report.counts.get(key, 0) + 1
    order = {Verdict.INVALID: 0, Verdict.DIVERGED: 1, Verdict.STALLED: 2, Verdict.IN_FLIGHT: 3}
    classified.sort(key=lambda c: (order.get(c.verdict, 9), c.finding.entity_type, c.finding.urn))
    report.findings = classified[: options.max_findings]
    report.findings_dropped = max(0, len(classified) - options.max_findings)
    report.finished_at = datetime.now(UTC)
    return report


def _type_of_index(index: str, registry: Registry, settings: Settings) -> str:
    for name in registry.entity_names:
        if registry.index_name(name, settings.index_prefix) == index:
            return name
    return ""


def _metadata_of(findings: list[Finding], store: MetadataStore) -> dict[tuple[str, str], str]:
    """The version-0 JSON of the aspects findings point at (to recognise their MCLs)."""
    out: dict[tuple[str, str], str] = {}
    wanted = {(f.urn, f.aspect) for f in findings if f.aspect}
    urns = sorted({u for u, _ in wanted})[:20_000]
    for i in range(0, len(urns), 500):  # one query per 500 urns, not one per urn
        for entity in store.stream_entities(urns=tuple(urns[i : i + 500])):
            for aspect, row in entity.rows.items():
                if (entity.urn, aspect) in wanted:
                    out[(entity.urn, aspect)] = row.metadata
    return out


def _judge(
    f: Finding,
    now: datetime,
    grace: float,
    settle: float,
    view: ConsumerView | None,
    evidence: dict,
    history: dict,
    topic: str,
    partitions: int,
) -> Classified:
    position = None
    if view is not None and partitions:
        position = view.of(topic, urn_partition(f.urn, partitions))
    return classify(
        f,
        now,
        grace=grace,
        settle=settle,
        position=position,
        kafka=evidence.get(f.key) if position is not None else None,
        history=history.get(f.key),
        repair=_repair_hint(f),
    )


def _confirm(
    classified: list[Classified],
    wait: float,
    scanner: Scanner,
    store: MetadataStore,
    search: SearchIndex,
    report: Report,
) -> list[Classified]:
    """Wait, then re-check the in-flight findings' entities: those now clean converged."""
    pending = [c for c in classified if c.verdict == Verdict.IN_FLIGHT]
    if not pending:
        return classified
    time.sleep(wait)
    still: set[str] = set()
    urns = sorted({c.finding.urn for c in pending})
    for i in range(0, len(urns), 500):
        try:
            again = scanner.run(Selection(urns=tuple(urns[i : i + 500])))
        except AuditorError:
            return classified
        still.update(f.key for f in again.findings)
    out = []
    for c in classified:
        if c.verdict == Verdict.IN_FLIGHT and c.finding.key not in still:
            report.converged.append(c.finding.key)
            continue
        out.append(c)
    return out
