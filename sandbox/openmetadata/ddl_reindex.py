"""OpenMetadata's distributed-reindex tables (1.12 and later), for MariaDB and PostgreSQL.

Transcribed from bootstrap/sql/migrations/native/1.12.0/{mysql,postgres}/schemaChanges.sql (the
release's final text: `stagedIndexMapping` on the job, `claimableAt` on partitions, and
`search_index_failures` keyed by `serverId`; an intermediate draft named it `runId`).
`search_reindex_lock` and `search_index_server_stats` are left out: the sandbox's reindex runs
on one "server" and nothing reads them. A sandbox made `with_reindex_tables=False` is an
OpenMetadata older than 1.12.
"""

from __future__ import annotations


def _job(json: str) -> str:
    return f"""CREATE TABLE IF NOT EXISTS search_index_job (
    id VARCHAR(36) NOT NULL,
    status VARCHAR(32) NOT NULL,
    jobConfiguration {json} NOT NULL,
    targetIndexPrefix VARCHAR(255),
    stagedIndexMapping {json},
    totalRecords BIGINT NOT NULL DEFAULT 0,
    processedRecords BIGINT NOT NULL DEFAULT 0,
    successRecords BIGINT NOT NULL DEFAULT 0,
    failedRecords BIGINT NOT NULL DEFAULT 0,
    stats {json},
    createdBy VARCHAR(256) NOT NULL,
    createdAt BIGINT NOT NULL,
    startedAt BIGINT,
    completedAt BIGINT,
    updatedAt BIGINT NOT NULL,
    errorMessage TEXT,
    registrationDeadline BIGINT,
    registeredServerCount INT,
    PRIMARY KEY (id)"""


_PARTITION = """CREATE TABLE IF NOT EXISTS search_index_partition (
    id VARCHAR(36) NOT NULL,
    jobId VARCHAR(36) NOT NULL,
    entityType VARCHAR(128) NOT NULL,
    partitionIndex INT NOT NULL,
    rangeStart BIGINT NOT NULL,
    rangeEnd BIGINT NOT NULL,
    estimatedCount BIGINT NOT NULL,
    workUnits BIGINT NOT NULL,
    priority INT NOT NULL DEFAULT 50,
    status VARCHAR(32) NOT NULL DEFAULT 'PENDING',
    processingCursor BIGINT NOT NULL DEFAULT 0,
    processedCount BIGINT NOT NULL DEFAULT 0,
    successCount BIGINT NOT NULL DEFAULT 0,
    failedCount BIGINT NOT NULL DEFAULT 0,
    assignedServer VARCHAR(255),
    claimedAt BIGINT,
    startedAt BIGINT,
    completedAt BIGINT,
    lastUpdateAt BIGINT,
    lastError TEXT,
    retryCount INT NOT NULL DEFAULT 0,
    claimableAt BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (id),"""
_PARTITION_FK = (
    "CONSTRAINT fk_partition_job FOREIGN KEY (jobId) REFERENCES search_index_job(id) ON DELETE CASCADE"
)


def _failures(text: str) -> str:
    return f"""CREATE TABLE IF NOT EXISTS search_index_failures (
    id VARCHAR(36) NOT NULL,
    jobId VARCHAR(36) NOT NULL,
    serverId VARCHAR(256) NOT NULL,
    entityType VARCHAR(256) NOT NULL,
    entityId VARCHAR(36),
    entityFqn VARCHAR(1024),
    failureStage VARCHAR(32) NOT NULL,
    errorMessage {text},
    stackTrace {text},
    timestamp BIGINT NOT NULL,
    PRIMARY KEY (id)"""


MYSQL = (
    _job("JSON")
    + """,
    INDEX idx_search_index_job_status (status),
    INDEX idx_search_index_job_created (createdAt DESC)
)""",
    _PARTITION
    + f"""
    UNIQUE KEY uk_partition_job_entity_idx (jobId, entityType, partitionIndex),
    INDEX idx_partition_job (jobId),
    INDEX idx_partition_status_priority (status, priority DESC),
    INDEX idx_partition_claimed (claimedAt),
    INDEX idx_partition_assigned_server (jobId, assignedServer),
    INDEX idx_partition_claimable (jobId, status, claimableAt),
    {_PARTITION_FK}
)""",
    _failures("LONGTEXT")
    + """,
    INDEX idx_search_index_failures_job_id (jobId),
    INDEX idx_search_index_failures_server_id (serverId),
    INDEX idx_search_index_failures_entity_type (entityType),
    INDEX idx_search_index_failures_timestamp (timestamp)
)""",
)

POSTGRES = (
    _job("JSONB") + "\n)",
    "CREATE INDEX IF NOT EXISTS idx_search_index_job_status ON search_index_job(status)",
    "CREATE INDEX IF NOT EXISTS idx_search_index_job_created ON search_index_job(createdAt DESC)",
    _PARTITION
    + f"""
    UNIQUE (jobId, entityType, partitionIndex),
    {_PARTITION_FK}
)""",
    "CREATE INDEX IF NOT EXISTS idx_partition_job ON search_index_partition(jobId)",
    "CREATE INDEX IF NOT EXISTS idx_partition_status_priority "
    "ON search_index_partition(status, priority DESC)",
    "CREATE INDEX IF NOT EXISTS idx_partition_claimable "
    "ON search_index_partition(jobId, status, claimableAt)",
    _failures("TEXT") + "\n)",
    "CREATE INDEX IF NOT EXISTS idx_search_index_failures_job_id ON search_index_failures(jobId)",
    "CREATE INDEX IF NOT EXISTS idx_search_index_failures_entity_type ON search_index_failures(entityType)",
    "CREATE INDEX IF NOT EXISTS idx_search_index_failures_timestamp ON search_index_failures(timestamp)",
)

# dropped children first (the partitions' foreign key)
TABLES = ("search_index_failures", "search_index_partition", "search_index_job")
