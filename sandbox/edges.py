"""The sandbox's own aspect -> graph-edge table (the `Relationship` annotations, by hand)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sandbox.naming import edge_doc_id, entity_type_of
from sandbox.projection import walk_path


@dataclass(frozen=True)
class RelationshipSpec:
    """One `Relationship` annotation: edge name, destination path, optional edge metadata paths."""

    name: str
    path: str
    created_on: str | None = None
    created_actor: str | None = None
    updated_on: str | None = None
    updated_actor: str | None = None
    properties: str | None = None
    via: str | None = None


def _edge_spec(name: str, base: str, updated: str = "lastModified") -> RelationshipSpec:
    """Relationship over a list of `Edge` records (`<base>/*/destinationUrn`)."""
    return RelationshipSpec(
        name,
        f"{base}/*/destinationUrn",
        created_on=f"{base}/*/created/time",
        created_actor=f"{base}/*/created/actor",
        updated_on=f"{base}/*/{updated}/time",
        updated_actor=f"{base}/*/{updated}/actor",
        properties=f"{base}/*/properties",
    )


RELATIONSHIPS: dict[str, tuple[RelationshipSpec, ...]] = {
    "dataJobKey": (RelationshipSpec("IsPartOf", "flow"),),
    "ownership": (
        RelationshipSpec("OwnedBy", "owners/*/owner"),
        RelationshipSpec("ownershipType", "owners/*/typeUrn"),
    ),
    "globalTags": (RelationshipSpec("TaggedWith", "tags/*/tag"),),
    "glossaryTerms": (RelationshipSpec("TermedWith", "terms/*/urn"),),
    "schemaMetadata": (
        RelationshipSpec("SchemaFieldTaggedWith", "fields/*/globalTags/tags/*/tag"),
        RelationshipSpec("SchemaFieldWithGlossaryTerm", "fields/*/glossaryTerms/terms/*/urn"),
        RelationshipSpec("ForeignKeyTo", "foreignKeys/*/foreignFields/*"),
        RelationshipSpec("ForeignKeyToDataset", "foreignKeys/*/foreignDataset"),
    ),
    "upstreamLineage": (
        RelationshipSpec(
            "DownstreamOf",
            "upstreams/*/dataset",
            created_on="upstreams/*/created/time",
            created_actor="upstreams/*/created/actor",
            updated_on="upstreams/*/auditStamp/time",
            updated_actor="upstreams/*/auditStamp/actor",
            properties="upstreams/*/properties",
            via="upstreams/*/query",
        ),
        RelationshipSpec("DownstreamOf", "fineGrainedLineages/*/upstreams/*"),
    ),
    "container": (RelationshipSpec("IsPartOf", "container"),),
    "domains": (RelationshipSpec("AssociatedWith", "domains/*"),),
    "chartInfo": (
        RelationshipSpec("Consumes", "inputs/*/string"),
        _edge_spec("Consumes", "inputEdges"),
    ),
    "dashboardInfo": (
        RelationshipSpec("Contains", "charts/*"),
        _edge_spec("Contains", "chartEdges"),
        RelationshipSpec("Consumes", "datasets/*"),
        _edge_spec("Consumes", "datasetEdges"),
        _edge_spec("DashboardContainsDashboard", "dashboards"),
    ),
    "dataJobInputOutput": (
        RelationshipSpec("Consumes", "inputDatasets/*"),
        _edge_spec("Consumes", "inputDatasetEdges"),
        RelationshipSpec("Produces", "outputDatasets/*"),
        _edge_spec("Produces", "outputDatasetEdges"),
        RelationshipSpec("DownstreamOf", "inputDatajobs/*"),
        _edge_spec("DownstreamOf", "inputDatajobEdges"),
        RelationshipSpec("Consumes", "inputDatasetFields/*"),
        RelationshipSpec("Produces", "outputDatasetFields/*"),
    ),
    "domainProperties": (RelationshipSpec("IsPartOf", "parentDomain"),),
    "glossaryTermInfo": (RelationshipSpec("IsPartOf", "parentNode"),),
    "corpUserInfo": (RelationshipSpec("ReportsTo", "managerUrn"),),
    "corpUserEditableInfo": (
        RelationshipSpec("IsUserOf", "platforms/*"),
        RelationshipSpec("IsPersona", "persona"),
    ),
    "corpGroupInfo": (
        RelationshipSpec("IsPartOf", "members/*"),
        RelationshipSpec("IsPartOf", "groups/*"),
    ),
}


def relationship_types(aspect_name: str) -> list[str]:
    """Names of the edges an aspect owns (what a re-index of it replaces), without repeats."""
    return list(dict.fromkeys(spec.name for spec in RELATIONSHIPS.get(aspect_name, ())))


@dataclass(frozen=True)
class Edge:
    """One graph_service_v1 document."""

    source: str
    destination: str
    relationship_type: str
    created_on: int | None = None
    created_actor: str | None = None
    updated_on: int | None = None
    updated_actor: str | None = None
    properties: dict[str, str] | None = None
    via: str | None = None
    lifecycle_owner: str | None = None

    @property
    def doc_id(self) -> str:
        """base64(md5(source--relationshipType--destination[--lifecycleOwner]))."""
        return edge_doc_id(self.source, self.relationship_type, self.destination, self.lifecycle_owner)

    def to_doc(self, *, keep_created: bool = True) -> dict[str, Any]:
        """The `_source`; `keep_created=False` leaves createdOn/createdActor out (a merge)."""
        doc: dict[str, Any] = {
            "source": {"urn": self.source, "entityType": entity_type_of(self.source)},
            "destination": {"urn": self.destination, "entityType": entity_type_of(self.destination)},
            "relationshipType": self.relationship_type,
        }
        if keep_created and self.created_on is not None:
            doc["createdOn"] = self.created_on
        if keep_created and self.created_actor is not None:
            doc["createdActor"] = self.created_actor
        if self.updated_on is not None:
            doc["updatedOn"] = self.updated_on
        if self.updated_actor is not None:
            doc["updatedActor"] = self.updated_actor
        if self.properties is not None:
            doc["properties"] = {k: v for k, v in self.properties.items() if isinstance(v, str)}
        if self.lifecycle_owner is not None:
            doc["lifecycleOwner"] = self.lifecycle_owner
        if self.via is not None:
            doc["via"] = self.via
        return doc


def _aligned(aspect: dict[str, Any], path: str | None, size: int) -> list[Any] | None:
    """Per-element values of a one-`*` path, None unless they line up with the edge values."""
    if path is None:
        return None
    parts = path.split("/")
    if "*" not in parts:
        found = walk_path(aspect, parts)
        values: list[Any] = [found[0] if found else None]
    else:
        star = parts.index("*")
        elements = walk_path(aspect, parts[:star])
        if not elements or not isinstance(elements[0], list):
            return None
        values = []
        for element in elements[0]:
            found = walk_path(element, parts[star + 1 :])
            values.append(found[0] if found else None)
    return values if len(values) == size else None


def extract_edges(
    urn: str,
    aspect_name: str,
    aspect: dict[str, Any],
    *,
    system_metadata: dict[str, Any] | None = None,
    created_actor: str | None = None,
) -> list[Edge]:
    """Edges of one aspect, filled the way GraphIndexUtils does.

    createdOn/updatedOn fall back to `systemMetadata.lastObserved` when absent or 0;
    when the aspect names no created actor, both actors are the MCL's `created.actor`.
    """
    last_observed = (system_metadata or {}).get("lastObserved")
    edges: list[Edge] = []
    for spec in RELATIONSHIPS.get(aspect_name, ()):
        destinations = walk_path(aspect, spec.path.split("/"))
        size = len(destinations)
        created_on = _aligned(aspect, spec.created_on, size)
        created_by = _aligned(aspect, spec.created_actor, size)
        updated_on = _aligned(aspect, spec.updated_on, size)
        updated_by = _aligned(aspect, spec.updated_actor, size)
        properties = _aligned(aspect, spec.properties, size)
        via = _aligned(aspect, spec.via, size)
        for i, destination in enumerate(destinations):
            c_on = created_on[i] if created_on else None
            u_on = updated_on[i] if updated_on else None
            c_by = created_by[i] if created_by else None
            u_by = updated_by[i] if updated_by else None
            if not c_on and system_metadata is not None:
                c_on = last_observed
            if not u_on and system_metadata is not None:
                u_on = last_observed
            if c_by is None and created_actor is not None:
                c_by = u_by = created_actor
            edges.append(
                Edge(
                    source=urn,
                    destination=str(destination),
                    relationship_type=spec.name,
                    created_on=c_on,
                    created_actor=c_by,
                    updated_on=u_on,
                    updated_actor=u_by,
                    properties=properties[i] if properties else None,
                    via=via[i] if via else None,
                )
            )
    return edges
