"""DataHub 1.7's zero-downtime reindex of an entity index, as its system-update runs it.

DataHub (datahub-upgrade: BuildIndicesIncrementalStep, IncrementalReindexCatchUpStep,
IncrementalReindexPreAliasSwapLagStep + MclConsumerLagUtils, IncrementalReindexAliasSwapStep;
the per-index state of IncrementalReindexState) rebuilds an index without blocking writes:

1. copy: a "next" index with a versioned backing name `<alias>_<version>_<epoch ms>` is created
   and filled by an asynchronous `_reindex` from the live name (T0 = `reindexStartTime`); the
   per-index state (`<alias>.nextIndexName`, `.reindexStartTime`, `.status` IN_PROGRESS, ...) is
   persisted as the `dataHubUpgradeResult` aspect of
   `urn:li:dataHubUpgrade:BuildIndicesIncremental_<version>`.
2. dual write: the MAE consumer's poller reads that state and from then on writes every entity
   document to the live index *and* the next one (`dualWriteStartTime`). Writes consumed between
   T0 and that moment went to the live index only; the `_reindex` snapshot may miss them.
3. catch-up: the version-0 rows of the entity type with `createdon` in [T0, dualWriteStartTime]
   are re-emitted as RESTATE MCLs (read from SQL, urn-paged); the dual-writing consumer applies
   them to both indices.
4. lag: wait until the MAE group's median lag on the two MCL topics is 0.
   (DataHub's newest code swaps right after the copy and catches up after the swap, with a
   rollback dual write to the old index: call the phases in that order; the sandbox does not
   keep writing the old index after a swap.)
5. swap: document counts compared, then one `_aliases` request moves the alias to the next index
   (a live name that is a concrete index is removed in the same request); the state says
   COMPLETED and the consumer stops dual-writing.

`stop_after` is the fault knob: the run stops after the named phase, leaving the next index
present and the alias not swapped (a system-update killed or still running). `skip_catch_up`
is a broken catch-up (the next index is swapped in without the writes of the T0 gap).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, text

from sandbox.naming import ASPECT_TABLE, MAE_CONSUMER_GROUP, MCL_TOPICS, SYSTEM_ACTOR, entity_index
from sandbox.search import ENTITY_MAPPINGS, SearchStore
from sandbox.topics import committed_offsets, end_offsets

if TYPE_CHECKING:
    from sandbox.indexer import IndexUpdater
    from sandbox.writer import GmsWriter

PHASES = ("copy", "dual_write", "catch_up", "lag", "swap")
UPGRADE_ASPECT = "dataHubUpgradeResult"


def upgrade_urn(version: str) -> str:
    """The urn DataHub keeps phase 1's per-index state under."""
    return f"urn:li:dataHubUpgrade:BuildIndicesIncremental_{version}"


