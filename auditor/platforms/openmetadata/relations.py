"""What an OpenMetadata document takes from `entity_relationship` besides owners and domains: its
service, its upstream lineage, its followers and its votes.

Read in OpenMetadata's sources (SearchIndex, the `*Index` classes, LineageRepository,
EntityRepository; docs/openmetadata.md has the table per entity type and release), written here
on its own. None of these is in the entity's stored JSON (the repositories null them before
storing); each is a relationship row pointing at the entity (`findFrom(id, type, relation)`):

- `service`: the `contains` (0) row from a service (`getEntityWithDisplayName(entity.getService())`,
  ServiceBackedIndex). A database's service contains it; a schema's service is its database's,
  a table's or stored procedure's its schema's (the repositories' `setDefaultFields` walk up).
- `upstreamLineage`: one entry per `upstream` (13) row (`SearchIndex.getLineageData`,
  LineageRepository.buildEntityLineageData): the upstream entity as {id, type,
  fullyQualifiedName, fqnHash}, the edge's `LineageDetails` (the row's JSON) flattened beside it.
  OpenMetadata's lineage graph is read from `upstreamLineage.fromEntity.fqnHash`.
- `followers`: the ids of the `follows` (11) rows' users and teams (`parseFollowers`).
- `totalVotes`: the `voted` (18) rows from users, `"votedUp"` less `"votedDown"`, at least 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from auditor.core.json_guard import load_object

CONTAINS, FOLLOWS, UPSTREAM, VOTED = 0, 11, 13, 18  # entityRelationship.json's ordinals
LINKS = (FOLLOWS, UPSTREAM, VOTED)

# index classes that write `service` (every release from 1.6 to 2.0)
SERVICE_BACKED = frozenset(
    {
        "database",
        "databaseSchema",
        "table",
        "storedProcedure",
        "chart",
        "dashboard",
        "dashboardDataModel",
        "pipeline",
        "topic",
        "container",
        "searchIndex",
        "mlmodel",
    }
)
# index classes that write no `upstreamLineage` (every other one does, services included: from
# the 1.6 line's `doc.put("upstreamLineage", SearchIndex.getLineageData(...))` in each class to
# 2.0's LineageIndex mixin)
NO_LINEAGE = frozenset(
    {"user", "team", "tag", "classification", "glossary", "glossaryTerm", "domain", "dataProduct"}
)


def has_lineage(entity_type: str) -> bool:
    return entity_type not in NO_LINEAGE


def details(link: Mapping[str, Any]) -> dict[str, Any]:
    """A relationship row's JSON as an object (MariaDB hands a JSON column over as text)."""
    return load_object(link.get("json")) or {}


def of(links: Iterable[Mapping[str, Any]], relation: int) -> list[Mapping[str, Any]]:
    return [x for x in links if x.get("r") == relation]


