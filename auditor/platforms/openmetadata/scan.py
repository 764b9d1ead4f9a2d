"""The OpenMetadata scan: join -> re-observe (rows, docs, rows) -> judge by time, history, retries.

OpenMetadata has no change log: its server writes the database, then the search index, in the
same request, and logs (newer: queues in `search_index_retry_queue`) a search write that
failed. So a verdict rests on the retry queue (a pending retry: in flight), the change's age
against the grace, and the state file (a finding seen again past its grace: diverged).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import chain
from typing import Any

from auditor.backends.protocols import State
from auditor.backends.replica import note
from auditor.checks.openmetadata import check
from auditor.core.absence import judged
from auditor.core.classify import CLOCK_SKEW_SECONDS, History, classify, decided
from auditor.core.model import Classified, Evidence, Finding, Kind, Report, Selection, Verdict
from auditor.platforms.openmetadata.join import OmScanner, Progress
from auditor.platforms.openmetadata.naming import RETRY_FAILED, RETRY_PENDING, OmEntity
from auditor.platforms.openmetadata.records import OmDoc, OmRow, RetryRow
from auditor.platforms.openmetadata.reindex_read import read_reindex
from auditor.platforms.openmetadata.reindex_rows import first_line
from auditor.platforms.openmetadata.search import OmSearch
from auditor.platforms.openmetadata.store import OmStore
from auditor.scan import engine
from auditor.scan.engine import Joined, Judging, Observed, Parts, Seen, Sink
from auditor.scan.options import FindingsOut
from auditor.scan.reread import Rereader

NO_RETRY_QUEUE = "no search_index_retry_queue table (an older OpenMetadata): no retry evidence"
# entities re-read together: the reads go 1,000 ids a query, and the visibility wait (when a
# finding needs one) is paid once a batch; a batch's candidates are what the re-reads hold
REOBSERVE_BATCH = 20_000
NO_KAFKA = (
    "OpenMetadata writes search synchronously and has no change log: verdicts rest on time and "
    "history only (the state file) and on search_index_retry_queue"
)


@dataclass(frozen=True)
class OmScanOptions:
    """How an OpenMetadata scan judges what it sees."""

    grace: float = 300.0
    # a write the server made is searchable this much later (its request, then a 1 s refresh)
    visibility: float = 2.0
    rounds: int = 3
    max_findings: int = 10_000
    findings_out: FindingsOut | None = None  # every finding, not only the worst
    use_state: bool = True


# the compared fields only a write of the entity itself changes, which moves its updatedAt; owners,
# tags and domains also move with other rows (a parent's owners inherited, "add assets" to a
# domain, a tag renamed), and a soft delete reaches its children's documents by a script over the
# index, which may run long
DATED_FIELDS = frozenset({"version", "updatedAt", "name", "fullyQualifiedName", "description"})


def dated_by_row(f: Finding) -> bool:
    """A finding whose row's updatedAt dates every write that could still change it: a document
    missing, a field of the row's own JSON stale, a row that cannot be read."""
    if f.kind in (Kind.MISSING_DOCUMENT, Kind.MALFORMED_ASPECT):
        return True
    if f.kind == Kind.STALE_FIELDS:
        return all(d.get("field") in DATED_FIELDS for d in f.details.get("fields", ()))
    return False


