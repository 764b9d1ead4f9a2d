"""The documents an entity's rows project to, built with the scan's own projection.

An entity doc is written whole (it replaces the stored one: that is what clears a field a
partial update left behind), keeping only the fields no row can predict (timeseries values,
`systemCreated`, `runId`) from the document it replaces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor.core.records import EntityRows
from auditor.platforms.datahub.documents.entity import JoinedEntity
from auditor.platforms.datahub.documents.projection import COMPARED_EDGE_TYPES, expected_edges, project_entity
from auditor.platforms.datahub.naming import edge_id, system_metadata_id
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.urns import entity_type
from auditor.platforms.datahub.versions.view import IndexRules


@dataclass(frozen=True)
class EntityDocuments:
    """What one entity's projections should hold, from its rows."""

    urn: str
    entity_doc: dict[str, Any] | None  # None: nothing searchable (DataHub writes no document)
    system_metadata: dict[str, dict[str, Any]]  # doc id -> doc, one per (urn, aspect)
    edges: dict[str, dict[str, Any]]  # doc id -> edge doc, of the relationship types compared


def build(
    registry: Registry,
    rows: EntityRows,
    current: dict[str, Any] | None = None,
    versions: IndexRules | None = None,
    index: str | None = None,
) -> EntityDocuments:
    """The documents of an entity; `current` is the stored entity doc (its unpredictable fields stay).

    `versions`: the deployment's release and mappings: a field its release does not write, or
    that `index`'s explicit mapping does not hold, is never written (what the stored doc holds
    there stays), and a type with no searchable field gets no document, as DataHub writes none.
    """
    entity = JoinedEntity(rows.urn, entity_type(rows.urn), None, rows=rows)
    aspects = entity.aspects
    versions = versions or IndexRules.installed(registry)
    etype = registry.spelled(entity.entity_type)
    withheld = versions.not_written(etype, index)
    expected = project_entity(registry, rows.urn, aspects, withheld)
    doc: dict[str, Any] | None = None
    if versions.searchable(etype):
        doc = {"urn": rows.urn}
        kept = current or {}
        doc.update({k: v for k, v in kept.items() if k in expected.unpredictable or k in withheld})
        doc.update({k: v for k, v in expected.fields.items() if v is not None})
        # a field several aspects write holds any of their values: the first is as good
        doc.update({k: options[0] for k, options in expected.ambiguous.items()})
        doc["removed"] = expected.removed
    removed = expected.removed
    system = {}
    for aspect in rows.rows:
        if not registry.has_aspect(aspect) or registry.aspect(aspect).timeseries:
            continue
        meta = entity.system_metadata_of(aspect) or {}
        system[system_metadata_id(rows.urn, aspect)] = {
            "urn": rows.urn,
            "aspect": aspect,
            "runId": meta.get("runId"),
            "lastUpdated": meta.get("lastObserved"),
            "registryName": meta.get("registryName"),
            "registryVersion": meta.get("registryVersion"),
            "removed": removed,
        }
    edges = {}
    for edge in expected_edges(registry, rows.urn, aspects):
        if edge.relationship_type not in COMPARED_EDGE_TYPES:
            continue
        edges[edge_id(edge.source, edge.relationship_type, edge.destination)] = {
            "source": {"urn": edge.source, "entityType": entity_type(edge.source)},
            "destination": {"urn": edge.destination, "entityType": _type_or_none(edge.destination)},
            "relationshipType": edge.relationship_type,
        }
    return EntityDocuments(rows.urn, doc, system, edges)


def _type_or_none(urn: str) -> str | None:
    try:
        return entity_type(urn)
    except ValueError:
        return None
