"""What OpenMetadata derives into a search document beyond the entity's own JSON.

Read from OpenMetadata's sources (the newest `search/indexes/*Index` classes and the entity
repositories), written here on its own:

- Child tags. A document's `tags` are `EntityRepository.getAllTags` (the entity's tags, then
  its children's: table columns, pipeline tasks, topic schema fields, container and data
  model columns, ML model features and their sources, search index fields) with the first
  `Tier.*` tag lifted into `tier` (`ParseTags`); `TableIndex` and `TopicIndex` also flatten
  nested columns / schema fields and merge their tags (`TaggableIndex.mergeChildTags`). The
  children's tags live in `tag_usage` under the child's FQN (the entity's FQN plus the
  child's name), so their hash starts with the entity's own hash and a dot.
  Dashboards and charts are separate entities: a dashboard's document holds its own tags only.
- Inherited owners and domains (`setInheritedFields`): a table or stored procedure without
  owners takes its schema's, a schema its database's (the parent already holding what it
  inherited); domains likewise, and a database takes its service's domains. An inherited
  reference carries `inherited: true`.
- Column names (`columnNames`, `columnNamesFuzzy`, `columnDescriptionStatus`) for a table,
  `fieldNames` / `fieldNamesFuzzy` for a topic, and the fields each index class leaves out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, TypeGuard

from auditor.platforms.openmetadata.relations import has_lineage

# entity types whose document merges the tags of children embedded in the entity
CHILD_TAGGED = frozenset(
    {"table", "pipeline", "topic", "container", "dashboardDataModel", "mlmodel", "searchIndex"}
)
# entity type -> (the parent it inherits from, what it inherits)
INHERITS: dict[str, tuple[str, tuple[str, ...]]] = {
    "table": ("databaseSchema", ("owners", "domains")),
    "storedProcedure": ("databaseSchema", ("owners", "domains")),
    "databaseSchema": ("database", ("owners", "domains")),
    "database": ("databaseService", ("domains",)),
}
# fields an index class leaves out of its document, besides SearchIndex's defaults
EXCLUDED_BY_TYPE: dict[str, tuple[str, ...]] = {
    "table": (
        "sampleData",
        "tableProfile",
        "joins",
        "tableProfilerConfig",
        "profile",
        "location",
        "queries",
        "tests",
    ),
    "topic": ("sampleData",),
}
_REFERENCES = ("service", "database", "databaseSchema")
# what `isinstance` tests a JSON object against: dict first (a plain type test), the ABC after it
# (an ABC's test costs ten times more, and the hot paths make it for every label and child)
MAPPING = (dict, Mapping)


def is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """`isinstance(value, MAPPING)`, its common answers first: a dict by its type, None without the
    ABC's test (a Python-level call each: the keys asked it of every absent field)."""
    return type(value) is dict or (value is not None and isinstance(value, Mapping))


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, MAPPING)]


@lru_cache(maxsize=4096)  # bounded: column names, services and schemas repeat from row to row
def part_hash(part: str) -> str:
    """The MD5 hex of one part of a fully qualified name (FullyQualifiedName.buildHash)."""
    return hashlib.md5(part.encode("utf-8"), usedforsecurity=False).hexdigest()


def _tagged(items: Any, into: list[Mapping[str, Any]], depth: int = 0, nested: bool = True) -> None:
    """The inline tag labels of these children and (`nested`) of their children, depth-first;
    bounded depth. Only the labels are gathered: the scan walks every row's children."""
    if not isinstance(items, list):
        return
    for item in items:
        if isinstance(item, MAPPING):
            tags = item.get("tags")
            if tags:
                into += _dicts(tags)
            if nested:
                children = item.get("children")
                if children and depth < 64:
                    _tagged(children, into, depth + 1)


_CHILD_KEYS = ("columns", "tasks", "messageSchema", "dataModel", "mlFeatures", "fields")  # `_tagged`'s


def has_children(entity: Mapping[str, Any]) -> bool:
    """The entity has a field that `child_hashes` walks (it may still be empty)."""
    return any(key in entity for key in _CHILD_KEYS)


def child_hashes(entity: Mapping[str, Any], own_hash: str) -> list[str]:
    """The FQN hashes of the children whose tags the document merges (tag_usage targets): a
    child's FQN is its parent's plus its quoted name, so its hash is the parent's hash, a dot
    and the MD5 of that name (FullyQualifiedName.buildHash, part by part)."""
    out: list[str] = []

    def walk(items: Any, parent: str, depth: int) -> None:
        for item in _dicts(items):
            name = item.get("name")
            mine = parent + (_child_part(name) if type(name) is str else _child_part(str(name or "")))
            out.append(mine)
            children = item.get("children")
            if children and depth < 64:
                walk(children, mine, depth + 1)

    walk(entity.get("columns"), own_hash, 0)
    walk(entity.get("tasks"), own_hash, 64)
    schema = entity.get("messageSchema")
    if is_map(schema):
        walk(schema.get("schemaFields"), own_hash, 0)
    model = entity.get("dataModel")
    if is_map(model):
        walk(model.get("columns"), own_hash, 0)
    walk(entity.get("mlFeatures"), own_hash, 64)
    walk(entity.get("fields"), own_hash, 0)
    return out


@lru_cache(maxsize=4096)  # a table's columns are named alike from row to row
def _child_part(name: str) -> str:
    """A child's part of its FQN hash: a dot and the MD5 of its quoted name."""
    return "." + part_hash(quote_name(name))


