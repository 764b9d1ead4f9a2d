"""The search document of an entity, built as OM's search index builders build it.

SearchIndex.buildSearchIndexDoc: the entity's JSON (the full entity, owners and tags included)
plus getCommonAttributesMap (displayName, entityType, owners with displayName, domains,
followers, totalVotes, descriptionStatus, fqnParts, deleted as a boolean, tier), the type's
own fields (TableIndex: columnNames, service/database/databaseSchema references, ...), then
fqnHash, then DEFAULT_EXCLUDED_FIELDS removed (changeDescription, votes, connection,
changeSummary, incrementalChangeDescription). This is the sandbox's own builder: the auditor
has its own, and the two must agree only because both follow OM.
"""

from __future__ import annotations

from typing import Any

import orjson

from sandbox.openmetadata import fqn as fqnlib
from sandbox.openmetadata.entities import OmEntity

EXCLUDED = ("changeDescription", "votes", "incrementalChangeDescription", "connection",
            "changeSummary")
TABLE_EXCLUDED = ("sampleData", "tableProfile", "joins")
DATA_ASSETS = ("table", "dashboard", "topic", "pipeline", "glossaryTerm", "database",
               "databaseSchema")


def _with_display_name(ref: dict[str, Any] | None) -> dict[str, Any] | None:
    if ref is None:
        return None
    clone = dict(ref)
    clone["displayName"] = clone.get("displayName") or clone.get("name")
    return clone


def build_doc(entity: OmEntity) -> dict[str, Any]:
    """The `_source` OM writes for this entity (its `_id` is `entity.id`)."""
    doc: dict[str, Any] = orjson.loads(orjson.dumps(entity.json))
    tags = [t for t in doc.get("tags", []) if not t["tagFQN"].startswith("Tier.")]
    tier = next((t for t in doc.get("tags", []) if t["tagFQN"].startswith("Tier.")), None)
    common: dict[str, Any] = {
        "displayName": doc.get("displayName") or doc["name"],
        "entityType": entity.type,
        "owners": [_with_display_name(o) for o in doc.get("owners", [])],
        "domains": [_with_display_name(d) for d in doc.get("domains", [])],
        "followers": [f["id"] for f in doc.get("followers", [])],
        "totalVotes": 0,
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
    if entity.type in DATA_ASSETS:
        doc["tags"] = tags
        doc["tier"] = tier
    for ref_field in ("service", "database", "databaseSchema", "glossary", "classification"):
        if ref_field in doc:
            doc[ref_field] = _with_display_name(doc[ref_field])
    if entity.type == "table":
        names = [c["name"] for c in doc.get("columns", [])]
        doc["columnNames"] = names
        doc["columnNamesFuzzy"] = " ".join(names)
        doc["columnDescriptionStatus"] = (
            "COMPLETE" if all(c.get("description") for c in doc.get("columns", []))
            else "INCOMPLETE")
        doc["upstreamLineage"] = []
        doc["entityRelationship"] = []
        for key in TABLE_EXCLUDED:
            doc.pop(key, None)
    doc["fqnHash"] = fqnlib.fqn_hash(entity.fqn)
    for key in EXCLUDED:
        doc.pop(key, None)
    return doc