class OmRereader(Rereader):
    """OpenMetadata's reads for the engine's causal re-observation: each candidate's row, then
    (after the visibility delay: it has no change log to say when) its document, then its row.

    A first round reads the documents without the wait and settles what no wait could change:
    a finding dated by its row (`dated_by_row`) whose updatedAt is older than the visibility
    delay and the clock skew allowed between the servers (the server wrote that change's
    document, or queued its retry, in the same request, long before), and an orphan (no change
    time: first seen it is unconfirmed, in flight, and seen again by an earlier scan its
    document outlived a whole scan; a delete in flight would only have turned "unconfirmed" into
    "converged", both in flight). Waiting would only delay the verdict: a triage paid the whole
    delay on every divergence. Everything else (owners, tags or domains, a soft delete, a recent
    change) waits as before."""

    def __init__(
        self,
        scanner: OmScanner,
        entities: dict[str, OmEntity],
        names: dict[str, str],
        *,
        visibility: float,
        rounds: int = 3,
        sleep: Callable[[float], None] | None = None,
        batch: int = 0,
    ) -> None:
        # 0: every candidate in one batch (a triage's few); the scan's batches are REOBSERVE_BATCH
        super().__init__(visibility=visibility, batch=batch, max_rounds=rounds, sleep=sleep)
        self.scanner, self.entities, self.names = scanner, entities, names

    @property
    def quick(self) -> bool:
        return True

    def without_wait(self, finding: Finding, evidence: tuple[Any, Any] | None) -> bool:
        if finding.kind == Kind.ORPHAN_DOCUMENT:
            return True
        changed = finding.changed_at
        if changed is None or not dated_by_row(finding):
            return False
        return changed.timestamp() + CLOCK_SKEW_SECONDS + self.visibility <= self.clock()

    def prepare(self, candidates: dict[str, list[Finding]]) -> dict[str, list[str]]:
        by_type: dict[str, list[str]] = {}  # one candidate per entity: the type of its first
        for entity_id, found in candidates.items():
            by_type.setdefault(found[0].entity_type, []).append(entity_id)
        return by_type

    def rows(self, batch: dict[str, list[str]]) -> dict[str, OmRow]:
        out: dict[str, OmRow] = {}
        for t, ids in batch.items():  # the store and the index read 1,000 ids a query themselves
            out.update(self.scanner.store.read(self.entities[t], ids))
        return out

    def docs(self, batch: dict[str, list[str]]) -> dict[str, dict[str, OmDoc]]:
        return {t: self.scanner.search.get(self.names[t], ids) for t, ids in batch.items()}

    def same(self, before: OmRow | None, after: OmRow | None) -> bool:
        if before is None or after is None:
            return before is after
        return before.fingerprint == after.fingerprint

    def check(
        self, batch: dict[str, list[str]], settled: set[str], rows: dict[str, OmRow], docs: Any
    ) -> list[Finding]:
        out = []
        for t, ids in batch.items():
            for entity_id in ids:
                if entity_id in settled:
                    found = check(
                        self.entities[t], self.names[t], rows.get(entity_id), docs[t].get(entity_id)
                    )
                    if found is not None:
                        out.append(found)
        return out


def reobserve(
    scanner: OmScanner,
    entities: dict[str, OmEntity],
    names: dict[str, str],
    candidates: list[Finding],
    *,
    visibility: float,
    rounds: int = 3,
    sleep: Callable[[float], None] = time.sleep,
) -> Seen:
    """Read each candidate's row, then (after the visibility delay) its doc, then its row again
    (the engine's causal re-observation with OpenMetadata's reads)."""
    reader = OmRereader(scanner, entities, names, visibility=visibility, rounds=rounds, sleep=sleep)
    return reader.run(candidates)


def retry_verdict(c: Classified, retry: RetryRow) -> Classified:
    """A retry row for the entity: pending work (in flight), or given up on (diverged)."""
    tries = f", {retry.retry_count} retries" if retry.retry_count is not None else ""
    base = f"search_index_retry_queue holds it (status {retry.status}{tries})"
    old = c.evidence
    if retry.status in RETRY_PENDING:
        why = f"{base}: the server's retry worker will rewrite it (pending work)"
        evidence = Evidence(why, seen_before=old.seen_before, first_seen=old.first_seen, kafka=False,
                            observed=old.observed)  # fmt: skip
        return decided(c, Verdict.IN_FLIGHT, evidence)
    if retry.status == RETRY_FAILED:
        said = first_line(retry.failure_reason)  # never its stack trace
        reason = f" ({said})" if said else ""
        why = f"{base}: the server gave up on it{reason}"
        evidence = Evidence(why, seen_before=old.seen_before, first_seen=old.first_seen, kafka=False,
                            observed=old.observed)  # fmt: skip
        return decided(c, Verdict.DIVERGED, evidence)
    return c


def with_lag(c: Classified, lag: float) -> Classified:
    """A store-behind verdict judged again knowing the replica's lag (the kernel's rule: a write
    younger than the lag is in flight)."""
    f = c.finding
    if f.kind != Kind.STORE_BEHIND:
        return c
    f = dataclasses.replace(f, details={**f.details, "store_lag": lag})
    now = datetime.now(UTC)
    return classify(f, now, grace=0.0, settle=0.0, position=None, kafka=None, history=None,
                    observed=c.evidence.observed)  # fmt: skip


