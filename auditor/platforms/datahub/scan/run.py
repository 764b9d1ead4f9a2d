"""The scan pipeline over given backends: sample -> join -> re-observe -> judge -> record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from auditor.backends.connect import WEAKER
from auditor.backends.protocols import Events, Search, State, Store
from auditor.core.model import Report
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.naming import MAE_CONSUMER_GROUP, MCL_TIMESERIES_TOPIC, MCL_VERSIONED_TOPIC
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.evidence import partition_of, start_window
from auditor.platforms.datahub.scan.hook_groups import with_hook_group
from auditor.platforms.datahub.scan.join import JoinResult, Progress, Scanner
from auditor.platforms.datahub.scan.judge import confirm, judge, mark_restores
from auditor.platforms.datahub.scan.reindex import detect as detect_datahub_reindex
from auditor.platforms.datahub.scan.reindex import hold_for_catch_up
from auditor.platforms.datahub.scan.reobserve import KafkaSide, Observer, Reobservation
from auditor.platforms.datahub.sections import outdated, outdated_groups, reindexes
from auditor.platforms.datahub.versions.deployment import index_rules
from auditor.platforms.datahub.versions.detect import Choice
from auditor.platforms.datahub.versions.view import IndexRules
from auditor.scan.finish import finish
from auditor.scan.memory import record_trend, remember
from auditor.scan.options import ScanOptions


@dataclass(frozen=True)
class ScanTarget:
    """Where a scan looks and how it judges by default (taken from the settings)."""

    index_prefix: str = ""
    versioned_topic: str = MCL_VERSIONED_TOPIC
    timeseries_topic: str = MCL_TIMESERIES_TOPIC
    group: str = MAE_CONSUMER_GROUP
    grace: float = 300.0
    sample_window: float = 10.0
    visibility: float = 3.0
    prefetch: bool = False  # the streams read in threads beside the join (settings.scan_prefetch)
    # entity type -> the index to read instead of the live one (a full rebuild verifies its new index)
    entity_indices: tuple[tuple[str, str], ...] = ()
    type_field: str | None = None  # a unified (V3) index: the field naming each document's type
    platform_version: str | None = None  # the release that wrote the data (None: found from it)
    gms_url: str | None = None  # GMS, whose /config names its release


@dataclass
class ScanBackends:
    """The backends one scan reads (events None: no Kafka)."""

    store: Store
    search: Search
    events: Events | None
    state: State
    # the release and mappings the last scan over these backends judged by (a triage's walk
    # shows the document by the same rules)
    versions: IndexRules | None = None


def run_scan(
    backends: ScanBackends,
    registry: Registry,
    report: Report,
    options: ScanOptions,
    target: ScanTarget,
    progress: Progress | None = None,
    log: Callable[[str], None] | None = None,
) -> Report:
    """Scan `report.scope`: the join's findings are candidates, re-observed in causal order."""
    selection = report.scope
    target = with_hook_group(backends.events, target, report)
    kafka = open_window(backends, options, target, report.warnings, selection.urns)
    versions = deployment_rules(backends, registry, target, report)
    scanner = scanner_for(backends, registry, target, report.started_at, versions)
    note_datahub_reindex(report, backends, scanner)
    rows, docs = backends.store.rows_read, backends.search.docs_read  # a repair's reads came before
    joined = scanner.run(selection, progress)
    report.read = {  # what the join fetched (re-observation reads a few entities again: not counted)
        "rows": backends.store.rows_read - rows,
        "documents": backends.search.docs_read - docs,
    }
    record_join(report, joined)
    if newer := versions.newer_warning():
        report.warnings.append(newer)
    if log and joined.findings:
        log(f"re-observing {len({f.urn for f in joined.findings})} entities in causal order")
    visibility = target.visibility if options.visibility is None else options.visibility
    observer = Observer(scanner, kafka, visibility=visibility)
    seen = observer.run(joined.findings)
    record_reobservation(report, seen, observer, backends.state)
    grace = target.grace if options.grace is None else options.grace
    classified = judge(seen, backends.state, grace=grace, settle=options.settle)
    classified = mark_restores(classified, backends.store, registry, target.index_prefix)
    if options.confirm > 0:
        classified = confirm(classified, options.confirm, scanner, report)
    if options.use_state:
        still = [o.finding for o in seen.observed + seen.unsettled]
        remember(backends.state, still, report, selection.entity_types)
    events = backends.events
    if events is not None and events.decode_failures:
        why = events.decode_error or "unknown error"
        report.warnings.append(
            f"{events.decode_failures} MCL(s) could not be decoded ({why}): their changes were matched "
            "by time, not by value (weaker evidence; is the schema registry reachable?)"
        )
    note = getattr(events, "decode_note", None)
    if note:
        report.warnings.append(f"{note} (the values may be read with another schema than the writer's)")
    if events is not None and events.not_mcl:
        report.warnings.append(
            f"{events.not_mcl} message(s) on the change log keyed by a urn of this scan are not "
            "Confluent-framed Avro nor Glue-framed (not MCLs DataHub produced): ignored as evidence"
        )
    resumed = backends.store.resumed
    if resumed:
        report.warnings.append(
            f"the database connection was lost {resumed} time(s) during the scan; each read resumed "
            "after the last row it had read (nothing skipped, nothing read twice)"
        )
    retried = backends.search.retried
    if retried:
        report.warnings.append(
            f"the search cluster refused, timed out or dropped {retried} request(s) (429/5xx, timeout, "
            "connection); each was sent again after a backoff and answered"
        )
    outdated(report).extend(outdated_groups(classified, target.index_prefix))
    finish(report, classified, options.max_findings)
    hold_for_catch_up(report)
    if options.use_state:
        record_trend(backends.state, report, None)  # DataHub's trend keys carry no platform
    return report


