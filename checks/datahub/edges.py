"""graph.edges: `graph_service_v1` edges vs the relationship fields of the aspects.

Divergence: an edge the aspects imply (lineage `DownstreamOf`, ownership `OwnedBy`, tags,
terms, containers) is missing from the graph index, or the graph holds such an edge from this
entity that no aspect implies any more (lineage shows a removed upstream).
Cause: the aspect's MCL was never published or applied, or the graph index was restored.
Repair: `datahub-upgrade -u RestoreIndices -a urn=URN` (a RESTATE replay).
"""

from __future__ import annotations

from collections.abc import Iterator

from auditor.checks.datahub.base import Check, CheckContext
from auditor.core.model import Finding, Kind, RepairKind
from auditor.platforms.datahub.documents.entity import JoinedEntity
from auditor.platforms.datahub.documents.projection import expected_edges
from auditor.platforms.datahub.naming import graph_index


def _writes(ctx: CheckContext, aspects: dict[str, list[str]], rel: str) -> bool:
    """Whether one of `aspects` writes relationship `rel`."""
    return any(
        ctx.registry.has_aspect(a) and any(r.name == rel for r in ctx.registry.aspect(a).relationships)
        for a in aspects
    )


class Edges(Check):
    id = "graph.edges"
    kinds = (Kind.MISSING_EDGE, Kind.ORPHAN_EDGE)
    repairs = {
        Kind.MISSING_EDGE: (RepairKind.REWRITE_EDGES,),
        Kind.ORPHAN_EDGE: (RepairKind.REWRITE_EDGES,),
    }

    def run(self, entity: JoinedEntity, ctx: CheckContext) -> Iterator[Finding]:
        index = graph_index(ctx.index_prefix)
        expected: dict[tuple[str, str], str | None] = {}
        if entity.rows is not None:
            writers = {
                rel.name: name
                for name in sorted(entity.aspects, reverse=True)
                if ctx.registry.has_aspect(name)
                for rel in ctx.registry.aspect(name).relationships
            }
            for edge in expected_edges(ctx.registry, entity.urn, entity.aspects):
                if edge.relationship_type in ctx.edge_types:
                    key = (edge.relationship_type, edge.destination)
                    expected[key] = writers.get(edge.relationship_type)
        actual = set()
        for doc in entity.edges:
            rel = doc.get("relationshipType")
            dst = (doc.get("destination") or {}).get("urn")
            if rel in ctx.edge_types and isinstance(dst, str):
                actual.add((rel, dst))
        rows = entity.rows.rows if entity.rows else {}
        ahead = ctx.behind(entity)  # edges of a later write the store lacks: index.store-behind's
        for rel, dst in sorted(expected.keys() - actual):
            aspect = expected[(rel, dst)]
            if aspect in ahead:
                continue
            row = rows.get(aspect) if aspect else None
            yield self.finding(
                Kind.MISSING_EDGE,
                entity,
                index=index,
                aspect=aspect,
                changed_at=row.createdon if row else None,
                relationship=rel,
                destination=dst,
            )
        for rel, dst in sorted(actual - expected.keys()):
            if ahead and _writes(ctx, ahead, rel):
                continue
            yield self.finding(
                Kind.ORPHAN_EDGE,
                entity,
                index=index,
                changed_at=entity.rows.changed_at if entity.rows else None,
                relationship=rel,
                destination=dst,
            )
