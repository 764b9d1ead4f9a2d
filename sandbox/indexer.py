"""What the MAE consumer does with one MCL (DataHub's UpdateIndicesService, reduced)."""

# Writes are queued and sent in bulk by `flush()`, as DataHub's ESBulkProcessor does; a
# failed bulk item is counted and dropped (logged and skipped), never retried.

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sandbox.edges import Edge, extract_edges, relationship_types
from sandbox.mcl import UPDATE_CHANGE_TYPES, ChangeLog
from sandbox.naming import (
    entity_doc_id,
    entity_doc_id_v3,
    entity_index,
    entity_index_v3,
    graph_index,
    system_metadata_doc_id,
    system_metadata_index,
)
from sandbox.projection import search_document
from sandbox.registry import entity_facts
from sandbox.search import (
    ENTITY_MAPPINGS,
    GRAPH_MAPPINGS,
    SYSTEM_METADATA_MAPPINGS,
    V3_MAPPINGS,
    SearchStore,
)
from sandbox.versions import withheld as release_withheld

log = logging.getLogger(__name__)
SYSTEM_CREATED_CHANGE_TYPES = frozenset({"CREATE", "CREATE_ENTITY", "UPSERT"})


@dataclass(frozen=True)
class Applied:
    """What applying one MCL queued (for stats and tests)."""

    entity_doc: str  # "upserted", "deleted", "nulled", "unchanged", "skipped", "none"
    edges_written: int = 0
    edges_deleted: int = 0


def system_metadata_doc(urn: str, aspect: str, sm: dict[str, Any]) -> dict[str, Any]:
    """The `system_metadata_service_v1` doc an aspect's MCL leaves (ElasticSearchSystemMetadataService)."""
    return {
        "urn": urn,
        "aspect": aspect,
        "runId": sm.get("runId"),
        "lastUpdated": sm.get("lastObserved"),
        "registryName": sm.get("registryName"),
        "registryVersion": sm.get("registryVersion"),
        "removed": False,
    }


