"""Evidence from OpenMetadata's own reindex (1.12 and later): its jobs, partitions and failure rows.

Followed from open-metadata/OpenMetadata (openmetadata-service/.../apps/bundles/searchIndex/):
`search_index_job` (bootstrap/sql/migrations/native/1.12.0/*/schemaChanges.sql; statuses of
distributed/IndexJobStatus; `stats` is SearchIndexJob.entityStats as JSON, entity type ->
{totalRecords, processedRecords, successRecords, failedRecords, ...}; `stagedIndexMapping`,
entity type -> the staged index), `search_index_partition` (its counts move after every batch:
PartitionWorker; the job row's own counts are written at creation and at the end),
`search_index_failures` (IndexingFailureRecorder: stage READER_EXCEPTION, PROCESS, SINK,
VECTOR_SINK; a READER_EXCEPTION row names no entity, its entityFqn is BATCH_FAILED).
2.0 rebuilds every type into `<index>_rebuild_<epoch ms>` (DefaultRecreateHandler); live
writes go there (SearchRepository.resolveWriteIndex) and the promotion swaps the aliases onto
it, a partial one too (RatioPromotionPolicy: any document indexed is promoted).

A running job on a type makes that type's findings in flight (with its progress and an ETA at
its rate so far), unless a failure row says the job failed that entity (diverged, its cause in
the evidence). The newest finished job with failures names itself and the entity's failure
row in the evidence of its type's findings. Pure: the rows come in, verdicts go out.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from auditor.core.json_guard import load_object
from auditor.core.model import Classified, Verdict

JOB_TABLE, PARTITION_TABLE, FAILURE_TABLE = (
    "search_index_job",
    "search_index_partition",
    "search_index_failures",
)
ACTIVE = frozenset({"INITIALIZING", "READY", "RUNNING", "PROMOTING", "STOPPING"})
PARTIAL = frozenset({"COMPLETED_WITH_ERRORS", "FAILED"})
STALLED_MS = 10 * 60 * 1000  # OrphanJobMonitor: a job not updated for 10 minutes is abandoned
ERROR_CAP = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def first_line(message: Any, cap: int = ERROR_CAP) -> str:
    """The first non-blank line of a message (never its stack trace), control characters out, capped."""
    for line in str(message or "").splitlines():
        line = _CONTROL.sub(" ", line).strip()
        if line:
            return line if len(line) <= cap else line[: cap - 1] + "…"
    return ""


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


@dataclass(frozen=True)
class TypeProgress:
    total: int = 0
    processed: int = 0
    failed: int = 0


@dataclass(frozen=True)
class ReindexJob:
    """A `search_index_job` row, with its per-type progress (partitions, else its stats JSON)."""

    id: str
    status: str
    types: frozenset[str]  # what it reindexes ("all": every type)
    total: int = 0
    processed: int = 0
    failed: int = 0
    created_at: int = 0
    started_at: int | None = None
    completed_at: int | None = None
    updated_at: int = 0
    staged: Mapping[str, str] = field(default_factory=dict)
    progress: Mapping[str, TypeProgress] = field(default_factory=dict)
    error: str = ""

    def covers(self, entity_type: str) -> bool:
        return "all" in self.types or entity_type in self.types

    def stalled(self, now_ms: int) -> bool:
        return self.status in ACTIVE and now_ms - self.updated_at > STALLED_MS

    def running(self, now_ms: int) -> bool:
        return self.status in ACTIVE and not self.stalled(now_ms)

    def partial(self) -> bool:
        return self.status in PARTIAL or (self.status not in ACTIVE and self.failed > 0)

    def of(self, entity_type: str) -> TypeProgress:
        return self.progress.get(entity_type) or TypeProgress()

    def rate(self, now_ms: int) -> float | None:
        """Records per second since it started (None before any)."""
        if not self.started_at or self.processed <= 0 or now_ms <= self.started_at:
            return None
        return self.processed / ((now_ms - self.started_at) / 1000)

    def eta(self, entity_type: str, now_ms: int) -> float | None:
        """Seconds until the type's records are all processed, at the job's rate so far."""
        p, rate = self.of(entity_type), self.rate(now_ms)
        if p.total and p.processed >= p.total:
            return 0.0
        return (p.total - p.processed) / rate if rate and p.total else None

    def said(self, entity_type: str, now_ms: int) -> str:
        p = self.of(entity_type)
        pct = f" ({p.processed * 100 / p.total:.0f}%)" if p.total else ""
        eta = self.eta(entity_type, now_ms)
        when = f", ETA {eta:.0f} s at its rate so far" if eta is not None else ", no rate yet"
        return f"{p.processed}/{p.total} {entity_type} records processed{pct}{when}"


def job_from_row(row: Mapping[str, Any], partitions: Mapping[str, TypeProgress] | None = None) -> ReindexJob:
    """A job from its row (column names lowercased) and its partitions' sums per type, if read."""
    config = load_object(row.get("jobconfiguration")) or {}
    stats = load_object(row.get("stats")) or {}
    mapping = load_object(row.get("stagedindexmapping")) or {}
    staged = {str(k): v for k, v in mapping.items() if isinstance(v, str)}
    progress: dict[str, TypeProgress] = {}
    for name, entry in stats.items():
        if isinstance(entry, Mapping):
            progress[str(name)] = TypeProgress(
                _int(entry.get("totalRecords")),
                _int(entry.get("processedRecords")),
                _int(entry.get("failedRecords")),
            )
    progress.update(partitions or {})  # the partitions move with each batch; the row does not
    types = {str(e) for e in config.get("entities") or () if isinstance(e, str)}
    types |= set(progress) | set(staged)
    processed = _int(row.get("processedrecords"))
    failed = _int(row.get("failedrecords"))
    if partitions:
        processed = max(processed, sum(p.processed for p in partitions.values()))
        failed = max(failed, sum(p.failed for p in partitions.values()))
    return ReindexJob(
        id=str(row.get("id") or ""),
        status=str(row.get("status") or "").upper(),
        types=frozenset(types),
        total=_int(row.get("totalrecords")),
        processed=processed,
        failed=failed,
        created_at=_int(row.get("createdat")),
        started_at=_int(row.get("startedat")) or None,
        completed_at=_int(row.get("completedat")) or None,
        updated_at=max(_int(row.get("updatedat")), _int(row.get("partitions_updated"))),
        staged=staged,
        progress=progress,
        error=first_line(row.get("errormessage")),
    )


