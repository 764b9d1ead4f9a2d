"""The sandbox's own aspect -> search-document projection: an explicit, hand-written table."""

# Written from the `Searchable` annotations of the wheel's .avsc files and the rules of
# DataHub's SearchDocumentTransformer (see the search-document reference), independently of
# the auditor's generic projection, so that the two can check each other. Only the aspects
# the generator produces (and the entity key aspects) are covered; an aspect missing from
# the table projects to nothing.

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

MAX_ARRAY_LENGTH = 1000  # elasticsearch.index.maxArrayLength
MAX_OBJECT_KEYS = 1000  # elasticsearch.index.maxObjectKeys
MAX_VALUE_LENGTH = 4096  # elasticsearch.index.maxValueLength: longer map values are left out
BROWSE_PATH_V2_DELIMITER = "\u241f"


class Kind(Enum):
    """How a spec's values land in the document."""

    SCALAR = "scalar"  # first value, or nothing
    ARRAY = "array"  # a path through `*`: always a list (maybe empty)
    MAP = "map"  # map<string,string> -> ["key=value", ...]
    MAP_ARRAY = "map_array"  # map<string, array> -> {key: [values]}
    BROWSE_PATH_V2 = "browse_path_v2"  # ids joined with U+241F, leading U+241F


@dataclass(frozen=True)
class SearchField:
    """One searchable spec: where the values are, the doc field, its has/num companions."""

    name: str
    path: str  # relative to the aspect, "*" steps into each array element
    kind: Kind = Kind.SCALAR
    value_type: str = "string"  # pegasus type of the leaf: string, boolean, int, long, enum
    has: str | None = None  # hasValuesFieldName
    num: str | None = None  # numValuesFieldName
    default: Any = None  # Pegasus default of a top-level scalar (applies when absent)


def scalar(
    name: str,
    path: str | None = None,
    value_type: str = "string",
    *,
    has: str | None = None,
    default: Any = None,
) -> SearchField:
    """A single-valued spec."""
    return SearchField(name, path or name, Kind.SCALAR, value_type, has=has, default=default)


def array(
    name: str, path: str, value_type: str = "string", *, has: str | None = None, num: str | None = None
) -> SearchField:
    """A spec whose path goes through at least one array."""
    return SearchField(name, path, Kind.ARRAY, value_type, has=has, num=num)


def string_map(name: str, path: str | None = None) -> SearchField:
    """A map<string,string> spec (customProperties)."""
    return SearchField(name, path or name, Kind.MAP, "map")


# ---------------------------------------------------------------- shared specs

CUSTOM_PROPERTIES = string_map("customProperties")
EXTERNAL_URL = scalar("externalUrl")


def _attribution(prefix: str, base: str) -> tuple[SearchField, ...]:
    return (
        array(f"{prefix}AttributionDates", f"{base}/attribution/time", "long"),
        array(f"{prefix}AttributionActors", f"{base}/attribution/actor"),
        array(f"{prefix}AttributionSources", f"{base}/attribution/source"),
    )


def _created_modified(
    created: str = "created/time", modified: str = "lastModified/time"
) -> tuple[SearchField, ...]:
    return (scalar("createdAt", created, "long"), scalar("lastModifiedAt", modified, "long"))


# ---------------------------------------------------------------- the table