def service_link(links: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The `contains` row from a service (the lowest id when a writer left two)."""
    found = [x for x in of(links, CONTAINS) if str(x.get("type") or "").endswith("Service")]
    return min(found, key=lambda x: str(x.get("id"))) if found else None


def follower_ids(links: Iterable[Mapping[str, Any]]) -> list[str]:
    return sorted({str(x.get("id")) for x in of(links, FOLLOWS) if x.get("id")})


def total_votes(links: Iterable[Mapping[str, Any]]) -> int:
    """EntityRepository.getVotes, then getCommonAttributesMap: up votes less down votes, never below 0."""
    up = down = 0
    for x in of(links, VOTED):
        said = x.get("json")
        said = said.strip().strip('"') if isinstance(said, str) else said
        up += said == "votedUp"
        down += said == "votedDown"
    return max(up - down, 0)


def upstream_ids(links: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    return frozenset(str(x.get("id")) for x in of(links, UPSTREAM) if x.get("id"))


def lineage_entry(
    upstream: Mapping[str, Any],
    entity: Mapping[str, Any],
    found: Mapping[str, Any],
    fqn_hash: Any,
    pipeline: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """LineageRepository.buildEntityLineageData(from, to, details) as the document holds it (nulls
    left out, as OpenMetadata's JSON writer does). `upstream`: the upstream entity's reference
    (id, type, fullyQualifiedName); `found`: the edge's LineageDetails; `pipeline`: the entity
    its `pipeline` reference names, as OpenMetadata puts it (its JSON with fqnHash)."""
    from_fqn, to_fqn = (
        str(upstream.get("fullyQualifiedName") or ""),
        str(entity.get("fullyQualifiedName") or ""),
    )
    ref = found.get("pipeline") if isinstance(found.get("pipeline"), Mapping) else None
    doc_id = f"{from_fqn}--->{to_fqn}"
    if ref:
        doc_id = f"{from_fqn}--->{ref.get('type')}:{ref.get('id')}--->{to_fqn}"
    entry: dict[str, Any] = {
        "docId": doc_id,
        "docUniqueId": f"{upstream.get('id')}--->{entity.get('id')}",
        "fromEntity": {
            "id": str(upstream.get("id")),
            "type": upstream.get("type"),
            "fullyQualifiedName": from_fqn,
            "fqnHash": fqn_hash(from_fqn),
        },
    }
    if ref and pipeline is not None:
        entry["pipelineEntityType"] = ref.get("type")
        entry["pipeline"] = dict(pipeline)
    for key, field in (
        ("description", "description"),
        ("columns", "columnsLineage"),
        ("sqlQuery", "sqlQuery"),
        ("source", "source"),
        ("createdAt", "createdAt"),
        ("createdBy", "createdBy"),
        ("updatedAt", "updatedAt"),
        ("updatedBy", "updatedBy"),
        ("assetEdges", "assetEdges"),
    ):
        if found.get(field) is not None and not (key == "columns" and found[field] == []):
            entry[key] = found[field]
    return entry


def wanted(entity_type: str, links: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """The (type, id) of the entities these links' fields need read: the service, each upstream
    entity and each edge's pipeline."""
    out: set[tuple[str, str]] = set()
    found = service_link(links) if entity_type in SERVICE_BACKED else None
    if found is not None:
        out.add((str(found.get("type")), str(found.get("id"))))
    for x in of(links, UPSTREAM) if has_lineage(entity_type) else ():
        out.add((str(x.get("type")), str(x.get("id"))))
        ref = details(x).get("pipeline")
        if isinstance(ref, Mapping) and ref.get("id"):
            out.add((str(ref.get("type")), str(ref["id"])))
    return out


def derived(
    entity_type: str,
    entity: Mapping[str, Any],
    links: list[Mapping[str, Any]],
    found: Mapping[str, tuple[str, dict[str, Any]]],
    reference: Any,
    fqn_hash: Any,
) -> dict[str, Any]:
    """The document's fields from these links, as the type's index class writes them (a service
    or an upstream entity whose row is gone is left out, as OpenMetadata's lookups skip it).
    `found`: id -> (type, JSON) of the entities `wanted` named; `reference`: (type, id, JSON) ->
    its EntityReference."""
    inline = [str(f.get("id")) for f in entity.get("followers") or [] if isinstance(f, Mapping)]
    out: dict[str, Any] = {
        "followers": sorted({*follower_ids(links), *inline}),
        "totalVotes": total_votes(links),
    }
    link = service_link(links) if entity_type in SERVICE_BACKED else None
    if link is not None and str(link.get("id")) in found:
        kind, data = found[str(link.get("id"))]
        out["service"] = reference(kind, str(link.get("id")), data)
    if has_lineage(entity_type):
        entries = []
        for x in sorted(of(links, UPSTREAM), key=lambda x: str(x.get("id"))):
            if str(x.get("id")) not in found:
                continue
            kind, data = found[str(x.get("id"))]
            edge = details(x)
            ref = edge.get("pipeline") if isinstance(edge.get("pipeline"), Mapping) else {}
            pipeline = found.get(str(ref.get("id"))) if ref else None
            made = None
            if pipeline is not None:  # LineageRepository.getPipelineOrStoredProcedure
                made = {k: v for k, v in pipeline[1].items() if k not in PIPELINE_LEFT_OUT}
                made["fqnHash"] = fqn_hash(str(made.get("fullyQualifiedName") or ""))
            upstream = reference(kind, str(x.get("id")), data)
            entries.append(lineage_entry(upstream, entity, edge, fqn_hash, made))
        out["upstreamLineage"] = entries
    return out


PIPELINE_LEFT_OUT = ("changeDescription", "incrementalChangeDescription")