class IndexUpdater:
    """Applies MCLs to the entity indices, system_metadata_service_v1 and graph_service_v1."""

    def __init__(self, store: SearchStore, index_prefix: str = "") -> None:
        self.store = store
        self.prefix = index_prefix
        self.facts = entity_facts()
        self.system_metadata_index = system_metadata_index(index_prefix)
        self.graph_index = graph_index(index_prefix)
        self._pending: list[dict[str, Any]] = []
        self._last_op: dict[tuple[str, str], str] = {}  # (index, id) -> last queued op type
        self.failed_writes = 0
        # live index -> the other indices each of its document writes also goes to (the dual
        # write of a zero-downtime reindex to its next index: sandbox/zdr.py)
        self.dual_writes: dict[str, list[str]] = {}
        # DataHub's V3 index written beside V2 (entityIndex.v3.enabled): entity type -> its search
        # group (the entity type itself when it has none); None: V2 only. `v3_skip` drops the V3
        # write of the urns it names (a lost write to one of the two).
        self.v3: dict[str, str] | None = None
        self.v3_skip: set[str] = set()
        # the DataHub release whose rules the documents are written by (None: the newest, the
        # projection's own); an older one leaves out the fields its wheel does not annotate
        self.release: str | None = None
        # Templates, so that an index auto-created by a write (after someone deleted it)
        # still gets the sandbox's mappings. Prefixed ones win over the unprefixed pattern.
        tag, priority = (f"{index_prefix}-", 20) if index_prefix else ("", 10)
        for name, pattern, mappings in (
            ("entity", self.entity_index("*"), ENTITY_MAPPINGS),
            ("system-metadata", self.system_metadata_index, SYSTEM_METADATA_MAPPINGS),
            ("graph", self.graph_index, GRAPH_MAPPINGS),
        ):
            store.put_template(f"sandbox-{tag}{name}", [pattern], mappings, priority)

    def entity_index(self, entity_type: str) -> str:
        """Index holding docs of this entity type."""
        return entity_index(entity_type, self.prefix)

    def apply(self, change: ChangeLog, *, write_entity_doc: bool = True, flush: bool = True) -> Applied:
        """Apply one MCL. `write_entity_doc=False` is DataHub's failed-and-skipped ES write.

        With `flush=False` the writes stay queued until `flush()`.
        """
        if change.change_type in UPDATE_CHANGE_TYPES:
            applied = self._update(change, write_entity_doc)
        elif change.change_type == "DELETE":
            applied = self._delete(change, write_entity_doc)
        else:
            log.warning("ignoring MCL with change type %s for %s", change.change_type, change.urn)
            applied = Applied("none")
        if flush:
            self.flush()
        return applied

    def flush(self) -> int:
        """Send the queued writes in bulk; returns how many failed (they are dropped)."""
        if not self._pending:
            return 0
        pending, self._pending = self._pending, []
        self._last_op.clear()
        failed = self.store.bulk(pending)
        for item in failed:
            log.error("index write failed and skipped: %s", item)
        self.failed_writes += len(failed)
        return len(failed)

    # ------------------------------------------------------------ queued writes

    def _upsert(self, index: str, mappings: dict[str, Any], doc_id: str, doc: dict[str, Any]) -> None:
        self.store.ensure_index(index, mappings)
        for target in (index, *self.dual_writes.get(index, ())):
            self._pending.append(
                {
                    "_op_type": "update",
                    "_index": target,
                    "_id": doc_id,
                    "doc": doc,
                    "doc_as_upsert": True,
                    "retry_on_conflict": 3,
                }
            )
        self._last_op[(index, doc_id)] = "update"

    def _delete_doc(self, index: str, doc_id: str) -> None:
        for target in (index, *self.dual_writes.get(index, ())):
            self._pending.append({"_op_type": "delete", "_index": target, "_id": doc_id})
        self._last_op[(index, doc_id)] = "delete"

    def _delete_matching(self, index: str, query: dict[str, Any]) -> int:
        self.flush()  # the query must see what is still queued
        return self.store.delete_by_query(index, query)

    # ------------------------------------------------------------ upsert / restate

    def _update(self, change: ChangeLog, write_entity_doc: bool) -> Applied:
        if not change.aspect_name or change.aspect is None:
            log.error("MCL without aspect for %s: skipped", change.urn)
            return Applied("none")
        timeseries = self.facts.is_timeseries(change.aspect_name)
        if not timeseries:
            self._insert_system_metadata(change)
        if timeseries:
            entity_doc = "none"  # timeseries indices are not part of the sandbox
        elif write_entity_doc:
            entity_doc = self._upsert_entity_doc(change)
        else:
            entity_doc = "skipped"
        written, deleted = self._update_graph(change)
        return Applied(entity_doc, written, deleted)

    def _document(
        self, urn: str, aspect_name: str, aspect: dict[str, Any] | None, *, for_delete: bool = False
    ) -> dict[str, Any] | None:
        """The partial doc of one aspect, as the release indexes it."""
        doc = search_document(urn, aspect_name, aspect, for_delete=for_delete)
        dropped = release_withheld(self.release).get(aspect_name)
        if doc is not None and dropped:
            doc = {k: v for k, v in doc.items() if k not in dropped}
        return doc

    def _upsert_entity_doc(self, change: ChangeLog) -> str:
        doc = self._document(change.urn, change.aspect_name, change.aspect)
        if doc is None:
            return "none"
        if (
            change.change_type in SYSTEM_CREATED_CHANGE_TYPES
            and change.created_time is not None
            and self.facts.is_key_aspect(change.entity_type, change.aspect_name)
        ):
            doc["systemCreated"] = change.created_time
        if not change.force_indexing and change.previous_aspect is not None:
            previous = self._document(change.urn, change.aspect_name, change.previous_aspect)
            if previous == doc:
                return "unchanged"  # search diff mode: no-op update skipped
        self._upsert(self.entity_index(change.entity_type), ENTITY_MAPPINGS, entity_doc_id(change.urn), doc)
        self._v3_write(change, doc)
        return "upserted"

    def _insert_system_metadata(self, change: ChangeLog) -> None:
        sm = change.system_metadata
        if sm is None:
            return
        self._upsert(
            self.system_metadata_index,
            SYSTEM_METADATA_MAPPINGS,
            system_metadata_doc_id(change.urn, change.aspect_name),
            system_metadata_doc(change.urn, change.aspect_name, sm),
        )
        if change.aspect_name == "status":
            self._set_doc_status(
                change.urn, change.entity_type, bool((change.aspect or {}).get("removed", False))
            )

    def _set_doc_status(self, urn: str, entity_type: str, removed: bool) -> None:
        """Mark every system-metadata doc of the urn removed (or not), like setDocStatus."""
        index = self.system_metadata_index
        aspects = self.facts.entity_aspects.get(entity_type, frozenset())
        candidates = {system_metadata_doc_id(urn, aspect) for aspect in aspects}
        queued = {d for d in candidates if (index, d) in self._last_op}
        stored = {
            d for d, source in self.store.mget(index, candidates - queued).items() if source.get("urn") == urn
        }
        for doc_id in sorted(stored | {d for d in queued if self._last_op[(index, d)] == "update"}):
            self._upsert(index, SYSTEM_METADATA_MAPPINGS, doc_id, {"removed": removed})

    def _edges(
        self, change: ChangeLog, aspect: dict[str, Any] | None, system_metadata: dict[str, Any] | None
    ) -> dict[str, Edge]:
        if aspect is None:
            return {}
        edges = extract_edges(
            change.urn,
            change.aspect_name,
            aspect,
            system_metadata=system_metadata,
            created_actor=change.created_actor,
        )
        return {edge.doc_id: edge for edge in edges}

    def _update_graph(self, change: ChangeLog) -> tuple[int, int]:
        types = relationship_types(change.aspect_name)
        if not types:
            return 0, 0
        new = self._edges(change, change.aspect, change.system_metadata)
        if change.force_indexing:
            # Non-diff mode: drop the urn's outgoing edges of these types, write the new ones.
            deleted = self._delete_matching(self.graph_index, self._outgoing(change.urn, types))
            for doc_id, edge in new.items():
                self._upsert(self.graph_index, GRAPH_MAPPINGS, doc_id, edge.to_doc())
            return len(new), deleted
        old = self._edges(change, change.previous_aspect, change.previous_system_metadata)
        gone = old.keys() - new.keys()
        for doc_id in gone:
            self._delete_doc(self.graph_index, doc_id)
        for doc_id, edge in new.items():
            # An edge present before keeps its createdOn/createdActor (GraphIndexUtils.mergeEdges).
            self._upsert(
                self.graph_index, GRAPH_MAPPINGS, doc_id, edge.to_doc(keep_created=doc_id not in old)
            )
        return len(new), len(gone)

    @staticmethod
    def _outgoing(urn: str, types: list[str]) -> dict[str, Any]:
        return {"bool": {"filter": [{"term": {"source.urn": urn}}, {"terms": {"relationshipType": types}}]}}

    # ------------------------------------------------------------ delete

    def _delete(self, change: ChangeLog, write_entity_doc: bool) -> Applied:
        if not change.aspect_name or change.previous_aspect is None:
            log.error("DELETE MCL without previous aspect for %s: skipped", change.urn)
            return Applied("none")
        if self.facts.is_timeseries(change.aspect_name):
            return Applied("none")
        is_key = self.facts.is_key_aspect(change.entity_type, change.aspect_name)
        if is_key:  # the entity is gone: all its system metadata, all edges from or to it
            self._delete_matching(self.system_metadata_index, {"term": {"urn": change.urn}})
            deleted = self._delete_matching(
                self.graph_index,
                {
                    "bool": {
                        "should": [
                            {"term": {"source.urn": change.urn}},
                            {"term": {"destination.urn": change.urn}},
                        ],
                        "minimum_should_match": 1,
                    }
                },
            )
        else:
            self._delete_doc(
                self.system_metadata_index, system_metadata_doc_id(change.urn, change.aspect_name)
            )
            types = relationship_types(change.aspect_name)
            deleted = (
                self._delete_matching(self.graph_index, self._outgoing(change.urn, types)) if types else 0
            )
        if not write_entity_doc:
            return Applied("skipped", 0, deleted)
        index = self.entity_index(change.entity_type)
        if is_key:
            self._delete_doc(index, entity_doc_id(change.urn))
            self._v3_write(change, None)
            return Applied("deleted", 0, deleted)
        doc = self._document(change.urn, change.aspect_name, change.previous_aspect, for_delete=True)
        if doc is None:
            return Applied("none", 0, deleted)
        self._upsert(index, ENTITY_MAPPINGS, entity_doc_id(change.urn), doc)
        self._v3_write(change, doc)
        return Applied("nulled", 0, deleted)

    # ------------------------------------------------------------ V3

    def _v3_write(self, change: ChangeLog, doc: dict[str, Any] | None) -> None:
        """The same document into the V3 index: SHA-256 id, `_entityType` (None: delete it)."""
        if self.v3 is None or change.urn in self.v3_skip:
            return
        index = entity_index_v3(self.v3.get(change.entity_type, change.entity_type), self.prefix)
        if doc is None:
            self._delete_doc(index, entity_doc_id_v3(change.urn))
            return
        self._upsert(
            index, V3_MAPPINGS, entity_doc_id_v3(change.urn), {**doc, "_entityType": change.entity_type}
        )
