"""What OpenMetadata's search lacks or holds twice, as a whole: an entity type's index gone (neither
its name nor its alias exists) while the type has rows, an alias over several indices holding the
same document, and a cluster alias naming none of the platform's indices.

A missing index is one finding with its count, not one per entity (nothing entity by entity
repairs it: the auditor's targeted reindex refuses an index that does not exist, and `--full`
builds from the live index's mappings). OpenMetadata's own reindex (the SearchIndexingApplication,
`recreateIndex: true`) creates it from OpenMetadata's index mappings and fills it. A cluster alias
under which none of the indices exists is a configuration error (every type would be "missing"),
naming the cluster aliases that do hold OpenMetadata's indices.
"""

from __future__ import annotations

from typing import Any

from auditor.checks.openmetadata import PLATFORM
from auditor.core import absence
from auditor.core.model import Finding
from auditor.errors import BackendUnavailable, ConfigError
from auditor.platforms.openmetadata.naming import SEPARATOR, OmEntity, entities

CLUSTER_ALIAS = "ELASTICSEARCH_CLUSTER_ALIAS"


def missing_index(entity: OmEntity, cluster_alias: str, rows: int) -> Finding:
    """One finding for an entity type whose index (and alias) does not exist, with its count."""
    index, alias = entity.index_name(cluster_alias), entity.aliases(cluster_alias)[0]
    repair = (
        "OpenMetadata's reindex (Settings > Applications > Search Indexing: the "
        f"SearchIndexingApplication) with recreateIndex: true and entities: [{entity.entity_type}] "
        f"creates {index} with OpenMetadata's mappings and fills it (the auditor's reindex writes "
        "into an existing index only)"
    )
    return absence.missing_index(PLATFORM, entity.entity_type, index, rows, f"nor its alias {alias}", repair)


def existing_aliases(search: Any) -> list[str]:
    """The cluster aliases under which the cluster holds OpenMetadata's indices ('' for none)."""
    try:
        names = search.names("*")
    except BackendUnavailable:  # a role that may read only its own indices
        return []
    bases = {e.index for e in entities()}
    found = set()
    for name in names:
        for base in bases:
            if name == base:
                found.add("")
            elif name.endswith(SEPARATOR + base):
                found.add(name[: -len(SEPARATOR + base)])
    return sorted(found)


def no_index_under(search: Any, cluster_alias: str) -> ConfigError:
    """None of OpenMetadata's indices exists under the cluster alias: a configuration error naming
    the aliases that do (every type would otherwise be reported missing from search)."""
    named = f"the cluster alias {cluster_alias!r}" if cluster_alias else "no cluster alias"
    others = [a for a in existing_aliases(search) if a != cluster_alias]
    shown = ", ".join(repr(a) if a else "'' (no cluster alias)" for a in others)
    hint = (
        f"{search.description} holds OpenMetadata's indices under {shown}: set --cluster-alias "
        f"({CLUSTER_ALIAS})"
        if others
        else f"{search.description} holds no OpenMetadata index at all: has OpenMetadata's reindex "
        "(recreateIndex) run against it?"
    )
    return ConfigError(
        f"none of OpenMetadata's indices exists with {named} (no <alias>_<entity>_search_index, "
        "nor its alias): a mistyped cluster alias, or the wrong cluster",
        hint=hint,
    )


def any_index(search: Any, cluster_alias: str) -> bool:
    """Whether any of OpenMetadata's indices (or their aliases) exists under the cluster alias."""
    return cluster_alias in existing_aliases(search)
