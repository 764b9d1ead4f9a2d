"""The OpenMetadata scan: join -> re-observe (rows, docs, rows) -> judge by time, history, retries.

OpenMetadata has no change log: its server writes the database, then the search index, in the
same request, and logs (newer: queues in `search_index_retry_queue`) a search write that
failed. So a verdict rests on the retry queue (a pending retry: in flight), the change's age
against the grace, and the state file (a finding seen again past its grace: diverged).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from auditor.backends.protocols import State
from auditor.checks.openmetadata import check
from auditor.core.classify import History, classify, decided, in_flight
from auditor.core.model import Classified, Evidence, Finding, Observation, Report, Verdict
from auditor.platforms.openmetadata.join import OmScanner, Progress
from auditor.platforms.openmetadata.naming import RETRY_FAILED, RETRY_PENDING, OmEntity
from auditor.platforms.openmetadata.records import OmDoc, OmRow, RetryRow
from auditor.platforms.openmetadata.reindex_read import read_reindex
from auditor.platforms.openmetadata.reindex_rows import first_line
from auditor.platforms.openmetadata.search import OmSearch
from auditor.platforms.openmetadata.store import OmStore
from auditor.scan.finish import finish
from auditor.scan.memory import record_trend, remember

NO_KAFKA = (
    "OpenMetadata writes search synchronously and has no change log: verdicts rest on time and "
    "history only (the state file) and on search_index_retry_queue"
)
BATCH = 1000


@dataclass(frozen=True)
class OmScanOptions:
    """How an OpenMetadata scan judges what it sees."""

    grace: float = 300.0
    # a write the server made is searchable this much later (its request, then a 1 s refresh)
    visibility: float = 2.0
    rounds: int = 3
    max_findings: int = 10_000
    use_state: bool = True


@dataclass
class Seen:
    """The candidates after re-observation."""

    observed: list[tuple[Finding, Observation]] = field(default_factory=list)
    converged: list[tuple[Finding, Observation]] = field(default_factory=list)
    unsettled: list[tuple[Finding, Observation]] = field(default_factory=list)
    rounds: int = 0
    seconds: float = 0.0


def _now() -> datetime:
    return datetime.now(UTC)


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
    """Read each candidate's row, then (after the visibility delay) its doc, then its row again.

    A row that changed between the two reads was written meanwhile: read again next round. A
    candidate whose row held still and whose doc now agrees converged during the scan."""
    seen = Seen()
    started = time.monotonic()
    pending = {f.urn: f for f in candidates}
    for n in range(1, rounds + 1):
        if not pending:
            break
        seen.rounds = n
        by_type: dict[str, list[str]] = {}
        for f in pending.values():
            by_type.setdefault(f.entity_type, []).append(f.urn)
        rows_at = _now()
        first = {t: _read_rows(scanner, entities[t], ids) for t, ids in by_type.items()}
        sleep(visibility)
        docs_at = _now()
        docs = {t: _read_docs(scanner, names[t], ids) for t, ids in by_type.items()}
        again_at = _now()
        again = {t: _read_rows(scanner, entities[t], ids) for t, ids in by_type.items()}
        changed: dict[str, Finding] = {}
        for t, ids in by_type.items():
            for entity_id in ids:
                before, after = first[t].get(entity_id), again[t].get(entity_id)
                observation = Observation(rows_at, None, docs_at, again_at, rounds=n)
                if (before is None) != (after is None) or (
                    before is not None and after is not None and before.fingerprint != after.fingerprint
                ):
                    changed[entity_id] = pending[entity_id]
                    if n == rounds:
                        unsettled = Observation(rows_at, None, docs_at, again_at, rounds=n, settled=False)
                        seen.unsettled.append((pending[entity_id], unsettled))
                    continue
                now_found = check(entities[t], names[t], after, docs[t].get(entity_id))
                if now_found is None:
                    seen.converged.append((pending[entity_id], observation))
                else:
                    seen.observed.append((now_found, observation))
        pending = changed
    seen.seconds = time.monotonic() - started
    return seen


def _read_rows(scanner: OmScanner, entity: OmEntity, ids: list[str]) -> dict[str, OmRow]:
    out: dict[str, OmRow] = {}
    for i in range(0, len(ids), BATCH):
        out.update(scanner.store.read(entity, ids[i : i + BATCH]))
    return out


def _read_docs(scanner: OmScanner, name: str, ids: list[str]) -> dict[str, OmDoc]:
    out: dict[str, OmDoc] = {}
    for i in range(0, len(ids), BATCH):
        out.update(scanner.search.get(name, ids[i : i + BATCH]))
    return out


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


def judge(
    seen: Seen, history: dict[str, History], retries: dict[str, RetryRow] | None, *, grace: float
) -> list[Classified]:
    """One verdict per re-observed candidate: the retry queue first, then age and history."""
    now = _now()
    out: list[Classified] = []
    for f, observation in seen.observed:
        c = classify(
            f, now, grace=grace, settle=0.0, position=None, kafka=None,
            history=history.get(f.key), observed=observation,
        )  # fmt: skip
        retry = None
        if retries and c.verdict != Verdict.INVALID:
            retry = retries.get(f.urn) or retries.get(str(f.details.get("fqn") or "\x00"))
        out.append(retry_verdict(c, retry) if retry is not None else c)
    for f, observation in seen.converged:
        at = observation.docs_read_at.isoformat(timespec="seconds")
        why = f"converged during the scan: the re-read at {at} agrees"
        out.append(in_flight(f, why, observation, 0.0))
    for f, observation in seen.unsettled:
        why = (
            f"its row changed during each of {observation.rounds} re-reads (live writes): "
            "judged again next scan"
        )
        out.append(in_flight(f, why, observation))
    return out


def run_om_scan(
    store: OmStore,
    search: OmSearch,
    state: State,
    entities: list[OmEntity],
    report: Report,
    options: OmScanOptions,
    progress: Progress | None = None,
) -> Report:
    """Scan the entity types (or `report.scope.urns`): candidates re-observed, then judged."""
    scanner = OmScanner(store, search)
    ids = report.scope.urns
    joined = scanner.run(entities, ids, progress)
    report.entities, report.documents = joined.entities, joined.documents
    report.warnings += joined.warnings
    report.read = {"rows": sum(joined.entities.values()), "documents": sum(joined.documents.values())}
    by_type = {e.entity_type: e for e in entities}
    seen = reobserve(
        scanner, by_type, joined.names, joined.findings, visibility=options.visibility, rounds=options.rounds
    )
    report.reobserved = {
        "candidates": len(joined.findings),
        "entities": len({f.urn for f in joined.findings}),
        "converged": len(seen.converged),
        "unsettled": len(seen.unsettled),
        "rounds": seen.rounds,
        "seconds": round(seen.seconds, 3),
    }
    findings = [f for f, _ in seen.observed]
    history = state.history(f.key for f in findings)
    retries = store.retry_queue(
        sorted({f.urn for f in findings}),
        sorted({str(f.details["fqn"]) for f in findings if f.details.get("fqn")}),
    )
    if retries is None:
        report.warnings.append("no search_index_retry_queue table (an older OpenMetadata): no retry evidence")
    classified = judge(seen, history, retries, grace=options.grace)
    reindex, said = read_reindex(scanner, by_type, findings + [f for f, _ in seen.unsettled])
    report.warnings += said
    if reindex is not None:  # OpenMetadata's own reindex (1.12+): its jobs and failure rows
        classified = [reindex.judge(c) for c in classified]
        report.warnings += reindex.warnings(by_type, joined.names)
    if options.use_state:
        still = findings + [f for f, _ in seen.unsettled]
        types = tuple(e.entity_type for e in entities)
        remember(state, still, report, types)
    finish(report, classified, options.max_findings)
    if options.use_state:
        record_trend(state, report, "openmetadata")
    return report
