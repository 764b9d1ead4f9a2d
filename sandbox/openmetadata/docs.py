"""The search document of an entity, built as OM's search index builders build it.

SearchIndex.buildSearchIndexDoc: the entity's JSON (the full entity, owners and tags included)
plus getCommonAttributesMap (displayName, entityType, owners with displayName, domains,
followers, totalVotes, descriptionStatus, fqnParts, deleted as a boolean, tier), the tags of
getAllTags merged with the nested columns' (mergeChildTags: a table's columns, a pipeline's
tasks), the owners and domains a table or schema inherits from its parent when it has none
(setInheritedFields, marked `inherited`), the type's
own fields (TableIndex: columnNames, service/database/databaseSchema references, ...), then
fqnHash, then DEFAULT_EXCLUDED_FIELDS removed (changeDescription, votes, connection,
changeSummary, incrementalChangeDescription). This is the sandbox's own builder: the auditor
has its own, and the two must agree only because both follow OM.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from sandbox.openmetadata import fqn as fqnlib
from sandbox.openmetadata.entities import OmEntity

EXCLUDED = ("changeDescription", "votes", "incrementalChangeDescription", "connection", "changeSummary")
TABLE_EXCLUDED = ("sampleData", "tableProfile", "joins")
# the first release writing classificationTags / glossaryTags (the TaggableIndex line)
SPLIT_TAGS_SINCE = (1, 10)
DATA_ASSETS = ("table", "dashboard", "topic", "pipeline", "glossaryTerm", "database", "databaseSchema")
# setInheritedFields: child type -> (parent type, inherited fields)
INHERITED = {
    "table": ("databaseSchema", ("owners", "domains")),
    "databaseSchema": ("database", ("owners", "domains")),
    "database": ("databaseService", ("domains",)),
}
Lookup = Callable[[str], "OmEntity | None"]
# index classes without upstreamLineage (every other one writes it: SearchIndex.getLineageData)
WITHOUT_LINEAGE = (
    "user",
    "team",
    "tag",
    "classification",
    "glossary",
    "glossaryTerm",
    "domain",
    "dataProduct",
)


def _lineage(entity: OmEntity, lookup: Lookup | None) -> list[dict[str, Any]]:
    """getLineageData: LineageRepository.buildEntityLineageData for each upstream edge (nulls left
    out); an edge whose upstream entity is gone is skipped."""
    out = []
    for from_id, edge in sorted(entity.upstream):
        up = lookup(from_id) if lookup is not None else None
        if up is None:
            continue
        data: dict[str, Any] = {
            "docId": f"{up.fqn}--->{entity.fqn}",
            "docUniqueId": f"{up.id}--->{entity.id}",
            "fromEntity": {
                "id": up.id,
                "type": up.type,
                "fullyQualifiedName": up.fqn,
                "fqnHash": fqnlib.fqn_hash(up.fqn),
            },
        }
        pipeline = edge.get("pipeline")
        if pipeline:
            data["docId"] = f"{up.fqn}--->{pipeline['type']}:{pipeline['id']}--->{entity.fqn}"
            found = lookup(pipeline["id"]) if lookup is not None else None
            if found is not None:
                data["pipelineEntityType"] = pipeline["type"]
                data["pipeline"] = {
                    **{k: v for k, v in found.json.items() if k not in EXCLUDED},
                    "fqnHash": fqnlib.fqn_hash(found.fqn),
                }
        if edge.get("columnsLineage"):
            data["columns"] = edge["columnsLineage"]
        for key in ("description", "sqlQuery", "source", "createdAt", "createdBy", "updatedAt", "updatedBy"):
            if edge.get(key) is not None:
                data[key] = edge[key]
        if edge.get("assetEdges") is not None:
            data["assetEdges"] = edge["assetEdges"]
        out.append(data)
    return out


def _flatten(
    columns: list[dict[str, Any]], parent: str | None = None
) -> list[tuple[str, list[dict[str, Any]]]]:
    """ColumnIndex.parseColumns: (name, tags) for each column and nested child; a child's name
    is `<its parent's name>.<its name>` (quoted when it holds a dot)."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for col in columns:
        name = col["name"] if parent is None else parent + "." + fqnlib.quote_name(col["name"])
        out.append((name, list(col.get("tags") or [])))
        if col.get("children"):
            out.extend(_flatten(col["children"], col["name"]))
    return out