def weigh_retries(
    judged: list[tuple[Observed, Classified]], retries: dict[str, RetryRow] | None
) -> list[Classified]:
    """The retry queue's word on each verdict (by id, or by fully qualified name)."""
    out = []
    for o, c in judged:
        f, retry = o.finding, None
        if retries and c.verdict not in (Verdict.INVALID, Verdict.STORE_BEHIND):  # no retry helps those
            retry = retries.get(f.urn) or retries.get(str(f.details.get("fqn") or "\x00"))
        out.append(retry_verdict(c, retry) if retry is not None else c)
    return out


def judge(
    seen: Seen, history: dict[str, History], retries: dict[str, RetryRow] | None, *, grace: float
) -> list[Classified]:
    """One verdict per re-observed candidate (the kernel's), the retry queue's word first."""
    return engine.judge(seen, history, Judging(grace=grace), lambda judged: weigh_retries(judged, retries))


class OmParts(Parts):
    """What OpenMetadata brings to the scan engine: its join of entity tables and indices, its
    re-reads (row, doc, row: it has no change log), the retry queue and its own reindex jobs."""

    platform = "openmetadata"

    def __init__(self, store: OmStore, search: OmSearch, entities: list[OmEntity], report: Report,
                 options: OmScanOptions) -> None:  # fmt: skip
        self.scanner = OmScanner(store, search)
        self.store = store
        self.entities = entities
        self.by_type = {e.entity_type: e for e in entities}
        self.report = report
        self.options = options
        self.names: dict[str, str] = {}
        self.absence: list[Finding] = []  # findings on a whole index (auditor/core/absence.py)
        self.lag: float | None = None  # a replica's lag: a newer document younger than it is in flight

    def types(self, selection: Selection) -> tuple[str, ...]:
        return tuple(self.by_type)

    def join(
        self, selection: Selection, progress: Progress | None = None, sink: Sink | None = None
    ) -> Joined:
        self.lag = note(self.report, self.store.replica())
        joined = self.scanner.run(self.entities, selection.urns, progress, sink=sink)
        self.names, self.absence = joined.names, joined.absence
        found = [] if sink is not None else joined.findings  # in the sink already
        return Joined(found, joined.entities, joined.documents, warnings=joined.warnings)

    def reobserve(self, candidates: Iterable[Finding]) -> Iterator[Seen]:
        reader = OmRereader(self.scanner, self.by_type, self.names, visibility=self.options.visibility,
                            rounds=self.options.rounds, batch=REOBSERVE_BATCH)  # fmt: skip
        return reader.batches(candidates)

    def weigh(self, judged: list[tuple[Observed, Classified]]) -> list[Classified]:
        if self.lag is not None:  # the store a replica that says its lag: the kernel's rule with it
            judged = [(o, with_lag(c, self.lag)) for o, c in judged]
        findings = [o.finding for o, _ in judged]
        retries = self.store.retry_queue(
            sorted({f.urn for f in findings}),
            sorted({str(f.details["fqn"]) for f in findings if f.details.get("fqn")}),
        )
        if retries is None and NO_RETRY_QUEUE not in self.report.warnings:  # said once, not a batch
            self.report.warnings.append(NO_RETRY_QUEUE)
        return weigh_retries(judged, retries)

    def review(self, classified: Iterable[Classified], still: Iterable[Finding]) -> Iterable[Classified]:
        reindex, said = read_reindex(self.scanner, self.by_type, still)
        self.report.warnings += said
        whole = judged(lambda index: bool(self.scanner.search.search.names(index)), self.absence)
        if reindex is None:
            return chain(classified, whole)
        # OpenMetadata's own reindex (1.12+): its jobs and failure rows
        self.report.warnings += reindex.warnings(self.by_type, self.names)
        return chain(map(reindex.judge, classified), whole)


def run_om_scan(
    store: OmStore,
    search: OmSearch,
    state: State,
    entities: list[OmEntity],
    report: Report,
    options: OmScanOptions,
    progress: Progress | None = None,
) -> Report:
    """Scan the entity types (or `report.scope.urns`) on the scan engine."""
    parts = OmParts(store, search, entities, report, options)
    judging = Judging(options.grace, max_findings=options.max_findings, use_state=options.use_state,
                      findings_out=options.findings_out)  # fmt: skip
    return engine.run(parts, state, report, judging, progress)