SEARCH_FIELDS: dict[str, tuple[SearchField, ...]] = {
    # ----- key aspects
    "datasetKey": (
        scalar("platform"),
        scalar("id", "name"),
        scalar("origin", value_type="enum"),
    ),
    "chartKey": (scalar("tool", "dashboardTool"),),
    "dashboardKey": (scalar("tool", "dashboardTool"),),
    "dataJobKey": (scalar("dataFlow", "flow"), scalar("jobId")),
    "dataFlowKey": (scalar("orchestrator"), scalar("flowId"), scalar("cluster")),
    "containerKey": (),
    "domainKey": (),
    "tagKey": (scalar("id", "name"),),
    "glossaryTermKey": (scalar("id", "name"),),
    "corpUserKey": (scalar("ldap", "username"),),
    "corpGroupKey": (scalar("name"),),
    # ----- properties / info aspects
    "datasetProperties": (
        CUSTOM_PROPERTIES,
        EXTERNAL_URL,
        scalar("name"),
        scalar("qualifiedName"),
        scalar("description", has="hasDescription"),
        *_created_modified(),
    ),
    "chartInfo": (
        CUSTOM_PROPERTIES,
        EXTERNAL_URL,
        scalar("title"),
        scalar("description", has="hasDescription"),
        *_created_modified("lastModified/created/time", "lastModified/lastModified/time"),
        scalar("chartUrl"),
        scalar("type", value_type="enum"),
        scalar("access", value_type="enum"),
    ),
    "dashboardInfo": (
        CUSTOM_PROPERTIES,
        EXTERNAL_URL,
        scalar("title"),
        scalar("description", has="hasDescription"),
        *_created_modified("lastModified/created/time", "lastModified/lastModified/time"),
        scalar("dashboardUrl"),
        scalar("access", value_type="enum"),
    ),
    "dataJobInfo": (
        CUSTOM_PROPERTIES,
        EXTERNAL_URL,
        scalar("name"),
        scalar("description", has="hasDescription"),
        *_created_modified(),
        scalar("env", value_type="enum"),
    ),
    "dataJobInputOutput": (
        array("inputs", "inputDatasets/*", num="numInputDatasets"),
        array("inputDatasetEdges", "inputDatasetEdges/*/destinationUrn", num="numInputDatasets"),
        array("outputs", "outputDatasets/*", num="numOutputDatasets"),
        array("outputDatasetEdges", "outputDatasetEdges/*/destinationUrn", num="numOutputDatasets"),
        array("inputFields", "inputDatasetFields/*", num="numInputFields"),
        array("outputFields", "outputDatasetFields/*", num="numOutputFields"),
        array("fineGrainedUpstreams", "fineGrainedLineages/*/upstreams/*", has="hasFineGrainedUpstreams"),
    ),
    "dataFlowInfo": (
        CUSTOM_PROPERTIES,
        EXTERNAL_URL,
        scalar("name"),
        scalar("description", has="hasDescription"),
        scalar("project"),
        *_created_modified(),
        scalar("env", value_type="enum"),
    ),
    "containerProperties": (
        CUSTOM_PROPERTIES,
        EXTERNAL_URL,
        scalar("name"),
        scalar("qualifiedName"),
        scalar("description", has="hasDescription"),
        scalar("env", value_type="enum"),
        *_created_modified(),
    ),
    "domainProperties": (
        CUSTOM_PROPERTIES,
        scalar("name"),
        scalar("description", has="hasDescription"),
        scalar("createdTime", "created/time", "long"),
        scalar("parentDomain", has="hasParentDomain"),
    ),
    "tagProperties": (
        scalar("name"),
        scalar("description", has="hasDescription"),
    ),
    "glossaryTermInfo": (
        CUSTOM_PROPERTIES,
        scalar("id"),
        scalar("name"),
        scalar("definition", has="hasDescription"),
        scalar("parentNode", has="hasParentNode"),
        scalar("termSource"),
        scalar("sourceRef"),
    ),
    "corpUserInfo": (
        CUSTOM_PROPERTIES,
        scalar("active", value_type="boolean"),
        scalar("displayName"),
        scalar("email"),
        scalar("title"),
        scalar("managerLdap", "managerUrn"),
        scalar("fullName"),
        scalar("system", value_type="boolean", default=False),
        scalar("isSupportUser", value_type="boolean"),
    ),
    "corpUserEditableInfo": (
        array("teams", "teams/*"),
        array("skills", "skills/*"),
        scalar("displayName"),
    ),
    "corpGroupInfo": (
        scalar("displayName"),
        scalar("description", has="hasDescription"),
        scalar("createdTime", "created/time", "long"),
    ),
    # ----- common aspects
    "ownership": (
        array("owners", "owners/*/owner", has="hasOwners"),
        *_attribution("owner", "owners/*"),
        SearchField("ownerTypes", "ownerTypes", Kind.MAP_ARRAY, "map"),
    ),
    "globalTags": (
        array("tags", "tags/*/tag", has="hasTags"),
        *_attribution("tag", "tags/*"),
    ),
    "glossaryTerms": (
        array("glossaryTerms", "terms/*/urn", has="hasGlossaryTerms"),
        *_attribution("term", "terms/*"),
    ),
    "schemaMetadata": (
        array("fieldPaths", "fields/*/fieldPath"),
        array("fieldDescriptions", "fields/*/description", has="hasDescription"),
        array("fieldLabels", "fields/*/label"),
        array("fieldTags", "fields/*/globalTags/tags/*/tag", has="hasTags"),
        *_attribution("fieldTag", "fields/*/globalTags/tags/*"),
        array("fieldGlossaryTerms", "fields/*/glossaryTerms/terms/*/urn", has="hasGlossaryTerms"),
        *_attribution("fieldTerm", "fields/*/glossaryTerms/terms/*"),
    ),
    "upstreamLineage": (
        array("upstreams", "upstreams/*/dataset", has="hasUpstreams"),
        array("fineGrainedUpstreams", "fineGrainedLineages/*/upstreams/*", has="hasFineGrainedUpstreams"),
    ),
    "status": (
        scalar("removed", value_type="boolean", default=False),
        scalar("lifecycleStage"),
    ),
    "browsePathsV2": (SearchField("browsePathV2", "path/*/id", Kind.BROWSE_PATH_V2),),
    "container": (scalar("container", has="hasContainer"),),
    "subTypes": (array("typeNames", "typeNames/*"),),
    "domains": (
        array("domains", "domains/*", has="hasDomain"),
        *_attribution("domain", "domainAssociations/*"),
    ),
}

PROJECTED_ASPECTS = frozenset(SEARCH_FIELDS)


# ---------------------------------------------------------------- value extraction