def note_datahub_reindex(report: Report, backends: ScanBackends, scanner: Scanner) -> None:
    """DataHub's own reindexes of the scanned indices: a notice each (the alias is what is audited)."""
    aliases = [scanner.index_of(t) for t in scanner.entity_types(report.scope)]
    for found in detect_datahub_reindex(backends.store, backends.search, scanner.index_prefix, aliases):
        reindexes(report).append(found.to_json())
        report.warnings.append(found.notice())


def target_rules(
    backends: ScanBackends, registry: Registry, target: ScanTarget, warnings: list[str]
) -> tuple[IndexRules, Choice]:
    """The target deployment's release (as the settings give or the data says) and mappings."""
    return index_rules(
        backends.store,
        backends.search,
        registry,
        index_prefix=target.index_prefix,
        platform_version=target.platform_version,
        gms_url=target.gms_url,
        warnings=warnings,
    )


def deployment_rules(
    backends: ScanBackends, registry: Registry, target: ScanTarget, report: Report
) -> IndexRules:
    """The release the documents are judged by (found or given) and the indices' mappings; the
    report's sources say which release and how it was found."""
    versions, choice = target_rules(backends, registry, target, report.warnings)
    report.sources["platform_version"] = choice.source
    backends.versions = versions
    return versions


def scanner_for(
    backends: ScanBackends,
    registry: Registry,
    target: ScanTarget,
    now: datetime | None = None,
    versions: IndexRules | None = None,
) -> Scanner:
    """The join over the target's indices (a full rebuild's new index in place of the live one)."""
    return Scanner(
        backends.store,
        backends.search,
        registry,
        index_prefix=target.index_prefix,
        index_overrides=dict(target.entity_indices),
        now=now,
        prefetch=target.prefetch,
        type_field=target.type_field,
        versions=versions,
    )


def open_window(
    backends: ScanBackends,
    options: ScanOptions,
    target: ScanTarget,
    warnings: list[str],
    report_urns: tuple[str, ...] = (),
) -> KafkaSide | None:
    """The first offset sample, before the join (None: no Kafka, the verdicts get weaker)."""
    events = backends.events
    if events is None:
        return None
    topics = [target.versioned_topic, target.timeseries_topic]
    window = target.sample_window if options.sample_window is None else options.sample_window
    try:
        view = start_window(events, topics, target.group)
        partitions = events.partitions(target.versioned_topic)
    except BackendUnavailable as exc:
        warnings.append(f"{exc}: {WEAKER}")
        return None
    previous = backends.state.previous_samples(target.group)
    watch = None
    if report_urns and partitions:
        watch = {(target.versioned_topic, partition_of(events)(u, partitions)) for u in report_urns}
    return KafkaSide(
        events,
        view,
        topics,
        target.versioned_topic,
        window,
        previous,
        partitions,
        max_window=options.max_window,
        watch=watch,
    )


def record_join(report: Report, joined: JoinResult) -> None:
    report.entities, report.documents = joined.entities, joined.documents
    report.unknown = joined.unknown
    report.warnings += joined.warnings
    report.stores = joined.stores


def record_reobservation(report: Report, seen: Reobservation, observer: Observer, state: State) -> None:
    """What the re-observation did, and the consumer's positions at its last sample."""
    report.warnings += observer.warnings
    report.reobserved = {
        "candidates": seen.candidates,
        "entities": seen.entities,
        "converged": len(seen.converged),
        "unsettled": len(seen.unsettled),
        "rounds": seen.rounds,
        "seconds": round(seen.seconds, 3),
    }
    kafka = observer.kafka
    report.kafka_available = kafka is not None
    if kafka is not None:
        report.partitions = sorted(kafka.view.positions.values(), key=lambda p: (p.topic, p.partition))
        state.record_samples(kafka.view.group, kafka.view.last)