def next_index_name(alias: str, version: str, epoch_ms: int) -> str:
    """A versioned backing name: `datasetindex_v2_1_7_0-1_1767225600000`."""
    return f"{alias}_{version.replace('.', '_').lower()}_{epoch_ms}"


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class ZeroDowntimeReindex:
    """One entity index's zero-downtime reindex against the sandbox's store, index and consumer."""

    engine: Engine
    search: SearchStore
    updater: IndexUpdater  # the running consumer's (it dual-writes while the state says so)
    writer: GmsWriter
    entity_type: str
    index_prefix: str = ""
    version: str = "1.7.0-1"
    kafka: str = ""
    group: str = MAE_CONSUMER_GROUP
    topics: tuple[str, ...] = MCL_TOPICS
    live: str = ""  # another live name than the type's V2 index (a V3 index): its own mappings copied
    alias: str = field(init=False)
    next_index: str = ""
    old_backing: str | None = None
    reindex_start: int = 0
    dual_write_start: int = 0
    task_id: str = ""
    restated: int = 0
    phases: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.alias = self.live or entity_index(self.entity_type, self.index_prefix)

    # ------------------------------------------------------------------ the run

    def run(
        self,
        *,
        stop_after: str | None = None,
        skip_catch_up: bool = False,
        gap: float = 0.0,
        lag_timeout: float = 60.0,
    ) -> ZeroDowntimeReindex:
        """Every phase in order; `gap` seconds pass between T0 and the consumer's first dual write
        (its poller's interval: writes then go to the live index only)."""
        if stop_after is not None and stop_after not in PHASES:
            raise ValueError(f"stop_after must be one of {PHASES}")
        steps = (
            ("copy", self.copy),
            ("dual_write", lambda: self.dual_write(gap)),
            ("catch_up", lambda: self.catch_up(skip=skip_catch_up)),
            ("lag", lambda: self.wait_for_lag(lag_timeout)),
            ("swap", self.swap),
        )
        for name, step in steps:
            step()
            self.phases.append(name)
            if name == stop_after:
                break
        return self

    def copy(self) -> None:
        self.updater.flush()
        backing = self._backing()
        self.old_backing = backing[0] if len(backing) == 1 else None
        self.reindex_start = _now_ms()
        self.next_index = next_index_name(self.alias, self.version, self.reindex_start)
        settings = {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}
        mappings = ENTITY_MAPPINGS
        if self.live:  # the live index's own mappings (DataHub builds the next one from its own)
            found = self.search.client.indices.get_mapping(index=self.alias)
            mappings = next(iter(dict(found).values()))["mappings"]
        self.search.client.indices.create(
            index=self.next_index, **self._body(settings=settings, mappings=mappings)
        )
        source_docs = self.search.count(self.alias)
        copy = {"source": {"index": self.alias}, "dest": {"index": self.next_index}}
        if self.search.flavor == "opensearch":
            started = self.search.client.reindex(body=copy, params={"wait_for_completion": "false"})
        else:
            started = self.search.client.reindex(**copy, wait_for_completion=False)
        self.task_id = str(started["task"])
        self._persist(
            "IN_PROGRESS", sourceDocCount=str(source_docs), taskId=self.task_id, requiresDataBackfill="true"
        )
        self._wait_task()
        self._put_settings({"refresh_interval": "1s"})
        self._persist("IN_PROGRESS", reindexCompleteTime=str(_now_ms()))

    def dual_write(self, gap: float = 0.0) -> None:
        """The consumer's poller picks the state up: from now on it writes both indices."""
        if gap:
            time.sleep(gap)
        self.updater.dual_writes[self.alias] = [self.next_index]
        self.dual_write_start = _now_ms()
        self._persist("IN_PROGRESS", dualWriteStartTime=str(self.dual_write_start))

    def catch_up(self, *, skip: bool = False) -> None:
        """RESTATE MCLs for the entity type's rows written in [T0, dualWriteStartTime]."""
        if skip:  # a catch-up that reports success having written nothing
            self._persist_catch_up("COMPLETED")
            return
        low = datetime.fromtimestamp(self.reindex_start / 1000, UTC).replace(tzinfo=None)
        high = datetime.fromtimestamp(self.dual_write_start / 1000, UTC).replace(tzinfo=None)
        with self.engine.connect() as conn:
            rows = conn.execute(
                text(
                    f"SELECT urn, aspect FROM {ASPECT_TABLE} WHERE version = 0 AND urn LIKE :like "
                    "AND createdon >= :low AND createdon <= :high ORDER BY urn, aspect"
                ),
                {"like": f"urn:li:{self.entity_type}:%", "low": low, "high": high},
            ).all()
        for urn, aspect in rows:
            self.writer.restate(urn, aspect, actor=SYSTEM_ACTOR, wait=False)
        self.writer.flush()
        self.restated = len(rows)
        self._persist_catch_up("COMPLETED")

    def lag(self) -> int:
        """MclConsumerLagUtils.combinedMedianLag: per topic, median(end) - median(committed)."""
        kafka = self.kafka or self.writer.endpoints.kafka
        committed = committed_offsets(kafka, self.group, self.topics)
        ends = end_offsets(kafka, self.topics)
        total = 0
        for topic in self.topics:
            mine = {tp: off for tp, off in committed.items() if tp[0] == topic and off >= 0}
            if not mine:
                continue
            consumed = statistics.median(mine.values())
            end = statistics.median(ends.get(tp, 0) for tp in mine)
            total += max(0, int(end) - int(consumed))
        return total

    def wait_for_lag(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.lag() > 0:
            if time.monotonic() > deadline:
                raise TimeoutError(f"MAE group {self.group} still lagging after {timeout}s")
            time.sleep(0.5)

    def swap(self) -> None:
        self.updater.flush()
        self.search.refresh(self.alias)
        self.search.refresh(self.next_index)
        current, following = self.search.count(self.alias), self.search.count(self.next_index)
        if current != following:
            raise RuntimeError(f"doc count mismatch {self.alias}={current} {self.next_index}={following}")
        backing = self._backing()
        if backing == [self.alias]:  # a concrete index under the live name: removed in the swap
            actions: list[dict[str, Any]] = [{"remove_index": {"index": self.alias}}]
        else:
            actions = [{"remove": {"index": b, "alias": self.alias}} for b in backing]
        actions.append({"add": {"index": self.next_index, "alias": self.alias}})
        if self.search.flavor == "opensearch":
            self.search.client.indices.update_aliases(body={"actions": actions})
        else:
            self.search.client.indices.update_aliases(actions=actions)
        self.updater.dual_writes.pop(self.alias, None)
        self._persist("COMPLETED")

    # ------------------------------------------------------------------ helpers

    def _backing(self) -> list[str]:
        """The concrete indices the live name resolves to (itself when it is an index)."""
        found = self.search.client.indices.get(index=self.alias)
        names = found.keys() if hasattr(found, "keys") else found.body.keys()
        return sorted(names)

    def _body(self, **parts: Any) -> dict[str, Any]:
        return {"body": parts} if self.search.flavor == "opensearch" else parts

    def _put_settings(self, settings: dict[str, Any]) -> None:
        if self.search.flavor == "opensearch":
            self.search.client.indices.put_settings(index=self.next_index, body={"index": settings})
        else:
            self.search.client.indices.put_settings(index=self.next_index, settings={"index": settings})

    def _wait_task(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            task = self.search.client.tasks.get(task_id=self.task_id)
            if task.get("completed"):
                failures = (task.get("response") or {}).get("failures") or []
                if failures or task.get("error"):
                    raise RuntimeError(f"_reindex {self.task_id} failed: {failures or task.get('error')}")
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"_reindex {self.task_id} not done after {timeout}s")
            time.sleep(0.2)

    def _persist_catch_up(self, status: str) -> None:
        """The catch-up step's own state: `<alias>.catchUpStatus` on IncrementalReindexCatchUp_<version>."""
        urn = f"urn:li:dataHubUpgrade:IncrementalReindexCatchUp_{self.version}"
        value = self.writer.read_aspect(urn, UPGRADE_ASPECT) or {"result": {}}
        value.setdefault("result", {})[f"{self.alias}.catchUpStatus"] = status
        value["state"], value["timestampMs"] = "SUCCEEDED", _now_ms()
        self.writer.write(urn, UPGRADE_ASPECT, value, actor=SYSTEM_ACTOR)

    def _persist(self, status: str, **props: str) -> None:
        """Merge this index's state into the upgrade result (written like any aspect, with its MCL)."""
        urn = upgrade_urn(self.version)
        value = self.writer.read_aspect(urn, UPGRADE_ASPECT) or {"result": {}}
        state = {
            "nextIndexName": self.next_index,
            "reindexStartTime": str(self.reindex_start),
            "status": status,
            **props,
        }
        if self.old_backing:
            state["oldBackingIndexName"] = self.old_backing
        value.setdefault("result", {}).update({f"{self.alias}.{k}": v for k, v in state.items()})
        value["state"] = "SUCCEEDED" if status == "COMPLETED" else "IN_PROGRESS"
        value["timestampMs"] = _now_ms()
        self.writer.write(urn, UPGRADE_ASPECT, value, actor=SYSTEM_ACTOR)