def all_tags(entity: OmEntity) -> list[dict[str, Any]]:
    """EntityRepository.getAllTags, then mergeChildTags: the entity's tags, then its columns'
    (nested ones included) or its tasks'; the first of each tagFQN kept."""
    labels = list(entity.json.get("tags") or [])
    for _, tags in _flatten(entity.json.get("columns") or []):
        labels.extend(tags)
    for task in entity.json.get("tasks") or []:
        labels.extend(task.get("tags") or [])
    seen: dict[str, dict[str, Any]] = {}
    for label in labels:
        seen.setdefault(label["tagFQN"], label)
    return list(seen.values())


def inherited(entity: OmEntity, lookup: Lookup | None, field: str) -> list[dict[str, Any]]:
    """The entity's owners or domains: its own, else its parent's (as the parent's doc has them,
    itself inherited or not), marked inherited."""
    own = list(entity.json.get(field) or [])
    if own or lookup is None or entity.type not in INHERITED:
        return own
    parent_type, fields = INHERITED[entity.type]
    parent = lookup(entity.parent_id or "")
    if field not in fields or parent is None or parent.type != parent_type:
        return []
    return [dict(ref, inherited=True) for ref in inherited(parent, lookup, field)]


def _with_display_name(ref: dict[str, Any] | None) -> dict[str, Any] | None:
    if ref is None:
        return None
    clone = dict(ref)
    clone["displayName"] = clone.get("displayName") or clone.get("name")
    return clone


def build_doc(entity: OmEntity, lookup: Lookup | None = None, release: str | None = None) -> dict[str, Any]:
    """The `_source` OM writes for this entity (its `_id` is `entity.id`); `lookup` finds an
    entity by id (its parent, whose owners and domains it inherits); `release`: a server older
    than 1.9 writes one `domain`, older than 1.5 one `owner` (None: the newest)."""
    doc: dict[str, Any] = orjson.loads(orjson.dumps(entity.json))
    every = all_tags(entity)
    tier = next((t for t in every if t["tagFQN"].split(".")[0].lower() == "tier"), None)
    tags = [t for t in every if t is not tier]
    common: dict[str, Any] = {
        "displayName": doc.get("displayName") or doc["name"],
        "entityType": entity.type,
        "owners": [_with_display_name(o) for o in inherited(entity, lookup, "owners")],
        "domains": [_with_display_name(d) for d in inherited(entity, lookup, "domains")],
        "followers": [f["id"] for f in doc.get("followers", [])],
        "totalVotes": max(
            int((doc.get("votes") or {}).get("upVotes", 0))
            - int((doc.get("votes") or {}).get("downVotes", 0)),
            0,
        ),
        "descriptionStatus": "COMPLETE" if doc.get("description") else "INCOMPLETE",
        "descriptionSources": {},
        "tagSources": {},
        "tierSources": {},
        "fqnParts": fqnlib.fqn_parts(entity.fqn),
        "deleted": bool(doc.get("deleted")),
    }
    if tier is not None:
        common["tier"] = tier
    doc.update(common)
    doc["tags"] = tags
    if entity.type in DATA_ASSETS:
        doc["tier"] = tier
    for ref_field in ("service", "database", "databaseSchema", "glossary", "classification"):
        if ref_field in doc:
            doc[ref_field] = _with_display_name(doc[ref_field])
    if entity.type == "table":
        names = [name for name, _ in _flatten(doc.get("columns", []))]
        doc["columnNames"] = names
        doc["columnNamesFuzzy"] = " ".join(names)
        doc["columnDescriptionStatus"] = (
            "COMPLETE" if all(c.get("description") for c in doc.get("columns", [])) else "INCOMPLETE"
        )
        doc["entityRelationship"] = []
        for key in TABLE_EXCLUDED:
            doc.pop(key, None)
    if entity.type not in WITHOUT_LINEAGE:
        doc["upstreamLineage"] = _lineage(entity, lookup)
    doc["fqnHash"] = fqnlib.fqn_hash(entity.fqn)
    for key in EXCLUDED:
        doc.pop(key, None)
    parts = tuple(int(p) for p in release.split("-")[0].split(".")) if release is not None else None
    if parts is None or parts >= SPLIT_TAGS_SINCE:  # ParseTags' tag FQNs by source, Tier included
        for field, source in (("classificationTags", "Classification"), ("glossaryTags", "Glossary")):
            doc[field] = [t["tagFQN"] for t in every if t.get("source") == source]
    if parts is not None:
        if parts < (1, 9):  # getCommonAttributesMap before the 1.9.0 migration: one domain
            domains = doc.pop("domains")
            doc["domain"] = domains[0] if domains else None
        if parts < (1, 5):
            owners = doc.pop("owners")
            doc["owner"] = owners[0] if owners else None
    return doc
