"""OpenMetadata's entity types as the sandbox models them: table, hash column, index, aliases.

Index names, aliases, parent and child aliases from openmetadata-service/src/main/resources/
elasticsearch/indexMapping.json; tables and hash columns from the baseline schema.sql;
relationship ordinals from entityRelationship.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Relationship enum (entityRelationship.json): the ordinal is what entity_relationship.relation holds
CONTAINS, CREATED_BY, USES, OWNS, PARENT_OF, HAS, FOLLOWS, UPSTREAM, APPLIED_TO, RELATED_TO = (
    0,
    1,
    7,
    8,
    9,
    10,
    11,
    13,
    14,
    15,
)
VOTED = 18
# TagLabel enums stored as tinyint in tag_usage: source, labelType, state (their ordinals)
TAG_SOURCES = ("Classification", "Glossary")
LABEL_TYPES = ("Manual", "Propagated", "Automated", "Derived", "Generated")
LABEL_STATES = ("Suggested", "Confirmed")


@dataclass(frozen=True)
class EntityType:
    """One OM entity type: its table, its hash column and its search index."""

    key: str  # OM's entity type name (Entity.TABLE = "table", ...)
    table: str
    index_name: str  # indexMapping.json indexName (before the cluster alias)
    alias: str
    parent_aliases: tuple[str, ...] = ()
    child_aliases: tuple[str, ...] = ()
    hash_column: str = "fqnHash"  # nameHash for services, users, teams, glossaries, classifications
    hash_length: int = 768  # MySQL width of fqnHash
    pg_hash_length: int = 768
    is_service: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def parent_field(self) -> str:
        """The doc field children reference this entity by (SearchRepository's child updates)."""
        return "service.id" if self.is_service else f"{self.key}.id"


_DB_CHILDREN = ("testSuite", "testCase", "testCaseResolutionStatus", "testCaseResult")
ENTITY_TYPES: dict[str, EntityType] = {
    e.key: e
    for e in (
        EntityType(
            "databaseService",
            "dbservice_entity",
            "database_service_search_index",
            "databaseService",
            ("all", "service"),
            ("database", "databaseSchema", "storedProcedure", "table", *_DB_CHILDREN),
            hash_column="nameHash",
            is_service=True,
        ),
        EntityType(
            "database",
            "database_entity",
            "database_search_index",
            "database",
            ("databaseService", "all", "dataAsset"),
            ("databaseSchema", "table", "storedProcedure", *_DB_CHILDREN),
        ),
        EntityType(
            "databaseSchema",
            "database_schema_entity",
            "database_schema_search_index",
            "databaseSchema",
            ("database", "databaseService", "all", "dataAsset"),
            ("table", "storedProcedure", *_DB_CHILDREN),
        ),
        EntityType(
            "table",
            "table_entity",
            "table_search_index",
            "table",
            ("database", "databaseSchema", "databaseService", "all", "dataAsset"),
            _DB_CHILDREN,
        ),
        EntityType(
            "dashboardService",
            "dashboard_service_entity",
            "dashboard_service_search_index",
            "dashboardService",
            ("all", "service"),
            ("dashboard", "dashboardDataModel", "chart"),
            hash_column="nameHash",
            is_service=True,
        ),
        EntityType(
            "dashboard",
            "dashboard_entity",
            "dashboard_search_index",
            "dashboard",
            ("dashboardService", "all", "dataAsset"),
            ("chart",),
        ),
        EntityType(
            "messagingService",
            "messaging_service_entity",
            "messaging_service_search_index",
            "messagingService",
            ("all", "service"),
            ("topic",),
            hash_column="nameHash",
            is_service=True,
        ),
        EntityType(
            "topic",
            "topic_entity",
            "topic_search_index",
            "topic",
            ("messagingService", "all", "dataAsset"),
            pg_hash_length=256,
        ),
        EntityType(
            "pipelineService",
            "pipeline_service_entity",
            "pipeline_service_search_index",
            "pipelineService",
            ("all", "service"),
            ("pipeline",),
            hash_column="nameHash",
            is_service=True,
        ),
        EntityType(
            "pipeline",
            "pipeline_entity",
            "pipeline_search_index",
            "pipeline",
            ("pipelineService", "all", "dataAsset"),
        ),
        EntityType(
            "glossary",
            "glossary_entity",
            "glossary_search_index",
            "glossary",
            ("all",),
            ("glossaryTerm",),
            hash_column="nameHash",
        ),
        EntityType(
            "glossaryTerm",
            "glossary_term_entity",
            "glossary_term_search_index",
            "glossaryTerm",
            ("all", "glossary", "dataAsset"),
            hash_length=756,
        ),
        EntityType(
            "classification",
            "classification",
            "classification_search_index",
            "classification",
            ("all",),
            ("tag",),
            hash_column="nameHash",
        ),
        EntityType("tag", "tag", "tag_search_index", "tag", ("classification", "all", "dataAsset")),
        EntityType("domain", "domain_entity", "domain_search_index", "domain", ("all",)),
        EntityType("user", "user_entity", "user_search_index", "user", hash_column="nameHash"),
        EntityType("team", "team_entity", "team_search_index", "team", hash_column="nameHash"),
    )
}

# The service entity type behind each asset type, and the asset's serviceType value
SERVICE_OF = {
    "database": "databaseService",
    "databaseSchema": "databaseService",
    "table": "databaseService",
    "dashboard": "dashboardService",
    "topic": "messagingService",
    "pipeline": "pipelineService",
}


def entity_type(key: str) -> EntityType:
    """The EntityType named `key`; a clear error for an unknown one."""
    try:
        return ENTITY_TYPES[key]
    except KeyError:
        raise ValueError(
            f"unknown OpenMetadata entity type {key!r} (known: {', '.join(sorted(ENTITY_TYPES))})"
        ) from None


def by_table(table: str) -> EntityType:
    """The EntityType stored in `table`."""
    for et in ENTITY_TYPES.values():
        if et.table == table:
            return et
    raise ValueError(f"no OpenMetadata entity type is stored in {table!r}")
