"""OpenMetadata entities as its server holds them: the JSON, references, tag labels.

An `OmEntity` is the full entity (as the API returns it: owners, tags, service); `stored_json`
is what EntityRepository.store writes to the table: OM keeps owners, tags, followers, domains,
href and the service reference out of the stored JSON (they live in entity_relationship and
tag_usage) and column tags out of table columns.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

from sandbox.openmetadata import fqn as fqnlib
from sandbox.openmetadata.model import EntityType, entity_type

ADMIN = "admin"
# fields EntityRepository.store (and each repository's storeEntity) keep out of the stored JSON
NOT_STORED = (
    "owners",
    "tags",
    "followers",
    "domains",
    "dataProducts",
    "href",
    "votes",
    "service",
    "children",
    "experts",
    "reviewers",
    "teams",
    "users",
    "usageSummary",
)


def now_ms() -> int:
    """Epoch milliseconds, as OM's updatedAt."""
    return int(time.time() * 1000)


def next_version(version: float) -> float:
    """A minor change: version + 0.1 (EntityUpdater.nextVersion)."""
    return round(version + 0.1, 1)


@dataclass
class OmEntity:
    """One entity as the server knows it: its type, the full JSON, and its parent's id."""

    type: str
    json: dict[str, Any]
    parent_id: str | None = None
    children: list[str] = field(default_factory=list)
    # its upstream lineage edges as entity_relationship holds them (relation upstream, to it):
    # (the upstream entity's id, the edge's LineageDetails)
    upstream: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.json["id"])

    @property
    def fqn(self) -> str:
        return str(self.json["fullyQualifiedName"])

    @property
    def name(self) -> str:
        return str(self.json["name"])

    @property
    def et(self) -> EntityType:
        return entity_type(self.type)

    @property
    def fqn_hash(self) -> str:
        return fqnlib.fqn_hash(self.fqn)

    @property
    def deleted(self) -> bool:
        return bool(self.json.get("deleted"))

    def reference(self) -> dict[str, Any]:
        """EntityReference: id, type, name, fullyQualifiedName, (description, displayName), deleted."""
        ref: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "name": self.name,
            "fullyQualifiedName": self.fqn,
        }
        if self.json.get("description"):
            ref["description"] = self.json["description"]
        if self.json.get("displayName"):
            ref["displayName"] = self.json["displayName"]
        ref["deleted"] = self.deleted
        return ref

    def stored_json(self) -> dict[str, Any]:
        """The JSON OM writes to the entity's table (relationship fields left out)."""
        stored = {k: v for k, v in self.json.items() if k not in NOT_STORED}
        stored = orjson.loads(orjson.dumps(stored))
        columns = list(stored.get("columns", []))
        while columns:  # column tags live in tag_usage (nested columns' too)
            column = columns.pop(0)
            column.pop("tags", None)
            columns.extend(column.get("children") or [])
        for task in stored.get("tasks", []):  # PipelineRepository stores tasks without tags
            task.pop("tags", None)
        return stored


def new_entity_json(
    kind: str,
    name: str,
    parent: OmEntity | None,
    *,
    entity_id: str | None = None,
    description: str | None = None,
    updated_at: int | None = None,
    updated_by: str = ADMIN,
    **extra: Any,
) -> dict[str, Any]:
    """The JSON of a new entity at version 0.1 (as the create API builds it)."""
    fqn = fqnlib.build(name) if parent is None else parent.fqn + "." + fqnlib.quote_name(name)
    doc: dict[str, Any] = {"id": entity_id or str(uuid.uuid4()), "name": name, "fullyQualifiedName": fqn}
    if description is not None:
        doc["description"] = description
    doc.update({"version": 0.1, "updatedAt": updated_at or now_ms(), "updatedBy": updated_by})
    doc.update(extra)
    doc["deleted"] = False
    return doc


def tag_label(
    tag_fqn: str,
    source: str = "Classification",
    label_type: str = "Manual",
    state: str = "Confirmed",
    description: str | None = None,
) -> dict[str, Any]:
    """TagLabel as OM returns it (type/tagLabel.json)."""
    label: dict[str, Any] = {"tagFQN": tag_fqn, "name": fqnlib.split(tag_fqn)[-1]}
    if description:
        label["description"] = description
    label.update({"source": source, "labelType": label_type, "state": state})
    return label


def column(
    table_fqn: str, name: str, data_type: str, position: int, description: str | None = None
) -> dict[str, Any]:
    """A table column (type/column in table.json)."""
    col: dict[str, Any] = {
        "name": name,
        "dataType": data_type,
        "dataTypeDisplay": data_type.lower(),
        "fullyQualifiedName": table_fqn + "." + fqnlib.quote_name(name),
        "ordinalPosition": position,
    }
    if description:
        col["description"] = description
    col["tags"] = []
    return col
