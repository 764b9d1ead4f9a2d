"""OpenMetadata's own bookkeeping tables, read: the search-index retry queue
(`search_index_retry_queue`) and, from 1.12, its reindex jobs (`search_index_job`), their
partitions and their failure rows, and where an entity stands in a running job's order (its
entity table in `ORDER BY name, id`). Each reader says None when the server has no such table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auditor.errors import BackendUnavailable
from auditor.platforms.openmetadata.naming import RETRY_QUEUE_TABLE, OmEntity
from auditor.platforms.openmetadata.records import RetryRow
from auditor.platforms.openmetadata.reindex_place import Order, Partition, partition_from_row
from auditor.platforms.openmetadata.reindex_rows import (
    ACTIVE,
    FAILURE_TABLE,
    JOB_TABLE,
    PARTITION_TABLE,
    IndexFailure,
    ReindexJob,
    TypeProgress,
    failure_from_row,
    job_from_row,
)

IN_LIST = 100  # ids per IN list
# entities placed by a count each (a triage); more: one pass over the type's ids in its order
# (20,000 rows: a pass 50-480 ms on PostgreSQL / MariaDB, a count 7-60 ms each)
ORDER_LOOKUPS = 4


class Bookkeeping:
    """The readers of the server's bookkeeping tables, over the store's engine (OmStore is one)."""

    engine: Any
    sql: Any  # how a query is handed to the engine (auditor/backends/dbapi.py `sql_of`)
    errors: tuple[type[Exception], ...]  # what its queries raise

    def columns(self, table: str, *, required: bool = True) -> set[str] | None:
        raise NotImplementedError

    def _fail(self, what: str, exc: Exception) -> BackendUnavailable:
        raise NotImplementedError

    # -- the migration level -------------------------------------------------------------
    def migrations(self) -> list[tuple[Any, Any]] | None:
        """(version, status) of every SERVER_CHANGE_LOG row (status None before the column
        existed); None when there is no such table or it may not be read."""
        for table in ("SERVER_CHANGE_LOG", "server_change_log"):
            found = self.columns(table, required=False)
            # optional bookkeeping: a refused read is "release unknown", never "not scanned"
            getattr(self, "denied", set()).discard(table)
            if found is None:
                continue
            status = "status" if "status" in found else "NULL"
            try:
                with self.engine.connect() as conn:
                    got = conn.execute(self.sql(f"SELECT version, {status} FROM {table}"))
                    return [(r[0], r[1]) for r in got]
            except self.errors:
                return None
        return None

    # -- the retry queue ----------------------------------------------------------------
    def retry_queue(self, ids: Sequence[str], fqns: Sequence[str] = ()) -> dict[str, RetryRow] | None:
        """Retry rows for these entities, keyed by id (and by FQN for rows that name only one);
        None when the server has no retry queue (older OpenMetadata)."""
        cols = self.columns(RETRY_QUEUE_TABLE)
        if cols is None:
            return None
        wanted = ["entityId", "entityFqn", "status"]
        wanted += [c for c in ("retryCount", "failureReason", "entityType", "claimedAt") if c.lower() in cols]
        out: dict[str, RetryRow] = {}
        try:
            with self.engine.connect() as conn:
                for column, values in (("entityId", list(ids)), ("entityFqn", list(fqns))):
                    for i in range(0, len(values), IN_LIST):
                        chunk = values[i : i + IN_LIST]
                        marks = ", ".join(f":v{n}" for n in range(len(chunk)))
                        params = {f"v{n}": v for n, v in enumerate(chunk)}
                        sql = (
                            f"SELECT {', '.join(wanted)} FROM {RETRY_QUEUE_TABLE} WHERE {column} IN ({marks})"
                        )
                        for r in conn.execute(self.sql(sql), params):
                            got = dict(zip([w.lower() for w in wanted], r, strict=True))
                            row = RetryRow(
                                str(got["entityid"] or ""),
                                str(got["entityfqn"] or ""),
                                str(got["status"] or "PENDING").upper(),
                                got.get("retrycount"),
                                got.get("failurereason"),
                                got.get("entitytype"),
                                got.get("claimedat"),
                            )
                            for key in (row.entity_id, row.entity_fqn):
                                if key:
                                    out.setdefault(key, row)
        except self.errors as exc:
            raise self._fail(f"reading {RETRY_QUEUE_TABLE}", exc) from None
        return out

    # -- the reindex tables (1.12 and later) ---------------------------------------------
    def reindex_jobs(self, limit: int = 20) -> list[ReindexJob] | None:
        """The newest search_index_job rows (SearchIndexJobDAO.listRecent), a running one with its
        partitions' sums per type; None when the server has no such table (before 1.12)."""
        if self.columns(JOB_TABLE, required=False) is None:
            return None
        try:
            with self.engine.connect() as conn:
                got = conn.execute(
                    self.sql(f"SELECT * FROM {JOB_TABLE} ORDER BY createdAt DESC LIMIT {int(limit)}")
                )
                rows = [{str(k).lower(): v for k, v in r.items()} for r in got.mappings()]
                active = [str(r["id"]) for r in rows if str(r.get("status") or "").upper() in ACTIVE]
                parts: dict[str, dict[str, TypeProgress]] = {}
                if active and self.columns(PARTITION_TABLE, required=False) is not None:
                    marks, params = in_marks("j", active)
                    sql = (
                        "SELECT jobId, entityType, SUM(estimatedCount), SUM(processedCount), "
                        f"SUM(failedCount), MAX(lastUpdateAt) FROM {PARTITION_TABLE} "
                        f"WHERE jobId IN ({marks}) GROUP BY jobId, entityType"
                    )
                    for job, etype, total, done, failed, last in conn.execute(self.sql(sql), params):
                        parts.setdefault(str(job), {})[str(etype)] = TypeProgress(
                            int(total or 0), int(done or 0), int(failed or 0)
                        )
                        row = next(r for r in rows if str(r["id"]) == str(job))
                        row["partitions_updated"] = max(
                            int(row.get("partitions_updated") or 0), int(last or 0)
                        )
        except self.errors as exc:
            raise self._fail(f"reading {JOB_TABLE}", exc) from None
        return [job_from_row(r, parts.get(str(r["id"]))) for r in rows]

    def reindex_failures(
        self, jobs: Sequence[str], ids: Sequence[str], fqns: Sequence[str]
    ) -> tuple[list[IndexFailure], dict[str, dict[str, int]]] | None:
        """The failure rows of these jobs for these entities (the first 1000 characters of each
        error, never the stack trace), and each job's row count per stage; None: no table."""
        if self.columns(FAILURE_TABLE, required=False) is None:
            return None
        out: dict[str, IndexFailure] = {}  # by row id: a row found by its entity id and its FQN
        stages: dict[str, dict[str, int]] = {}
        if not jobs:
            return [], stages
        job_marks, job_params = in_marks("j", list(jobs))
        error = "SUBSTR(errorMessage, 1, 1000)"  # the first line is all a report shows
        cols = f"id, jobId, entityType, entityId, entityFqn, failureStage, {error}, timestamp"
        names = (
            "id",
            "jobid",
            "entitytype",
            "entityid",
            "entityfqn",
            "failurestage",
            "errormessage",
            "timestamp",
        )
        try:
            with self.engine.connect() as conn:
                sql = (
                    f"SELECT jobId, failureStage, COUNT(*) FROM {FAILURE_TABLE} WHERE jobId IN ({job_marks}) "
                )
                for job, stage, n in conn.execute(self.sql(sql + "GROUP BY jobId, failureStage"), job_params):
                    stages.setdefault(str(job), {})[str(stage)] = int(n)
                for column, values in (("entityId", list(ids)), ("entityFqn", list(fqns))):
                    for i in range(0, len(values), IN_LIST):
                        marks, params = in_marks("v", values[i : i + IN_LIST])
                        sql = (
                            f"SELECT {cols} FROM {FAILURE_TABLE} WHERE jobId IN ({job_marks}) "
                            f"AND {column} IN ({marks}) ORDER BY timestamp DESC"
                        )
                        for r in conn.execute(self.sql(sql), {**params, **job_params}):
                            out[str(r[0])] = failure_from_row(dict(zip(names, r, strict=True)))
        except self.errors as exc:
            raise self._fail(f"reading {FAILURE_TABLE}", exc) from None
        return sorted(out.values(), key=lambda x: -x.at), stages

    def reindex_partitions(self, job_id: str, types: Sequence[str]) -> list[Partition] | None:
        """A job's `search_index_partition` rows of these types (the first 1000 characters of
        lastError); None: no such table, or its SELECT refused."""
        if not types or self.columns(PARTITION_TABLE, required=False) is None:
            return None
        marks, params = in_marks("t", list(types))
        names = ("id", "entitytype", "partitionindex", "rangestart", "rangeend", "status",
                 "processingcursor", "completedat", "lastupdateat", "lasterror", "retrycount")  # fmt: skip
        sql = (
            "SELECT id, entityType, partitionIndex, rangeStart, rangeEnd, status, processingCursor, "
            f"completedAt, lastUpdateAt, SUBSTR(lastError, 1, 1000), retryCount FROM {PARTITION_TABLE} "
            f"WHERE jobId = :job AND entityType IN ({marks}) ORDER BY entityType, partitionIndex"
        )
        try:
            with self.engine.connect() as conn:
                got = conn.execute(self.sql(sql), {**params, "job": job_id})
                return [partition_from_row(dict(zip(names, r, strict=True))) for r in got]
        except self.errors as exc:
            raise self._fail(f"reading {PARTITION_TABLE}", exc) from None

    def reindex_order(self, entity: OmEntity, ids: Sequence[str], since: int) -> Order | None:
        """Where these entities stand in the order a reindex reads the type (OpenMetadata's
        `ORDER BY name, id` over every row, in the database's own collation): the rows now, those
        not written since `since` (epoch ms), and for each entity how many of those are ordered
        before it. None when the table has no `name` or `updatedAt` column."""
        cols = self.columns(entity.table, required=False)
        if cols is None or not {"name", "updatedat", "id"} <= cols:
            return None
        table, before = entity.table, dict[str, int]()
        try:
            with self.engine.connect() as conn:
                total, unchanged = conn.execute(
                    self.sql(
                        "SELECT COUNT(*), COALESCE(SUM(CASE WHEN updatedAt < :s THEN 1 ELSE 0 END), 0) "
                        f"FROM {table}"
                    ),
                    {"s": since},
                ).one()
                keys: dict[str, Any] = {}
                for i in range(0, len(ids), IN_LIST):
                    marks, params = in_marks("v", list(ids[i : i + IN_LIST]))
                    sql = f"SELECT id, name FROM {table} WHERE id IN ({marks})"
                    keys.update(
                        {str(r[0]): r[1] for r in conn.execute(self.sql(sql), params) if r[1] is not None}
                    )
                if len(keys) <= ORDER_LOOKUPS:  # one count over the name index each
                    sql = (
                        f"SELECT COUNT(*) FROM {table} WHERE updatedAt < :s "
                        "AND (name < :n OR (name = :n AND id < :i))"
                    )
                    for entity_id, name in keys.items():
                        found = conn.execute(self.sql(sql), {"s": since, "n": name, "i": entity_id}).scalar()
                        before[entity_id] = int(found or 0)
                elif keys:  # one pass in the job's order, ids only
                    seen = 0
                    ordered = conn.execution_options(stream_results=True).execute(
                        self.sql(f"SELECT id, updatedAt FROM {table} ORDER BY name, id")
                    )
                    for entity_id, updated in ordered:
                        if str(entity_id) in keys:
                            before[str(entity_id)] = seen
                        if updated is not None and int(updated) < since:
                            seen += 1
        except self.errors:
            return None  # evidence, not the scan: its place is then said to be unknown
        return Order(int(total or 0), int(unchanged or 0), before)


def in_marks(prefix: str, values: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """`:p0, :p1, ...` and their parameters for an IN list."""
    return ", ".join(f":{prefix}{n}" for n in range(len(values))), {
        f"{prefix}{n}": v for n, v in enumerate(values)
    }