def walk_path(node: Any, parts: list[str]) -> list[Any]:
    """Values at a path; `*` flattens arrays; elements lacking the rest of the path drop out."""
    if node is None:
        return []
    if not parts:
        return [node]
    head, rest = parts[0], parts[1:]
    if head == "*":
        if not isinstance(node, list):
            return []
        found: list[Any] = []
        for element in node:
            found.extend(walk_path(element, rest))
        return found
    if not isinstance(node, dict) or head not in node:
        return []
    return walk_path(node[head], rest)


def values_at(aspect: dict[str, Any], spec: SearchField) -> list[Any]:
    """Extracted values of one spec (Pegasus default when a top-level scalar is absent)."""
    parts = spec.path.split("/")
    found = walk_path(aspect, parts)
    if not found and spec.default is not None and len(parts) == 1 and aspect.get(parts[0]) is None:
        return [spec.default]
    if spec.kind is Kind.MAP:
        mapping = found[0] if found else {}
        return [f"{k}={v}" for k, v in mapping.items() if len(str(v)) < MAX_VALUE_LENGTH]
    return found


def _node(value: Any) -> Any:
    """Value as written to `_source`: booleans and numbers as is, text via toString, "" -> null."""
    if isinstance(value, bool | int | float):
        return value
    text = str(value)
    return text if text else None


def _has_value(spec: SearchField, values: list[Any]) -> bool:
    if spec.value_type == "boolean":
        return bool(values[0]) if values else False
    if spec.value_type == "string":
        return bool(values) and str(values[0]) != ""
    return bool(values)


def _num_values(spec: SearchField, values: list[Any]) -> int:
    if spec.value_type in ("int", "long"):
        return int(values[0]) if values else 0
    return len(values)


def _map_array(values: Any) -> dict[str, list[str]]:
    """MAP_ARRAY: Java renders each entry as `key=[a, b]` and parses it back."""
    doc: dict[str, list[str]] = {}
    mapping = values if isinstance(values, dict) else {}
    for key, items in list(mapping.items())[:MAX_OBJECT_KEYS]:
        rendered = "[" + ", ".join(str(i) for i in (items or [])) + "]"
        if len(rendered) >= MAX_VALUE_LENGTH:
            continue
        parts = f"{key}={rendered}".split("=")
        inner = parts[1][1:-1] if len(parts) > 1 else ""
        doc[parts[0]] = [v for v in inner.split(", ") if v]
    return doc


def _browse_path_v2(values: list[Any]) -> str:
    ids = [v for v in values[:MAX_ARRAY_LENGTH] if isinstance(v, str)]
    joined = BROWSE_PATH_V2_DELIMITER.join(ids)
    if joined and not joined.startswith(BROWSE_PATH_V2_DELIMITER):
        joined = BROWSE_PATH_V2_DELIMITER + joined
    return joined


def _apply(doc: dict[str, Any], spec: SearchField, aspect: dict[str, Any]) -> None:
    if spec.kind is Kind.MAP_ARRAY:
        found = walk_path(aspect, spec.path.split("/"))
        doc[spec.name] = _map_array(found[0] if found else {})
        return
    values = values_at(aspect, spec)
    if spec.has:
        doc[spec.has] = _has_value(spec, values)
    if spec.num:
        doc[spec.num] = _num_values(spec, values)
    if spec.kind is Kind.BROWSE_PATH_V2:
        doc[spec.name] = _browse_path_v2(values)
    elif spec.kind in (Kind.ARRAY, Kind.MAP):
        doc[spec.name] = [_node(v) for v in values[:MAX_ARRAY_LENGTH]]
    elif values:
        doc[spec.name] = _node(values[0])


def _apply_delete(doc: dict[str, Any], spec: SearchField) -> None:
    if spec.has:
        doc[spec.has] = False
    if spec.num:
        doc[spec.num] = 0
    doc[spec.name] = None


def project(
    aspect_name: str, aspect: dict[str, Any] | None, *, for_delete: bool = False
) -> dict[str, Any] | None:
    """Fields one aspect contributes to its entity's doc; None if it contributes none.

    `for_delete=True` gives what DataHub writes when the aspect is deleted: every field
    null, has-fields false, num-fields 0.
    """
    specs = SEARCH_FIELDS.get(aspect_name)
    if not specs:
        return None
    doc: dict[str, Any] = {}
    for spec in specs:
        if for_delete:
            _apply_delete(doc, spec)
        else:
            _apply(doc, spec, aspect or {})
    return doc


def search_document(
    urn: str, aspect_name: str, aspect: dict[str, Any] | None, *, for_delete: bool = False
) -> dict[str, Any] | None:
    """`urn` plus the aspect's fields: the partial doc the MAE consumer upserts."""
    fields = project(aspect_name, aspect, for_delete=for_delete)
    if fields is None:
        return None
    return {"urn": urn, **fields}


def document_fields(aspects: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Merge the projections of several aspects in order (later aspects win shared fields)."""
    doc: dict[str, Any] = {}
    for aspect_name, aspect in aspects:
        doc.update(project(aspect_name, aspect) or {})
    return doc
