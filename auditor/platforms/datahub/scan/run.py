"""DataHub on the scan engine: sample the offsets -> join -> re-observe in causal order -> its evidence."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import datetime
from itertools import chain

from auditor.backends.protocols import State
from auditor.backends.replica import note
from auditor.core.absence import judged
from auditor.core.classify import RestoreCounter
from auditor.core.model import Classified, Finding, Report, Selection, Verdict
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.absence import duplicate_documents, missing_indices
from auditor.platforms.datahub.scan.join import Progress, Scanner
from auditor.platforms.datahub.scan.judge import mark_restores, still_in_flight, unconverged, weigh
from auditor.platforms.datahub.scan.reindex import detect as detect_datahub_reindex
from auditor.platforms.datahub.scan.reindex import hold_for_catch_up
from auditor.platforms.datahub.scan.reobserve import KafkaSide, Observer
from auditor.platforms.datahub.scan.target import ScanBackends, ScanTarget
from auditor.platforms.datahub.scan.window import open_group, open_window
from auditor.platforms.datahub.sections import OutdatedGroups, outdated, reindexes
from auditor.platforms.datahub.versions.deployment import index_rules
from auditor.platforms.datahub.versions.detect import Choice
from auditor.platforms.datahub.versions.view import IndexRules
from auditor.scan import engine
from auditor.scan.engine import Joined, Judging, Observed, Parts, Seen, Sink
from auditor.scan.options import ScanOptions
from auditor.scan.spill import Spill

__all__ = ["DataHubParts", "ScanBackends", "ScanOptions", "ScanTarget", "run_scan", "scanner_for"]


def run_scan(
    backends: ScanBackends,
    registry: Registry,
    report: Report,
    options: ScanOptions,
    target: ScanTarget,
    progress: Progress | None = None,
    log: Callable[[str], None] | None = None,
) -> Report:
    """Scan `report.scope` on the scan engine: the join's findings are candidates, re-observed in
    causal order (rows, the consumer's offsets, documents, rows)."""
    grace = target.grace if options.grace is None else options.grace
    judging = Judging(grace, options.settle, options.max_findings, options.use_state, options.findings_out)
    parts = DataHubParts(backends, registry, report, options, target)
    return engine.run(parts, backends.state, report, judging, progress, log)


class DataHubParts(Parts):
    """What DataHub brings to the scan engine: its join of the aspect table with the entity,
    system-metadata and graph indices; its causal re-reads with the MAE consumer's offsets and
    the change log's MCLs; its evidence (a federation's conflicts, restores, DataHub's own
    reindexes, a confirmation wait)."""

    platform = None  # DataHub's trend keys carry no platform (written before there was another)

    def __init__(self, backends: ScanBackends, registry: Registry, report: Report, options: ScanOptions,
                 target: ScanTarget) -> None:  # fmt: skip
        self.backends, self.registry, self.report, self.options = backends, registry, report, options
        self.target = target  # its group: the one that feeds the index, chosen beside the join
        self.kafka: KafkaSide | None = None
        self.scanner: Scanner | None = None
        self.absence: list[Finding] = []  # what search lacks or holds twice, as a whole (absence.py)
        self.outdated = OutdatedGroups(self.target.index_prefix)  # the report's outdated section, gathered
        self.restores = RestoreCounter()  # gathered as the verdicts are judged (no pass over them)
        self.in_flight: Spill[str] = Spill(key=str)  # the in-flight urns a confirmation re-checks
        self.still: Spill[tuple[str, str]] | None = None  # what the confirmation still found

    def join(
        self, selection: Selection, progress: Progress | None = None, sink: Sink | None = None
    ) -> Joined:
        backends, report, target = self.backends, self.report, self.target
        at = len(report.warnings)  # the window's warning, if any, comes first (it opens first)
        # the group feeding the index is chosen, and the window's first offset sample taken, on the
        # broker while the release's rows and the join read the table and the indices (a triage's
        # cold start pays the broker's round trips beside the others')
        with ThreadPoolExecutor(1, thread_name_prefix="kafka-window") as pool:
            events = backends.events
            first = pool.submit(open_group, events, target) if events is not None else None
            try:
                joined = self._read(selection, progress, sink)
            finally:
                if first is not None:
                    wait([first])
        if first is not None:
            window: list[str] = []
            chosen, notes = target, list[str]()
            if first.exception() is None:  # else the window says the broker failed
                chosen, notes, _ = first.result()
            if chosen.group != target.group:
                self.target = target = chosen
                report.consumer_group = chosen.group
            self.kafka = open_window(backends, self.options, target, window, selection.urns, first)
            report.warnings[at:at] = notes + window
        return joined

    def _read(self, selection: Selection, progress: Progress | None, sink: Sink | None = None) -> Joined:
        """The release's rules, DataHub's own reindexes, then the join of the table and the indices."""
        backends, report, target = self.backends, self.report, self.target
        versions = deployment_rules(backends, self.registry, target, report)
        self.scanner = scanner = scanner_for(backends, self.registry, target, report.started_at, versions)
        scanner.ctx.store_lag = note_replica(report, backends)
        note_datahub_reindex(report, backends, scanner)
        rows, docs = backends.store.rows_read, backends.search.docs_read  # a repair's reads came before
        joined = scanner.run(selection, progress, sink)
        self.absence = self._absence(scanner, joined)
        if newer := versions.newer_warning():
            joined.warnings.append(newer)
        # what the join fetched (re-observation reads a few entities again: not counted)
        joined.read = {"rows": backends.store.rows_read - rows, "documents": backends.search.docs_read - docs}
        return joined

    def _absence(self, scanner: Scanner, joined: Joined) -> list[Finding]:
        """The whole-index findings of the join: a missing entity index (a notice where the V3
        index holds the type), an alias answering with several copies. Never re-read per urn."""
        found = duplicate_documents(self.backends.search, scanner.duplicated)
        if scanner.absent:
            from auditor.platforms.datahub.v3 import v3_indices  # v3.py runs this module's scan

            search, prefix = self.backends.search, self.target.index_prefix
            v3 = {} if self.target.type_field else v3_indices(search, prefix, self.registry)
            missing, notices = missing_indices(scanner.absent, scanner.index_of, v3)
            joined.warnings += notices
            found += missing
        return found

    def reobserve(self, candidates: Iterable[Finding]) -> Iterator[Seen]:
        assert self.scanner is not None  # the join came first
        visibility = self.target.visibility if self.options.visibility is None else self.options.visibility
        observer = Observer(self.scanner, self.kafka, visibility=visibility)
        yield from observer.batches(candidates)
        record_reobservation(self.report, observer, self.backends.state)

    def weigh(self, judged: list[tuple[Observed, Classified]]) -> list[Classified]:
        return weigh(judged)

    def gather(self, c: Classified) -> None:
        self.restores.add(c)  # the earliest stale write of each index, and its entities
        if c.verdict == Verdict.IN_FLIGHT and self.options.confirm > 0:
            self.in_flight.append(c.finding.urn)  # re-checked after the confirmation's wait

    def review(self, classified: Iterable[Classified], still: Iterable[Finding]) -> Iterable[Classified]:
        # the in-flight re-checked (a restore re-labels none of them), then the verdicts read
        # again as one stream, re-labelled, the converged left out
        if self.options.confirm > 0 and self.scanner is not None:
            self.still = still_in_flight(self.in_flight, self.options.confirm, self.scanner)
        self.in_flight.close()
        store, prefix = self.backends.store, self.target.index_prefix
        counted = self.restores.counts()
        classified = mark_restores(classified, store, self.registry, prefix, self.report, counted)
        if self.still is not None:
            classified = unconverged(classified, self.still, self.report)
        whole = judged(lambda index: bool(self.backends.search.names(index)), self.absence)
        return chain(classified, whole)

    def tally(self, c: Classified) -> None:
        self.outdated.add(c)

    def close(self, report: Report) -> None:
        if self.still is not None:
            self.still.close()
        report.warnings += backend_warnings(self.backends)
        outdated(report).extend(self.outdated.lines())

    def closed(self, report: Report) -> None:
        hold_for_catch_up(report)


def backend_warnings(backends: ScanBackends) -> list[str]:
    """What the backends had to work around during the scan (weaker evidence, resumed reads)."""
    out = []
    events = backends.events
    if events is not None and events.decode_failures:
        why = events.decode_error or "unknown error"
        out.append(
            f"{events.decode_failures} MCL(s) could not be decoded ({why}): their changes were matched "
            "by time, not by value (weaker evidence; is the schema registry reachable?)"
        )
    note = getattr(events, "decode_note", None)
    if note:
        out.append(f"{note} (the values may be read with another schema than the writer's)")
    if events is not None and events.not_mcl:
        out.append(
            f"{events.not_mcl} message(s) on the change log keyed by a urn of this scan are not "
            "Confluent-framed Avro nor Glue-framed (not MCLs DataHub produced): ignored as evidence"
        )
    resumed = backends.store.resumed
    if resumed:
        out.append(
            f"the database connection was lost {resumed} time(s) during the scan; each read resumed "
            "after the last row it had read (nothing skipped, nothing read twice)"
        )
    retried = backends.search.retried
    if retried:
        out.append(
            f"the search cluster refused, timed out or dropped {retried} request(s) (429/5xx, timeout, "
            "connection); each was sent again after a backoff and answered"
        )
    return out


def note_replica(report: Report, backends: ScanBackends) -> float | None:
    """Whether the store is a replica and how far behind its primary (the report's sources say
    it; a replica's lag is a warning too): a document newer than its row and younger than the lag
    is on its way. The lag in seconds when the store is a replica that says it."""
    ask = getattr(backends.store, "replica", None)  # a federation's stores are not asked
    return note(report, ask()) if ask is not None else None


def note_datahub_reindex(report: Report, backends: ScanBackends, scanner: Scanner) -> None:
    """DataHub's own reindexes of the scanned indices: a notice each (the alias is what is audited)."""
    aliases = [scanner.index_of(t) for t in scanner.entity_types(report.scope)]
    upgrades = backends.versions.upgrade_rows if backends.versions is not None else None  # read once
    for found in detect_datahub_reindex(
        backends.store, backends.search, scanner.index_prefix, aliases, upgrades
    ):
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
        readers=target.readers,
        type_field=target.type_field,
        versions=versions,
        witness=None if target.type_field else backends.witness,  # V2's reads: the walk shows V2
    )


def record_reobservation(report: Report, observer: Observer, state: State) -> None:
    """What the re-observation had to say, and the consumer's positions at its last sample."""
    report.warnings += observer.warnings
    kafka = observer.kafka
    report.kafka_available = kafka is not None
    if kafka is not None:
        report.partitions = sorted(kafka.view.positions.values(), key=lambda p: (p.topic, p.partition))
        state.record_samples(kafka.view.group, kafka.view.last)
