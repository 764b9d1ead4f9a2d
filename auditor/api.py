"""The auditor as functions (the CLI is a thin layer over these): scan, and its backends."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from auditor.backends.events import EventLog
from auditor.backends.search import SearchIndex
from auditor.backends.store import MetadataStore
from auditor.core.classify import classify, in_flight, mark_restores, restore_candidates
from auditor.core.model import Classified, Finding, Report, ScanScope, Verdict
from auditor.core.registry import Registry
from auditor.core.state import ScanState
from auditor.errors import AuditorError, BackendUnavailable, ConfigError
from auditor.evidence import start_window
from auditor.reobserve import KafkaSide, Observer, Reobservation
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
    visibility: float | None = None  # None: the settings' index visibility delay
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
    """The finding's repair command; every value sits in single quotes in the templates, and a
    quote in the data is closed, escaped and reopened: nothing from the data runs in a shell."""

    def quoted(value: object) -> str:
        return str(value).replace("'", "'\\''")

    for check in BUILTIN_CHECKS:
        if check.id == f.check:
            template = check().repair_for(f)
            return template.format(
                urn=quoted(f.urn), index=quoted(f.index or ""), doc_id=quoted(f.details.get("doc_id", ""))
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
    """Compare the store with the search cluster (and the consumer offsets) and judge it.

    The join's findings are candidates; each is re-observed in causal order (reobserve.py)
    before it gets a verdict, so a scan during live writes does not call a delay diverged.
    """
    selection = selection or Selection()
    options = options or ScanOptions()
    started = datetime.now(UTC)
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
    state = ScanState(settings.state_file if options.use_state else None)
    try:
        kafka = _open_window(settings, options, events, state, report)
        scanner = Scanner(store, search, registry, index_prefix=settings.index_prefix, now=started)
        joined = scanner.run(selection, progress)
        report.entities, report.documents = joined.entities, joined.documents
        report.unknown, report.warnings = joined.unknown, report.warnings + joined.warnings
        if log and joined.findings:
            log(f"re-observing {len({f.urn for f in joined.findings})} entities in causal order")
        visibility = settings.index_visibility_seconds if options.visibility is None else options.visibility
        observer = Observer(scanner, kafka, visibility=visibility)
        seen = observer.run(joined.findings)
        report.warnings += observer.warnings
        report.reobserved = {
            "candidates": len(joined.findings),
            "entities": len({f.urn for f in joined.findings}),
            "converged": len(seen.converged),
            "unsettled": len(seen.unsettled),
            "rounds": seen.rounds,
            "seconds": round(seen.seconds, 3),
        }
        if observer.kafka is not None:
            report.partitions = sorted(
                observer.kafka.view.positions.values(), key=lambda p: (p.topic, p.partition)
            )
            state.record_samples(observer.kafka.view.group, observer.kafka.view.last)
        report.kafka_available = observer.kafka is not None
        classified = _judge_all(seen, settings, options, state)
        classified = _mark_restores(classified, store, registry, settings)
        if options.confirm > 0:
            classified = _confirm(classified, options.confirm, scanner, report)
        if options.use_state:
            # forget findings not seen again only when the whole of their types was scanned
            narrowed = bool(selection.since or selection.urn_like or selection.urns)
            still = [o.finding for o in seen.observed + seen.unsettled]
            state.record_findings(still, started, selection.entity_types, forget_unseen=not narrowed)
    finally:
        state.close()
        if events is not None:
            events.close()
    _finish(report, classified, options)
    return report


def _open_window(
    settings: Settings, options: ScanOptions, events: EventLog | None, state: ScanState, report: Report
) -> KafkaSide | None:
    """The first offset sample, before the join (None: no Kafka, verdicts get weaker)."""
    if events is None:
        return None
    topics = [settings.mcl_versioned_topic, settings.mcl_timeseries_topic]
    group = settings.mae_consumer_group
    window = settings.sample_window_seconds if options.sample_window is None else options.sample_window
    try:
        view = start_window(events, topics, group)
        partitions = events.partitions(settings.mcl_versioned_topic)
    except BackendUnavailable as exc:
        report.warnings.append(f"{exc}: verdicts rest on time and history only (weaker)")
        return None
    return KafkaSide(
        events, view, topics, settings.mcl_versioned_topic, window, state.previous_samples(group), partitions
    )


def _judge_all(
    seen: Reobservation, settings: Settings, options: ScanOptions, state: ScanState
) -> list[Classified]:
    """One verdict per re-observed finding; converged and unsettled candidates stay in flight."""
    now = datetime.now(UTC)
    grace = settings.grace_seconds if options.grace is None else options.grace
    history = state.history(o.finding.key for o in seen.observed + seen.unsettled)
    out = [
        classify(
            o.finding,
            now,
            grace=grace,
            settle=options.settle,
            position=o.position,
            kafka=o.kafka if o.position is not None else None,
            history=history.get(o.finding.key),
            repair=_repair_hint(o.finding),
            observed=o.observation,
        )
        for o in seen.observed
    ]
    for o in seen.converged:
        at = o.observation.docs_read_at.isoformat(timespec="seconds")
        out.append(
            in_flight(o.finding, f"converged during the scan: the re-read at {at} agrees", o.observation, 0.0)
        )
    for o in seen.unsettled:
        out.append(
            in_flight(
                o.finding,
                f"its rows changed during each of {o.observation.rounds} re-reads (live writes): "
                "judged again by the next scan",
                o.observation,
            )
        )
    return out


def _mark_restores(
    classified: list[Classified], store: MetadataStore, registry: Registry, settings: Settings
) -> list[Classified]:
    candidates = restore_candidates(classified)
    if not candidates:
        return classified
    changed = {
        index: (instant, store.count_changed_since(_type_of_index(index, registry, settings), instant))
        for index, instant in candidates.items()
    }
    return mark_restores(classified, changed)


def _finish(report: Report, classified: list[Classified], options: ScanOptions) -> None:
    for c in classified:
        key = (c.finding.entity_type, c.verdict.value, c.subkind)
        report.counts[key] = report.counts.get(key, 0) + 1
    order = {Verdict.INVALID: 0, Verdict.DIVERGED: 1, Verdict.STALLED: 2, Verdict.IN_FLIGHT: 3}
    classified.sort(key=lambda c: (order.get(c.verdict, 9), c.finding.entity_type, c.finding.urn))
    report.findings = classified[: options.max_findings]
    report.findings_dropped = max(0, len(classified) - options.max_findings)
    report.finished_at = datetime.now(UTC)


def _type_of_index(index: str, registry: Registry, settings: Settings) -> str:
    for name in registry.entity_names:
        if registry.index_name(name, settings.index_prefix) == index:
            return name
    return ""


def _confirm(classified: list[Classified], wait: float, scanner: Scanner, report: Report) -> list[Classified]:
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