@dataclass(frozen=True)
class IndexFailure:
    """A `search_index_failures` row: the first line of its error only (never its stack trace)."""

    job_id: str
    entity_type: str
    entity_id: str
    entity_fqn: str
    stage: str
    error: str
    at: int

    def said(self) -> str:
        return f"{self.stage} at {_iso(self.at)}: {self.error or 'no message'}"


def failure_from_row(row: Mapping[str, Any]) -> IndexFailure:
    return IndexFailure(
        str(row.get("jobid") or ""),
        str(row.get("entitytype") or ""),
        str(row.get("entityid") or ""),
        first_line(row.get("entityfqn"), 300),
        first_line(row.get("failurestage"), 40) or "?",
        first_line(row.get("errormessage")),
        _int(row.get("timestamp")),
    )


@dataclass
class ReindexEvidence:
    """What the reindex tables (and the rebuild indices) said, and the judgement from it."""

    jobs: list[ReindexJob]  # newest first
    failures: list[IndexFailure] = field(default_factory=list)  # of the findings' entities
    staged_agrees: set[str] = field(default_factory=set)  # ids whose rebuild-index doc agrees
    stages: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # job -> stage -> rows
    now_ms: int = 0

    def current(self, entity_type: str) -> ReindexJob | None:
        """The running job on the type, else the newest one that ended (a stalled one: none)."""
        covering = [j for j in self.jobs if j.covers(entity_type)]
        running = next((j for j in covering if j.running(self.now_ms)), None)
        return running or next((j for j in covering if j.status not in ACTIVE), None)

    def judge(self, c: Classified) -> Classified:
        if c.verdict == Verdict.INVALID:
            return c
        f = c.finding
        job = self.current(f.entity_type)
        if job is None or not (job.running(self.now_ms) or job.partial()):
            return c
        fqn = str(f.details.get("fqn") or "\x00")
        fails = [
            x for x in self.failures if x.job_id == job.id and x.entity_id == f.urn or x.entity_fqn == fqn
        ]
        fails = [x for x in fails if x.job_id == job.id]
        if c.verdict == Verdict.IN_FLIGHT and not fails:
            return c  # in flight on stronger evidence already (converged during the scan, a retry)
        p, now, staged = job.of(f.entity_type), self.now_ms, job.staged.get(f.entity_type)
        info: dict[str, Any] = {
            "job": job.id,
            "status": job.status,
            "processed": p.processed,
            "total": p.total,
        }
        if staged:
            info["rebuild_index"] = staged
        if fails:
            info["failures"] = [{"stage": x.stage, "error": x.error, "at": x.at} for x in fails[:3]]
        finding = dataclasses.replace(f, details={**f.details, "reindex": info})
        cause = f"search_index_failures of job {job.id}: {fails[0].said()}" if fails else ""
        head = f"search_index_job {job.id} ({job.status})"
        if job.running(now) and not fails:
            if f.urn in self.staged_agrees:
                why = f"the rebuild index {staged} of running {head} holds it as its row says: the promotion"
                why += f" will serve it ({job.said(f.entity_type, now)})"
            else:
                into = f" into {staged}" if staged else ""
                why = f"{head} is reindexing it{into}: {job.said(f.entity_type, now)}"
            eta, rate = job.eta(f.entity_type, now), job.rate(now)
            evidence = dataclasses.replace(c.evidence, reason=why, eta_seconds=eta, rate=rate)
            return Classified(finding, Verdict.IN_FLIGHT, Verdict.IN_FLIGHT.value, evidence)
        if job.running(now):  # it failed this entity: the promotion will not serve it
            evidence = dataclasses.replace(c.evidence, reason=f"{head} failed to index it; {cause}")
            return Classified(finding, Verdict.DIVERGED, f.kind.value, evidence)
        served = "served from the partial index of" if staged else "left by"
        why = f"{c.evidence.reason}; {f.entity_type} is {served} {head}, {p.failed or job.failed} failed"
        why += f"; {cause}" if cause else ""
        return Classified(finding, c.verdict, c.subkind, dataclasses.replace(c.evidence, reason=why))

    def warnings(self, entity_types: Iterable[str], aliases: Mapping[str, str]) -> list[str]:
        """One line per job that bears on the scanned types: running, stalled, or ended partial."""
        out: list[str] = []
        types = list(entity_types)
        seen: set[str] = set()
        for t in types:
            job = self.current(t)
            if job is None or job.id in seen:
                continue
            mine = [x for x in types if job.covers(x) and self.current(x) is job]
            seen.add(job.id)
            if job.running(self.now_ms):
                progress = "; ".join(job.said(x, self.now_ms) for x in mine)
                out.append(
                    f"search_index_job {job.id} is {job.status}: {progress}; their findings are in flight"
                )
                for x in (x for x in mine if x in job.staged):
                    out.append(
                        f"2.0 reindex of {x}: live writes go to {job.staged[x]} until its promotion; the "
                        f"scan reads what users read ({aliases.get(x, x)}) and a document there is in flight"
                    )
            elif job.partial():
                out.append(self._partial(job, mine))
        for job in self.jobs:
            if job.stalled(self.now_ms) and any(job.covers(t) for t in types):
                at = _iso(job.updated_at)
                out.append(
                    f"search_index_job {job.id} is {job.status} but has not progressed since {at}: abandoned "
                    "(OrphanJobMonitor's 10 minutes), its types judged without it"
                )
        return out

    def _partial(self, job: ReindexJob, types: list[str]) -> str:
        rows = [x for x in self.failures if x.job_id == job.id]
        counted = self.stages.get(job.id) or Counter(x.stage for x in rows)
        stages = ", ".join(f"{first_line(s, 40)} {n}" for s, n in sorted(counted.items()))
        promoted = [t for t in types if t in job.staged]
        what = (
            f"promoted a partial index of {', '.join(promoted)}"
            if promoted
            else f"indexed {', '.join(types)}"
        )
        line = f"search_index_job {job.id} ended {job.status} at {_iso(job.completed_at or job.updated_at)}"
        line += f" and {what}: {job.failed} of {job.total} records failed"
        if job.error:
            line += f" ({job.error})"
        if stages:
            line += f"; search_index_failures rows by stage: {stages}"
        if rows:
            line += f"; first of the findings: {rows[0].entity_fqn or rows[0].entity_id} {rows[0].said()}"
        return line


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds") if ms else "?"
