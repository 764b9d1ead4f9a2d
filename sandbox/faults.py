"""Faults on the stores themselves: old-snapshot restores, rows or docs removed behind backs."""

# The writer's `drop_mcl` and the consumer's knobs are the other faults.

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, text

from sandbox.naming import ASPECT_TABLE, entity_doc_id, entity_index, entity_type_of
from sandbox.search import INDEX_SETTINGS, as_store


@dataclass(frozen=True)
class IndexSnapshot:
    """A copy of every doc of one index (and its mappings) at one moment."""

    index: str
    taken_at: datetime
    mappings: dict[str, Any]
    docs: tuple[tuple[str, dict[str, Any]], ...]

    def __len__(self) -> int:
        return len(self.docs)


def snapshot_index(client: Any, index: str) -> IndexSnapshot:
    """Copy all docs of `index` (client: SearchStore or raw OpenSearch/Elasticsearch client)."""
    store = as_store(client)
    return IndexSnapshot(index, datetime.now(UTC), store.mappings(index), tuple(store.scan(index)))


def restore_index(client: Any, index: str, snapshot: IndexSnapshot) -> int:
    """Replace `index` by the snapshot: drop it, recreate it, load the old docs.

    Everything written since the snapshot is gone, as after restoring an old search snapshot.
    Returns the number of docs restored.
    """
    store = as_store(client)
    store.delete_index(index)
    mappings = snapshot.mappings or {"dynamic": True}
    if store.flavor == "opensearch":
        store.client.indices.create(index=index, body={"settings": INDEX_SETTINGS, "mappings": mappings})
    else:
        store.client.indices.create(index=index, settings=INDEX_SETTINGS, mappings=mappings)
    written = store.bulk_put(index, snapshot.docs) if snapshot.docs else 0
    store.refresh(index)
    return written


def hard_delete_rows(engine: Engine, urn: str, aspect: str | None = None) -> int:
    """Delete an entity's rows (or one aspect's) straight from SQL: no MCL, the index keeps them."""
    sql = f"DELETE FROM {ASPECT_TABLE} WHERE urn = :urn"
    params = {"urn": urn}
    if aspect is not None:
        sql += " AND aspect = :aspect"
        params["aspect"] = aspect
    with engine.begin() as conn:
        return conn.execute(text(sql), params).rowcount


def delete_entity_doc(client: Any, urn: str, index_prefix: str = "") -> bool:
    """Remove an entity's search doc behind the database's back (a lost index write)."""
    store = as_store(client)
    return store.delete(entity_index(entity_type_of(urn), index_prefix), entity_doc_id(urn))


def plant_orphan_doc(
    client: Any, urn: str, fields: dict[str, Any] | None = None, index_prefix: str = ""
) -> str:
    """Index a doc for an entity the database does not have; returns its `_id`."""
    store = as_store(client)
    index = entity_index(entity_type_of(urn), index_prefix)
    doc_id = entity_doc_id(urn)
    store.put(index, doc_id, {"urn": urn, **(fields or {})})
    return doc_id
