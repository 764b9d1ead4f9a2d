"""The search side of the OM-like server: what SearchRepository does to the indices.

createEntity indexes the whole doc; updateEntity writes it as a partial update (doc_as_upsert);
a soft delete or restore runs SOFT_DELETE_RESTORE_SCRIPT `ctx._source.put('deleted', '%s')` on
the entity's doc and, by query on its child aliases, on its children's docs: the STRING 'true'
or 'false'. This Elasticsearch 9 has no painless, so the script is a partial update writing the
same string. A hard delete removes the doc and, by query, its children's docs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sandbox.openmetadata import indices
from sandbox.openmetadata.docs import build_doc
from sandbox.openmetadata.entities import OmEntity
from sandbox.search import SearchStore


class OmSearchWriter:
    """Writes OM's documents into one cluster under one cluster alias."""

    def __init__(
        self,
        search: SearchStore,
        cluster_alias: str = "",
        lookup: Callable[[str], OmEntity | None] | None = None,
    ) -> None:
        self.search = search
        self.cluster_alias = cluster_alias
        self.lookup = lookup  # an entity by id: the parent a doc inherits owners and domains from
        # entity type -> the staged `_rebuild_` index a running reindex builds (2.0's
        # SearchRepository.registerStagedIndex): live writes go there, resolveWriteIndex (PR 27651)
        self.staged: dict[str, str] = {}
        self.release: str | None = None  # the OM release whose documents it writes (None: newest)

    def index_of(self, entity: OmEntity) -> str:
        """SearchRepository.resolveWriteIndex: the staged index during a reindex, else the index."""
        return self.staged.get(entity.type) or indices.index_name(entity.type, self.cluster_alias)

    def create(self, entities: Iterable[OmEntity]) -> int:
        """Index whole docs in bulk; returns the number written (raises on any failure)."""
        actions = [
            {
                "_op_type": "index",
                "_index": self.index_of(e),
                "_id": e.id,
                "_source": build_doc(e, self.lookup, self.release),
            }
            for e in entities
        ]
        if not actions:
            return 0
        failed = self.search.bulk(actions)
        if failed:
            raise RuntimeError(f"{len(failed)} of {len(actions)} docs failed: {failed[0]}")
        return len(actions)

    def update(self, entity: OmEntity) -> None:
        """updateEntity: the new doc as a partial update (fields it lacks stay in the index)."""
        self.search.upsert(self.index_of(entity), entity.id, build_doc(entity, self.lookup, self.release))

    def set_deleted(self, entity: OmEntity, deleted: bool, *, children: bool = True) -> None:
        """softDeleteOrRestoreEntity (+ its children): `deleted` written as 'true'/'false'."""
        flag = "true" if deleted else "false"
        self._partial(self.index_of(entity), entity.id, {"deleted": flag})
        if children:
            self._update_children(entity, {"deleted": flag})

    def delete(self, entity: OmEntity) -> None:
        """deleteEntityIndex: the doc, then its children's docs by query."""
        self.search.delete(self.index_of(entity), entity.id)
        targets = self._child_targets(entity)
        if targets:
            for index, doc_id in self._matching(targets, entity):
                self.search.delete(index, doc_id)

    def _partial(self, index: str, doc_id: str, partial: dict[str, Any]) -> None:
        if self.search.flavor == "opensearch":
            self.search.client.update(
                index=index, id=doc_id, body={"doc": partial}, params={"retry_on_conflict": 3}
            )
        else:
            self.search.client.update(index=index, id=doc_id, doc=partial, retry_on_conflict=3)

    def _child_targets(self, entity: OmEntity) -> str:
        existing = [
            a for a in indices.child_aliases(entity.type, self.cluster_alias) if self.search.exists(a)
        ]
        return ",".join(existing)

    def _matching(self, targets: str, entity: OmEntity) -> list[tuple[str, str]]:
        self.search.client.indices.refresh(index=targets)
        query = {"query": {"term": {entity.et.parent_field: entity.id}}}
        return [
            (hit["_index"], hit["_id"])
            for hit in self.search._helpers.scan(self.search.client, index=targets, query=query, size=500)
        ]

    def _update_children(self, entity: OmEntity, partial: dict[str, Any]) -> None:
        targets = self._child_targets(entity)
        if not targets:
            return
        actions = [
            {"_op_type": "update", "_index": index, "_id": doc_id, "doc": partial}
            for index, doc_id in self._matching(targets, entity)
        ]
        if actions:
            self.search.bulk(actions)

    # ------------------------------------------------------------ snapshots

    def snapshot(self) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        """Every doc of every OM index, by index name (an in-memory 'snapshot')."""
        return {
            indices.index_name(et, self.cluster_alias): list(
                self.search.scan(indices.index_name(et, self.cluster_alias))
            )
            for et in indices.ENTITY_TYPES.values()
        }

    def restore(self, snapshot: dict[str, list[tuple[str, dict[str, Any]]]]) -> int:
        """Replace every OM index by its snapshot's docs (as a snapshot restore does)."""
        indices.delete_indices(self.search, self.cluster_alias)
        indices.create_indices(self.search, self.cluster_alias)
        written = 0
        for index, docs in snapshot.items():
            if docs:
                written += self.search.bulk_put(index, docs)
        indices.refresh_all(self.search, self.cluster_alias)
        return written
