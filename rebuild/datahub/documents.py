"""The documents an entity's rows project to, built with the scan's own projection.

An entity doc replaces the stored one (that is what clears a field a partial update left
behind) in every field the rules know: a known field the rows prove absent is gone. Every other
field of the stored doc stays as it is: the fields no row can predict (timeseries values,
`systemCreated`, `runId`), and those no rule derives at all (a custom model plugin's aspect, a
field of a newer release, a field the deployment's release or mapping withholds). Those are
kept unchecked, and named (`EntityDocuments.kept`): a repair never empties what it cannot derive.
So are the system-metadata docs of aspects the registry does not know: not written, not removed.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    # the stored doc's fields no rule derives, kept as they are (unchecked)
    kept: tuple[str, ...] = ()
    # system-metadata doc ids of aspects the registry does not know: kept as stored, never removed
    kept_system_metadata: frozenset[str] = frozenset()


# fields a rewrite sets itself, whatever the rules know of them
WRITTEN = frozenset({"urn", "removed"})
# a repair's count of entity docs that kept a field no rule derives: KEPT + the field's name
KEPT = "kept unchecked: "


def kept_note(counts: Mapping[str, int]) -> str | None:
    """The fields a repair kept unchecked, for its report (None: it kept none)."""
    kept = {k.removeprefix(KEPT): n for k, n in counts.items() if k.startswith(KEPT)}
    if not kept:
        return None
    named = ", ".join(
        f"{field} ({n} {'entity' if n == 1 else 'entities'})" for field, n in sorted(kept.items())
    )
    return (
        f"kept unchecked, as the live documents hold them: {named}. No rule of this release derives "
        "these fields (a custom model plugin's aspect, a newer release's field): written by "
        "DataHub's consumer, never emptied by a repair"
    )


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
    A stored field no aspect of the type writes stays too (module docstring).
    """
    entity = JoinedEntity(rows.urn, entity_type(rows.urn), None, rows=rows)
    aspects = entity.aspects
    versions = versions or IndexRules.installed(registry)
    etype = registry.spelled(entity.entity_type)
    withheld = versions.not_written(etype, index)
    expected = project_entity(registry, rows.urn, aspects, withheld)
    doc: dict[str, Any] | None = None
    kept: tuple[str, ...] = ()
    if versions.searchable(etype):
        doc = {"urn": rows.urn}
        stored = current or {}
        known = expected.known_fields  # the type's fields, less the withheld ones
        kept = tuple(sorted(k for k in stored if k not in known and k not in WRITTEN))
        doc.update({k: v for k, v in stored.items() if k in expected.unpredictable or k not in known})
        doc.update({k: v for k, v in expected.fields.items() if v is not None})
        # a field several aspects write holds any of their values: the first is as good
        doc.update({k: options[0] for k, options in expected.ambiguous.items()})
        doc["removed"] = expected.removed
    removed = expected.removed
    system = {}
    unknown = frozenset(system_metadata_id(rows.urn, a) for a in rows.rows if not registry.has_aspect(a))
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
    return EntityDocuments(rows.urn, doc, system, edges, kept, unknown)


def _type_or_none(urn: str) -> str | None:
    try:
        return entity_type(urn)
    except ValueError:
        return None
