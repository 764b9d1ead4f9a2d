"""The rows of OpenMetadata's reindex tables (1.12 and later), read into records.

Followed from open-metadata/OpenMetadata: `search_index_job`, `search_index_partition`,
`search_index_failures` in bootstrap/sql/migrations/native/1.12.0/{mysql,postgres}/
schemaChanges.sql; the job's statuses (distributed/IndexJobStatus); its `stats` column is
SearchIndexJob.entityStats as JSON (entity type -> {totalRecords, processedRecords,
successRecords, failedRecords, ...}, DistributedSearchIndexCoordinator.updateJob) and
`stagedIndexMapping` entity type -> the staged index; a running job's counts move in its
partitions (PartitionWorker, SearchReindexDAOs.updateProgress), not in its row; a failure row
is IndexingFailureRecorder's (stage READER_EXCEPTION, PROCESS, SINK, VECTOR_SINK; a
READER_EXCEPTION row names no entity, its entityFqn is BATCH_FAILED). Only the first line of
an error is kept, and never a stack trace.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from auditor.core.json_guard import load_object
from auditor.errors import AuditorError
from auditor.exit_codes import ExitCode

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


def as_int(value: Any) -> int:
    """A count as a row gives it (None, a string, a decimal): an int, 0 when it is none."""
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

    def troubled(self, now_ms: int) -> bool:
        """Ended with failures, or abandoned mid-way (stalled)."""
        return self.partial() or self.stalled(now_ms)

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
    staged = {str(k): first_line(v, 255) for k, v in mapping.items() if isinstance(v, str)}
    progress: dict[str, TypeProgress] = {}
    for name, entry in stats.items():
        if isinstance(entry, Mapping):
            progress[str(name)] = TypeProgress(
                as_int(entry.get("totalRecords")),
                as_int(entry.get("processedRecords")),
                as_int(entry.get("failedRecords")),
            )
    progress.update(partitions or {})  # the partitions move with each batch; the row does not
    types = {str(e) for e in config.get("entities") or () if isinstance(e, str)}
    types |= set(progress) | set(staged)
    processed = as_int(row.get("processedrecords"))
    failed = as_int(row.get("failedrecords"))
    if partitions:
        processed = max(processed, sum(p.processed for p in partitions.values()))
        failed = max(failed, sum(p.failed for p in partitions.values()))
    return ReindexJob(
        id=first_line(row.get("id"), 64),
        status=first_line(row.get("status"), 32).upper(),
        types=frozenset(types),
        total=as_int(row.get("totalrecords")),
        processed=processed,
        failed=failed,
        created_at=as_int(row.get("createdat")),
        started_at=as_int(row.get("startedat")) or None,
        completed_at=as_int(row.get("completedat")) or None,
        updated_at=max(as_int(row.get("updatedat")), as_int(row.get("partitions_updated"))),
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
        return f"{self.stage} at {iso(self.at)}: {self.error or 'no message'}"


def failure_from_row(row: Mapping[str, Any]) -> IndexFailure:
    return IndexFailure(
        first_line(row.get("jobid"), 64),
        str(row.get("entitytype") or ""),
        str(row.get("entityid") or ""),
        first_line(row.get("entityfqn"), 300),
        first_line(row.get("failurestage"), 40) or "?",
        first_line(row.get("errormessage")),
        as_int(row.get("timestamp")),
    )


def iso(ms: int) -> str:
    """Epoch milliseconds as an ISO instant (UTC), "?" for none."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds") if ms else "?"


class OmReindexRunning(AuditorError):
    """A `--full` rebuild that would race OpenMetadata's own reindex job of the same types."""

    exit_code = ExitCode.INCOMPLETE


def refuse_full(jobs: Sequence[ReindexJob] | None, entity_types: Sequence[str], now_ms: int) -> None:
    """Refuse a `--full` rebuild while OpenMetadata's own reindex job (1.12+, `search_index_job`)
    runs over any of `entity_types`: both would build and swap the same indices. A job that has
    not moved for STALLED_MS is not running (the scan reports it as stalled)."""
    for job in jobs or ():
        mine = sorted(t for t in entity_types if job.covers(t))
        if job.running(now_ms) and mine:
            done = f", {job.processed}/{job.total} records" if job.total else ""
            raise OmReindexRunning(
                f"OpenMetadata's reindex job {job.id} is {job.status}{done} over {', '.join(mine)}: "
                "--full would race its index rebuild and alias swap",
                hint="wait for it to finish (the Search Indexing application), scan again, then repair; "
                "a targeted reindex (--urn, --from-report) is not refused",
            )
