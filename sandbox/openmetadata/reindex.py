"""OpenMetadata's SearchIndexingApplication (1.12 distributed, 2.0 recreate), driven step by step.

Followed from open-metadata/OpenMetadata, openmetadata-service/.../apps/bundles/searchIndex/:
  distributed/DistributedSearchIndexCoordinator  createJob (INITIALIZING, `stats` = entityStats
      JSON), initializePartitions (READY), startJob (RUNNING, startedAt), completePartition,
      failPartition, checkAndUpdateJobCompletion; the job row's columns and statuses (IndexJobStatus)
  distributed/PartitionCalculator  a type's partitions: [rangeStart, rangeEnd) offsets into its
      rows counted at initialisation (listCount(Include.ALL): deleted rows too), partitions of
      max(1000, partitionSize / complexity) rows, at least minPartitionsPerEntity of them
  distributed/PartitionWorker + SearchReindexDAOs.updateProgress  a partition read batch by batch
      in `ORDER BY name, id` (EntityRepository.getCursorAtOffset for its first row, then the
      keyset listAfter(name, id)); its cursor (an absolute offset) and counts after every batch
      (the job row itself is only touched: touchJob, updatedAt)
  IndexingFailureRecorder  one search_index_failures row per failed entity (stage SINK or
      PROCESS, errorMessage and stackTrace, serverId)
  search/DefaultRecreateHandler  `<canonical index>_rebuild_<epoch ms>` per entity type,
      registered so live writes go to it (SearchRepository.resolveWriteIndex, PR 27651), and
      its promotion: the aliases moved onto it, the old index deleted; a failed entity type is
      still promoted when its staged index holds any document (RatioPromotionPolicy's rescue)
Use: `job = Reindex(server, ["table"]); job.start(); job.step(2); ...scan...; job.finish()`.
`min_partitions=4` splits even a small catalog in 4 partitions per type (OpenMetadata's
minPartitionsPerEntity); `job.fail_partition("table", 2, "why")` is a partition failed for good.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text

from sandbox.openmetadata import indices
from sandbox.openmetadata.docs import build_doc
from sandbox.openmetadata.entities import now_ms
from sandbox.openmetadata.model import entity_type
from sandbox.openmetadata.server import OmServer
from sandbox.openmetadata.store import dumps

SERVER_ID = "sandbox-om-0"  # ServerIdentityResolver's id of the one "server"
JAVA_FRAME = "org.openmetadata.service.search.SearchRepository.bulk(SearchRepository.java:1)"


# PartitionCalculator's constants and complexity factors (the types the sandbox has)
MIN_PARTITION_SIZE, MAX_PARTITION_SIZE, MAX_PARTITIONS_PER_TYPE = 1000, 50000, 10000
COMPLEXITY = {
    "table": 1.5, "dashboard": 1.3, "pipeline": 1.2, "mlmodel": 1.4, "container": 1.1, "topic": 1.0,
    "database": 0.8, "databaseSchema": 0.7, "databaseService": 0.5, "user": 0.6, "team": 0.7,
    "glossaryTerm": 1.0, "tag": 0.5,
}  # fmt: skip


def partition_ranges(
    total: int, entity_type: str, partition_size: int = 10000, min_partitions: int = 1
) -> list[tuple[int, int]]:
    """PartitionCalculator.calculatePartitionsForEntity: the [rangeStart, rangeEnd) of each."""
    if total <= 0:
        return []
    size = max(MIN_PARTITION_SIZE, min(partition_size, MAX_PARTITION_SIZE))
    adjusted = max(MIN_PARTITION_SIZE, int(size / COMPLEXITY.get(entity_type, 1.0)))
    n = (total + adjusted - 1) // adjusted
    least = max(1, min_partitions)
    if n < least and total >= least:
        n = least
        adjusted = (total + n - 1) // n
    if n > MAX_PARTITIONS_PER_TYPE:
        n = MAX_PARTITIONS_PER_TYPE
        adjusted = (total + n - 1) // n
    return [(i * adjusted, min(i * adjusted + adjusted, total)) for i in range(n)]


def job_order(server: OmServer, kind: str) -> list[tuple[str, str]]:
    """(name, id) of every row of the type in the order a reindex reads them: `ORDER BY name, id`
    over all rows, soft-deleted ones too (getCursorAtOffset with Include.ALL), in the database's
    own collation."""
    table = entity_type(kind).table
    with server.store.engine.connect() as conn:
        return [
            (str(n), str(i)) for n, i in conn.execute(text(f"SELECT name, id FROM {table} ORDER BY name, id"))
        ]


@dataclass
class _Partition:
    id: str
    entity_type: str
    index: int
    start: int  # rangeStart: an offset into the type's order at initialisation
    end: int  # rangeEnd (exclusive)
    after: tuple[str, str] | None  # the (name, id) before its first row (None: the first partition)
    cursor: int = 0  # rows read so far
    success: int = 0
    failed: int = 0
    status: str = "PENDING"

    @property
    def count(self) -> int:
        return self.end - self.start


@dataclass
class Reindex:
    """One reindex job over `entity_types`; `failures` maps an entity id to the error its write
    raises (`(stage, message)`; stage SINK or PROCESS); `recreate=False`: 1.12's in-place run."""

    server: OmServer
    entity_types: Sequence[str]
    batch_size: int = 100
    recreate: bool = True
    partition_size: int = 10000
    min_partitions: int = 1
    failures: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    job_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    staged: dict[str, str] = field(default_factory=dict)
    partitions: list[_Partition] = field(default_factory=list)
    status: str = "INITIALIZING"

    # ---------------------------------------------------------------- the job row
    def _sql(self, sql: str, **params: Any) -> None:
        postgres = self.server.store.postgres
        for name in ("jobConfiguration", "stats", "stagedIndexMapping"):
            sql = sql.replace(f":{name}", f"CAST(:{name} AS jsonb)" if postgres else f":{name}")
        with self.server.store.engine.begin() as conn:
            conn.execute(text(sql), params)

    def _stats(self) -> dict[str, Any]:
        """SearchIndexJob.entityStats as JsonUtils.pojoToJson writes it (Lombok getters)."""
        out: dict[str, Any] = {}
        for kind in self.entity_types:
            mine = [p for p in self.partitions if p.entity_type == kind]
            total = sum(p.count for p in mine)
            done = sum(p.success + p.failed for p in mine)
            out[kind] = {
                "entityType": kind,
                "totalRecords": total,
                "processedRecords": done,
                "successRecords": sum(p.success for p in mine),
                "failedRecords": sum(p.failed for p in mine),
                "warningRecords": 0,
                "totalPartitions": len(mine),
                "completedPartitions": sum(p.status == "COMPLETED" for p in mine),
                "failedPartitions": sum(p.status == "FAILED" for p in mine),
                "progressPercent": done * 100.0 / total if total else 0.0,
            }
        return out

    def _update_job(
        self, *, started: int | None = None, completed: int | None = None, error: str | None = None
    ) -> None:
        """SearchIndexJobDAO.update (status, counts, stats, startedAt, completedAt, errorMessage)."""
        done = sum(p.success + p.failed for p in self.partitions)
        self._sql(
            "UPDATE search_index_job SET status = :status, processedRecords = :processed, "
            "successRecords = :success, failedRecords = :failed, stats = :stats, "
            "startedAt = COALESCE(:started, startedAt), completedAt = :completed, updatedAt = :now, "
            "errorMessage = :error WHERE id = :id",
            status=self.status,
            processed=done,
            success=sum(p.success for p in self.partitions),
            failed=sum(p.failed for p in self.partitions),
            stats=dumps(self._stats()),
            started=started,
            completed=completed,
            now=now_ms(),
            error=error,
            id=self.job_id,
        )

    # ---------------------------------------------------------------- the run
    def start(self) -> str:
        """createJob, initializePartitions, reCreateIndexes (staged + registered), startJob."""
        now = now_ms()
        for kind in self.entity_types:  # calculatePartitions, counted and ordered now
            order = job_order(self.server, kind)
            for n, (start, end) in enumerate(
                partition_ranges(len(order), kind, self.partition_size, self.min_partitions)
            ):
                after = order[start - 1] if start > 0 else None
                self.partitions.append(_Partition(str(uuid.uuid4()), kind, n, start, end, after))
        config = {
            "entities": list(self.entity_types),
            "recreateIndex": self.recreate,
            "batchSize": self.batch_size,
            "status": "started",
            "timestamp": now,
        }
        self._sql(
            "INSERT INTO search_index_job (id, status, jobConfiguration, targetIndexPrefix, totalRecords, "
            "processedRecords, successRecords, failedRecords, stats, createdBy, createdAt, updatedAt) "
            "VALUES (:id, 'INITIALIZING', :jobConfiguration, :prefix, :total, 0, 0, 0, :stats, 'admin', "
            ":now, :now)",
            id=self.job_id,
            jobConfiguration=dumps(config),
            prefix=f"staged_{now}_",
            total=sum(p.count for p in self.partitions),
            stats=dumps(self._stats()),
            now=now,
        )
        for p in self.partitions:
            self._sql(
                "INSERT INTO search_index_partition (id, jobId, entityType, partitionIndex, rangeStart, "
                "rangeEnd, estimatedCount, workUnits, priority, status, processingCursor, claimableAt) "
                "VALUES (:id, :job, :type, :i, :start, :end, :n, :units, 50, 'PENDING', :start, :now)",
                id=p.id,
                job=self.job_id,
                type=p.entity_type,
                i=p.index,
                start=p.start,
                end=p.end,
                n=p.count,
                units=int(p.count * COMPLEXITY.get(p.entity_type, 1.0)),
                now=now,
            )
        self.status = "READY"
        self._update_job()
        if self.recreate:
            for kind in self.entity_types:
                self.staged[kind] = self._create_staged(kind, now)
                self.server.writer.staged[kind] = self.staged[kind]  # live writes go there now
            self._sql(
                "UPDATE search_index_job SET stagedIndexMapping = :stagedIndexMapping, updatedAt = :now "
                "WHERE id = :id",
                stagedIndexMapping=dumps(self.staged),
                now=now_ms(),
                id=self.job_id,
            )
        self.status = "RUNNING"
        self._update_job(started=now_ms())
        return self.job_id

    def _create_staged(self, kind: str, now: int) -> str:
        search = self.server.search
        name = f"{indices.index_name(kind, self.server.cluster_alias)}_rebuild_{now}"
        settings = {**indices.INDEX_SETTINGS, "refresh_interval": "-1"}  # the bulk-build overrides
        if search.flavor == "opensearch":
            body = {"settings": settings, "mappings": indices.MAPPINGS}
            search.client.indices.create(index=name, body=body)
        else:
            search.client.indices.create(index=name, settings=settings, mappings=indices.MAPPINGS)
        return name

    def step(self, batches: int = 1) -> int:
        """Process up to `batches` batches (PartitionWorker); returns the entities processed."""
        processed = 0
        for _ in range(batches):
            p = next((p for p in self.partitions if p.status in ("PENDING", "PROCESSING")), None)
            if p is None:
                break
            processed += self._batch(p)
        return processed

    def _batch(self, p: _Partition) -> int:
        now = now_ms()
        if p.status == "PENDING":
            p.status = "PROCESSING"
            self._sql(
                "UPDATE search_index_partition SET status = 'PROCESSING', assignedServer = :s, "
                "claimedAt = :now, startedAt = :now, lastUpdateAt = :now WHERE id = :id",
                s=SERVER_ID,
                now=now,
                id=p.id,
            )
        limit = min(self.batch_size, p.count - p.cursor)
        chunk, alias = self._read(p, limit), self.server.cluster_alias
        actions, failed = [], []
        for entity_id in chunk:
            entity = self.server.entities.get(entity_id)
            if entity is None:
                continue  # hard-deleted meanwhile: nothing to index
            if entity_id in self.failures:
                failed.append((entity, *self.failures[entity_id]))
                continue
            index = self.staged.get(p.entity_type) or indices.index_name(p.entity_type, alias)
            actions.append(
                {
                    "_op_type": "index",
                    "_index": index,
                    "_id": entity.id,
                    "_source": build_doc(entity, self.server.entities.get),
                }
            )
        if actions:
            self.server.search.bulk(actions)
        for entity, stage, message in failed:  # IndexingFailureRecorder.recordFailure
            trace = f"{message}\n\tat {JAVA_FRAME}"
            self._sql(
                "INSERT INTO search_index_failures (id, jobId, serverId, entityType, entityId, entityFqn, "
                "failureStage, errorMessage, stackTrace, timestamp) VALUES (:id, :job, :s, :type, :eid, "
                ":fqn, :stage, :msg, :trace, :now)",
                id=str(uuid.uuid4()),
                job=self.job_id,
                s=SERVER_ID,
                type=p.entity_type,
                eid=entity.id,
                fqn=entity.fqn,
                stage=stage,
                msg=message,
                trace=trace,
                now=now,
            )
        p.cursor += limit  # currentOffset += currentBatchSize
        p.failed += len(failed)
        p.success += len(chunk) - len(failed)
        done = p.cursor >= p.count or len(chunk) < limit  # its range, or the rows, exhausted
        p.status = "COMPLETED" if done else "PROCESSING"
        self._sql(
            "UPDATE search_index_partition SET status = :st, processingCursor = :at, processedCount = :c, "
            "successCount = :ok, failedCount = :bad, lastUpdateAt = :now, completedAt = :end WHERE id = :id",
            st=p.status,
            at=p.start + p.cursor,
            c=p.success + p.failed,
            ok=p.success,
            bad=p.failed,
            now=now,
            end=now if done else None,
            id=p.id,
        )
        self._sql("UPDATE search_index_job SET updatedAt = :now WHERE id = :id", now=now, id=self.job_id)
        return len(chunk)

    def _read(self, p: _Partition, limit: int) -> list[str]:
        """The partition's next batch: the keyset listAfter(name, id) from the row before it, at
        most `limit` rows (PaginatedEntitiesSource.readNextKeyset)."""
        if limit <= 0:
            return []
        table = entity_type(p.entity_type).table
        where = "WHERE name > :n OR (name = :n AND id > :i) " if p.after else ""
        params = {"n": p.after[0], "i": p.after[1]} if p.after else {}
        with self.server.store.engine.connect() as conn:
            got = [
                (str(n), str(i))
                for n, i in conn.execute(
                    text(f"SELECT name, id FROM {table} {where}ORDER BY name, id LIMIT {int(limit)}"), params
                )
            ]
        if got:
            p.after = got[-1]
        return [i for _, i in got]

    def fail_partition(self, kind: str, index: int, message: str) -> None:
        """failPartition past its retries: the partition FAILED for good, its lastError kept; the job
        goes on with the others."""
        p = next(p for p in self.partitions if p.entity_type == kind and p.index == index)
        p.status = "FAILED"
        self._sql(
            "UPDATE search_index_partition SET status = 'FAILED', lastError = :e, retryCount = 3, "
            "completedAt = :now, lastUpdateAt = :now WHERE id = :id",
            e=message,
            now=now_ms(),
            id=p.id,
        )

    def finish(self) -> str:
        """Every remaining batch, then PROMOTING, the promotions, and the terminal status."""
        while self.step(100):
            pass
        failed = sum(p.failed for p in self.partitions) or any(p.status == "FAILED" for p in self.partitions)
        return self._end("COMPLETED_WITH_ERRORS" if failed else "COMPLETED")

    def fail(self, message: str) -> str:
        """The job dies mid-way (FAILED); 2.0 still promotes each staged index holding documents."""
        for p in self.partitions:
            if p.status != "COMPLETED":
                p.status = "FAILED"
                self._sql(
                    "UPDATE search_index_partition SET status = 'FAILED', lastError = :e WHERE id = :id",
                    e=message,
                    id=p.id,
                )
        return self._end("FAILED", message)

    def abandon(self, minutes: float = 11.0) -> None:
        """The server dies mid-run: nothing promoted, its staged registrations gone (live writes go
        to the index again), the rows left RUNNING as last written `minutes` ago (what
        OrphanJobMonitor sees); the rebuild index stays, without an alias, until
        OrphanedIndexCleaner (30 minutes)."""
        for kind in self.staged:
            self.server.writer.staged.pop(kind, None)
        back = now_ms() - int(minutes * 60_000)
        self._sql("UPDATE search_index_job SET updatedAt = :t WHERE id = :id", t=back, id=self.job_id)
        self._sql(
            "UPDATE search_index_partition SET lastUpdateAt = :t WHERE jobId = :id", t=back, id=self.job_id
        )

    def _end(self, status: str, error: str | None = None) -> str:
        self.status = "PROMOTING"
        self._update_job()
        for kind in self.entity_types:  # per type, once its partitions are all done
            staged = self.staged.get(kind)
            if staged is not None:
                mine = [p for p in self.partitions if p.entity_type == kind]
                success = all(p.failed == 0 and p.status == "COMPLETED" for p in mine)
                self._promote(kind, staged, success=success)
                self.server.writer.staged.pop(kind, None)  # unregisterStagedIndex
        self.status = status
        self._update_job(completed=now_ms(), error=error)
        return status

    def _promote(self, kind: str, staged: str, *, success: bool) -> None:
        """DefaultRecreateHandler.promote: promote unless it failed and the staged index is empty."""
        search, alias = self.server.search, self.server.cluster_alias
        client, canonical = search.client, indices.index_name(kind, alias)
        search.refresh(staged)
        if not success and search.count(staged) == 0:
            search.delete_index(staged)
            return
        live = {"refresh_interval": "1s"}  # applyLiveServingSettings
        if search.flavor == "opensearch":
            client.indices.put_settings(index=staged, body=live)
        else:
            client.indices.put_settings(index=staged, settings=live)
        found = client.indices.get_alias(index=canonical)
        old = dict(found.body if hasattr(found, "body") else found)
        canonical_is_alias = canonical not in old
        wanted = set(indices.aliases(kind, alias))
        wanted |= {a for entry in old.values() for a in entry.get("aliases", {})}
        moved = sorted(wanted - {canonical})
        actions: list[dict[str, Any]] = [
            {"remove": {"index": i, "alias": a}} for i in old for a in moved if a in old[i].get("aliases", {})
        ]
        actions += [{"add": {"index": staged, "alias": a}} for a in moved]
        if canonical_is_alias:  # the atomic swap, canonical name included
            actions += [{"remove": {"index": i, "alias": canonical}} for i in old]
            actions.append({"add": {"index": staged, "alias": canonical}})
        self._aliases(actions)
        for index in old:  # the old concrete indices (the canonical one on a first reindex)
            search.delete_index(index)
        if not canonical_is_alias:
            self._aliases([{"add": {"index": staged, "alias": canonical}}])

    def _aliases(self, actions: list[dict[str, Any]]) -> None:
        if not actions:
            return
        if self.server.search.flavor == "opensearch":
            self.server.search.client.indices.update_aliases(body={"actions": actions})
        else:
            self.server.search.client.indices.update_aliases(actions=actions)
