"""OpenMetadata's search indices: names with the cluster alias, aliases, mappings; create and drop.

Names: IndexMapping.getIndexName(clusterAlias) = `<clusterAlias>_<indexName>`, or `indexName`
when the alias is empty; aliases (the index's own and its parentAliases) get the same prefix.
The mappings keep OM's field types for what a scan compares and use only core analysis (a
standard tokenizer and the lowercase filter): this Elasticsearch 9 has no analysis-common.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sandbox.openmetadata.model import ENTITY_TYPES, EntityType, entity_type
from sandbox.search import SearchStore

INDEX_SETTINGS: dict[str, Any] = {
    "number_of_shards": 1,
    "number_of_replicas": 0,
    "analysis": {
        "analyzer": {"om_analyzer": {"type": "custom", "tokenizer": "standard", "filter": ["lowercase"]}}
    },
}
_TEXT = {
    "type": "text",
    "analyzer": "om_analyzer",
    "fields": {"keyword": {"type": "keyword", "ignore_above": 256}},
}
_REF = {
    "properties": {
        "id": {"type": "keyword"},
        "type": {"type": "keyword"},
        "name": {"type": "keyword"},
        "fullyQualifiedName": {"type": "keyword"},
        "displayName": _TEXT,
        "deleted": {"type": "text"},
    }
}
_TAG = {
    "properties": {
        "tagFQN": {"type": "keyword"},
        "labelType": {"type": "keyword"},
        "source": {"type": "keyword"},
        "state": {"type": "keyword"},
        "name": {"type": "keyword"},
    }
}
MAPPINGS: dict[str, Any] = {
    "dynamic": True,
    "date_detection": False,
    "numeric_detection": False,
    "properties": {
        "id": {"type": "keyword"},
        "name": {
            "type": "text",
            "analyzer": "om_analyzer",
            "fields": {"keyword": {"type": "keyword", "ignore_above": 256}},
        },
        "fullyQualifiedName": {"type": "keyword"},
        "fqnHash": {"type": "keyword"},
        "fqnParts": {"type": "keyword"},
        "displayName": _TEXT,
        "description": {"type": "text", "analyzer": "om_analyzer"},
        "entityType": {"type": "keyword"},
        "version": {"type": "float"},
        "updatedAt": {"type": "date", "format": "epoch_millis"},
        "updatedBy": {"type": "keyword"},
        # OM maps `deleted` as text: the soft-delete script writes the string 'true'
        "deleted": {"type": "text"},
        "owners": _REF,
        "service": _REF,
        "database": _REF,
        "databaseSchema": _REF,
        "glossary": _REF,
        "classification": _REF,
        "tags": _TAG,
        "tier": _TAG,
        "totalVotes": {"type": "long"},
        "descriptionStatus": {"type": "keyword"},
        "serviceType": {"type": "keyword"},
        "columnNames": {"type": "keyword"},
    },
}


def prefixed(name: str, cluster_alias: str = "") -> str:
    """`<clusterAlias>_<name>`, or `name` when the cluster alias is empty."""
    return f"{cluster_alias}_{name}" if cluster_alias else name


def index_name(entity: str | EntityType, cluster_alias: str = "") -> str:
    """The search index of an entity type (`table` -> `table_search_index`)."""
    et = entity if isinstance(entity, EntityType) else entity_type(entity)
    return prefixed(et.index_name, cluster_alias)


def aliases(entity: str | EntityType, cluster_alias: str = "") -> list[str]:
    """The aliases OM puts on the entity type's index: its own, then its parent aliases."""
    et = entity if isinstance(entity, EntityType) else entity_type(entity)
    return [prefixed(a, cluster_alias) for a in (et.alias, *et.parent_aliases)]


def child_aliases(entity: str | EntityType, cluster_alias: str = "") -> list[str]:
    """The aliases whose docs reference this entity type (the targets of child updates)."""
    et = entity if isinstance(entity, EntityType) else entity_type(entity)
    return [prefixed(a, cluster_alias) for a in et.child_aliases]


def create_index(search: SearchStore, entity: str | EntityType, cluster_alias: str = "") -> str:
    """Create one entity type's index with its aliases unless it exists; returns its name."""
    et = entity if isinstance(entity, EntityType) else entity_type(entity)
    name = index_name(et, cluster_alias)
    if not search.exists(name):
        body_aliases: dict[str, Any] = {a: {} for a in aliases(et, cluster_alias)}
        try:
            if search.flavor == "opensearch":
                search.client.indices.create(
                    index=name,
                    body={"settings": INDEX_SETTINGS, "mappings": MAPPINGS, "aliases": body_aliases},
                )
            else:
                search.client.indices.create(
                    index=name, settings=INDEX_SETTINGS, mappings=MAPPINGS, aliases=body_aliases
                )
        except Exception as exc:  # created concurrently
            if "resource_already_exists" not in str(exc):
                raise
    return name


def create_indices(search: SearchStore, cluster_alias: str = "") -> list[str]:
    """Create every entity type's index (with aliases); returns the index names.

    Eight at a time: each create waits for its cluster-state update and its shard's start, and
    concurrent ones wait together (the seventeen indices on two cores at load 9-13: 8-17 s one
    after the other, 4-8 s this way; at load 4.5 about 2 s either way). Every OpenMetadata test
    world makes them."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(lambda et: create_index(search, et, cluster_alias), ENTITY_TYPES.values()))


def delete_indices(search: SearchStore, cluster_alias: str = "") -> None:
    """Delete every entity type's index (its aliases go with it), in one request."""
    names = [index_name(et, cluster_alias) for et in ENTITY_TYPES.values()]
    search.client.indices.delete(index=",".join(names), ignore_unavailable=True)


def drop_cluster_alias(search: SearchStore, cluster_alias: str) -> None:
    """Delete every index named under `<cluster_alias>_` (the entity types' and whatever a rebuild
    made beside them), in one request: a test world's teardown."""
    found = search.client.indices.get_alias(index=f"{cluster_alias}_*")
    names = list(found.body if hasattr(found, "body") else found)
    if names:
        search.client.indices.delete(index=",".join(names))


def refresh_all(search: SearchStore, cluster_alias: str = "") -> None:
    """Make every recent write searchable."""
    names = ",".join(index_name(et, cluster_alias) for et in ENTITY_TYPES.values())
    search.client.indices.refresh(index=names, ignore_unavailable=True)