def inline_child_labels(entity: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Tag labels a writer kept inline on the entity's children (OpenMetadata itself keeps
    them in tag_usage); they count among the document's tags as the children's do."""
    if not has_children(entity):
        return []  # most entities have no children to walk (the scan asks for every row)
    out: list[Mapping[str, Any]] = []
    _tagged(entity.get("columns"), out)
    _tagged(entity.get("tasks"), out, nested=False)
    schema = entity.get("messageSchema")
    if is_map(schema):
        _tagged(schema.get("schemaFields"), out)
    model = entity.get("dataModel")
    if is_map(model):
        _tagged(model.get("columns"), out)
    for feature in _dicts(entity.get("mlFeatures")):
        _tagged([feature], out, nested=False)
        _tagged(feature.get("featureSources"), out, nested=False)
    _tagged(entity.get("fields"), out)
    return out


def quote_name(name: str) -> str:
    """FullyQualifiedName.quoteName: a name holding a dot is written in double quotes."""
    return f'"{name}"' if "." in name and not (name.startswith('"') and name.endswith('"')) else name


def flattened_names(items: Any, parent: str | None = None, depth: int = 0) -> list[str]:
    """ColumnIndex.parseColumns' names: `parent.child` for a nested one, where parent is the
    direct parent's own name (as OpenMetadata passes it down)."""
    out: list[str] = []
    for item in _dicts(items):
        name = str(item.get("name") or "")
        out.append(f"{parent}.{quote_name(name)}" if parent else name)
        if depth < 64 and item.get("children"):
            out.extend(flattened_names(item.get("children"), name, depth + 1))
    return out


def unique_refs(refs: Any) -> list[Mapping[str, Any]]:
    """References without repeats (by id, else type and name), first one kept."""
    out: dict[str, Mapping[str, Any]] = {}
    for ref in _dicts(refs):
        out.setdefault(str(ref.get("id") or f"{ref.get('type')}:{ref.get('name')}"), ref)
    return list(out.values())


def place_child_tags(doc: dict[str, Any], labels: list[dict[str, Any]], fqn_hash: Any) -> None:
    """Put each child's tag_usage labels back on the child (a column, task or field whose
    fullyQualifiedName hashes to the label's target), as the entity OpenMetadata indexes holds
    them: its stored JSON keeps children without tags, the indexed one gives each its list
    (empty when it has none). Copies the children it changes."""
    wanted: dict[str, list[dict[str, Any]]] = {}
    for label in labels:
        target = label.get("target")
        if target:
            wanted.setdefault(str(target), []).append({k: v for k, v in label.items() if k != "target"})

    def walk(items: Any, depth: int = 0) -> Any:
        if not isinstance(items, list):
            return items
        out = []
        for item in items:
            if isinstance(item, MAPPING):
                item = dict(item)
                fqn = item.get("fullyQualifiedName")
                found = wanted.get(fqn_hash(str(fqn))) if isinstance(fqn, str) and fqn else None
                have = {str(t.get("tagFQN")) for t in _dicts(item.get("tags"))}
                more = [t for t in found or () if str(t.get("tagFQN")) not in have]
                if isinstance(fqn, str) and fqn:
                    item["tags"] = [*_dicts(item.get("tags")), *more]
                if depth < 64 and isinstance(item.get("children"), list):
                    item["children"] = walk(item["children"], depth + 1)
            out.append(item)
        return out

    for key in ("columns", "tasks", "fields", "mlFeatures"):
        if isinstance(doc.get(key), list):
            doc[key] = walk(doc[key])
    for outer, inner in (("messageSchema", "schemaFields"), ("dataModel", "columns")):
        if isinstance(doc.get(outer), MAPPING) and isinstance(doc[outer].get(inner), list):
            doc[outer] = {**doc[outer], inner: walk(doc[outer][inner])}


def with_display_name(ref: Any) -> Any:
    """getEntityWithDisplayName: a reference with its displayName (its name when it has none)."""
    if not isinstance(ref, MAPPING):
        return ref
    out = dict(ref)
    out["displayName"] = out.get("displayName") or out.get("name")
    return out


def enrich(doc: dict[str, Any], entity: Mapping[str, Any], entity_type: str) -> dict[str, Any]:
    """The type's own fields (TableIndex, TopicIndex) and the fields its index leaves out."""
    for key in EXCLUDED_BY_TYPE.get(entity_type, ()):
        doc.pop(key, None)
    for key in _REFERENCES:
        if isinstance(doc.get(key), MAPPING):
            doc[key] = with_display_name(doc[key])
    if has_lineage(entity_type):  # the lineage getLineageData finds, empty when there is none
        doc.setdefault("upstreamLineage", [])
    if entity_type == "table":  # TableIndex: its foreign keys' relationships, empty when none
        doc.setdefault("entityRelationship", [])
    if entity_type == "table" and isinstance(entity.get("columns"), list):
        names = flattened_names(entity.get("columns"))
        doc["columnNames"] = names
        doc["columnNamesFuzzy"] = " ".join(names)
        complete = all(c.get("description") for c in _dicts(entity.get("columns")))
        doc["columnDescriptionStatus"] = "COMPLETE" if complete else "INCOMPLETE"
    schema = entity.get("messageSchema")
    if entity_type == "topic" and isinstance(schema, MAPPING) and _dicts(schema.get("schemaFields")):
        names = flattened_names(schema.get("schemaFields"))
        doc["fieldNames"] = names
        doc["fieldNamesFuzzy"] = " ".join(names)
    return doc
