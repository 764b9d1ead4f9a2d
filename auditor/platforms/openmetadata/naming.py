"""OpenMetadata's names: entity tables, search indices and aliases (with the cluster alias), ids."""

from __future__ import annotations

import re
from dataclasses import dataclass

from auditor.errors import ConfigError

# IndexMapping.indexNameSeparator: `<clusterAlias>_<index or alias>` when a cluster alias is set
SEPARATOR = "_"
RETRY_QUEUE_TABLE = "search_index_retry_queue"
# statuses of a retry row the server's SearchIndexRetryWorker will still claim (FAILED: gave up)
RETRY_PENDING = frozenset({"PENDING", "PENDING_RETRY_1", "PENDING_RETRY_2", "IN_PROGRESS"})
RETRY_FAILED = "FAILED"

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass(frozen=True)
class OmEntity:
    """One OpenMetadata entity type: its table, its index and the aliases over it (indexMapping.json)."""

    entity_type: str
    table: str
    index: str
    alias: str
    parent_aliases: tuple[str, ...] = ()

    def index_name(self, cluster_alias: str = "") -> str:
        return prefixed(self.index, cluster_alias)

    def aliases(self, cluster_alias: str = "") -> tuple[str, ...]:
        """The entity's own alias, then its parents' (all with the cluster alias prefix)."""
        return tuple(prefixed(a, cluster_alias) for a in (self.alias, *self.parent_aliases))


_DATA = ("all", "dataAsset")
_DB = ("database", "databaseSchema", "databaseService", *_DATA)

# entity type -> (table, index, parent aliases); the alias is the entity type itself
_ENTITIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "table": ("table_entity", "table_search_index", _DB),
    "storedProcedure": ("stored_procedure_entity", "stored_procedure_search_index", _DB),
    "databaseSchema": ("database_schema_entity", "database_schema_search_index", _DB[:1] + _DB[2:]),
    "database": ("database_entity", "database_search_index", _DB[2:]),
    "chart": ("chart_entity", "chart_search_index", ("dashboard", "dashboardService", "dataAsset")),
    "dashboard": ("dashboard_entity", "dashboard_search_index", ("dashboardService", *_DATA)),
    "dashboardDataModel": (
        "dashboard_data_model_entity",
        "dashboard_data_model_search_index",
        ("dashboardService", *_DATA),
    ),
    "pipeline": ("pipeline_entity", "pipeline_search_index", ("pipelineService", *_DATA)),
    "topic": ("topic_entity", "topic_search_index", ("messagingService", *_DATA)),
    "container": ("storage_container_entity", "container_search_index", ("storageService", *_DATA)),
    "searchIndex": ("search_index_entity", "search_entity_search_index", ("searchService", *_DATA)),
    "mlmodel": ("ml_model_entity", "mlmodel_search_index", _DATA),
    "glossary": ("glossary_entity", "glossary_search_index", ("all",)),
    "glossaryTerm": ("glossary_term_entity", "glossary_term_search_index", ("all", "glossary", "dataAsset")),
    "tag": ("tag", "tag_search_index", ("classification", *_DATA)),
    "classification": ("classification", "classification_search_index", ("all",)),
    "user": ("user_entity", "user_search_index", ()),
    "team": ("team_entity", "team_search_index", ()),
    "domain": ("domain_entity", "domain_search_index", ()),
    "dataProduct": ("data_product_entity", "data_product_search_index", ("domain", *_DATA)),
    "databaseService": ("dbservice_entity", "database_service_search_index", ("all",)),
    "dashboardService": ("dashboard_service_entity", "dashboard_service_search_index", ("all",)),
    "messagingService": ("messaging_service_entity", "messaging_service_search_index", ("all",)),
    "pipelineService": ("pipeline_service_entity", "pipeline_service_search_index", ("all",)),
    "storageService": ("storage_service_entity", "storage_service_search_index", ("all",)),
}

ENTITIES: dict[str, OmEntity] = {
    name: OmEntity(name, table, index, name, parents) for name, (table, index, parents) in _ENTITIES.items()
}
BY_TABLE: dict[str, OmEntity] = {e.table: e for e in ENTITIES.values()}


def prefixed(name: str, cluster_alias: str = "") -> str:
    """IndexMapping.getIndexName / getAlias: `<clusterAlias>_<name>`, or the name alone."""
    return f"{cluster_alias}{SEPARATOR}{name}" if cluster_alias else name


def is_uuid(text: str) -> bool:
    """An entity id as OpenMetadata writes it (a UUID; the doc `_id` is the same text)."""
    return bool(_UUID.fullmatch(text))


def entity(name: str) -> OmEntity:
    """An entity type by its name, its table or its index name; a clear error with the nearest."""
    found = ENTITIES.get(name) or BY_TABLE.get(name)
    if found is None:
        found = next((e for e in ENTITIES.values() if e.index == name), None)
    if found is None:
        lowered = {k.lower(): k for k in ENTITIES}
        if name.lower() in lowered:
            return ENTITIES[lowered[name.lower()]]
        from difflib import get_close_matches

        near = get_close_matches(name, [*ENTITIES, *BY_TABLE], n=1, cutoff=0.6)
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise ConfigError(
            f"unknown OpenMetadata entity type or table {name!r}",
            hint=hint + "known: " + ", ".join(sorted(ENTITIES)),
        )
    return found


def entities(names: tuple[str, ...] = ()) -> list[OmEntity]:
    """The entity types a scan covers: those named (types or tables), or every known one."""
    if not names:
        return list(ENTITIES.values())
    out: dict[str, OmEntity] = {}
    for name in names:
        e = entity(name)
        out[e.entity_type] = e
    return list(out.values())
