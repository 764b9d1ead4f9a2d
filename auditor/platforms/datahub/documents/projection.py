"""The entity doc and graph edges DataHub's consumer writes for one entity's aspect rows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditor.platforms.datahub.documents.aspect_projection import (
    ProjectionError,
    _aspect_plan,
    _AspectPlan,
    _decode,
)
from auditor.platforms.datahub.documents.compare import _same
from auditor.platforms.datahub.documents.emit import _OBJECT_FIELD_TYPES, Candidates, _aspect_fields
from auditor.platforms.datahub.documents.expected import ExpectedDocument, known_without
from auditor.platforms.datahub.documents.extract import _ABSENT, _kind, _Malformed
from auditor.platforms.datahub.registry.registry import EntitySpec, Registry
from auditor.platforms.datahub.urns import UrnError, entity_type, is_valid_urn, key_fields_from_urn

# fields every entity doc may hold that no aspect value predicts
SYSTEM_FIELDS = frozenset({"systemCreated", "runId"})
_EMPTY: frozenset[str] = frozenset()


# the relationship types the graph check compares and a reindex writes
COMPARED_EDGE_TYPES = frozenset({"DownstreamOf", "OwnedBy", "TaggedWith", "TermedWith", "IsPartOf"})


@dataclass(frozen=True)
class Edge:
    """One `graph_service_v1` edge."""

    source: str
    relationship_type: str
    destination: str


# --- the entity plan: what an entity type's aspects write, computed once per type ---------------


@dataclass(frozen=True)
class _EntityPlan:
    registry: Registry
    entity: EntitySpec
    aspects: Mapping[str, _AspectPlan]
    known: frozenset[str]
    shared: frozenset[str]  # fields with several writers (aspects or specs)
    # per aspect: its fields that must go through candidate merging (shared or sanitized)
    routed: Mapping[str, tuple[str, ...]]
    unpredictable: frozenset[str]
    multiset: frozenset[str]
    delete_values: Mapping[str, Any]
    field_aspects: Mapping[str, tuple[str, ...]]


_ENTITY_PLANS: dict[tuple[int, str], _EntityPlan] = {}


def _entity_plan(registry: Registry, type_name: str) -> _EntityPlan:
    key = (id(registry), type_name)
    plan = _ENTITY_PLANS.get(key)
    if plan is not None and plan.registry is registry:
        return plan
    plan = _build_entity_plan(registry, registry.entity(type_name))
    _ENTITY_PLANS[key] = plan
    return plan


def _build_entity_plan(registry: Registry, entity: EntitySpec) -> _EntityPlan:
    aspects = {name: _aspect_plan(registry.aspect(name)) for name in entity.aspects}
    writers, writes, delete_values, timeseries_written = _field_writers(aspects)
    unpredictable, multiset = _unpredictable_and_multiset(aspects)
    # timeseries aspects reach the doc through the timeseries pipeline, not the aspect table
    unpredictable |= timeseries_written
    known = frozenset(writers) | unpredictable | {"urn"}
    shared = frozenset(f for f, n in writes.items() if n > 1)
    routed = {
        name: tuple(
            sorted(
                (aspect_plan.fields & shared)
                | {s.field_name for s in aspect_plan.spec.searchable if s.sanitize_rich_text}
            )
        )
        for name, aspect_plan in aspects.items()
    }
    return _EntityPlan(
        registry=registry,
        entity=entity,
        aspects=aspects,
        known=known,
        shared=shared,
        routed=routed,
        unpredictable=frozenset(unpredictable),
        multiset=frozenset(multiset),
        delete_values=delete_values,
        field_aspects={f: tuple(a) for f, a in writers.items()},
    )


def _field_writers(
    aspects: Mapping[str, _AspectPlan],
) -> tuple[dict[str, list[str]], Counter[str], dict[str, Any], set[str]]:
    """Per doc field: the aspects writing it, how many specs write it, what a delete leaves
    there; and the fields timeseries aspects write."""
    writers: dict[str, list[str]] = {}
    writes: Counter[str] = Counter()
    delete_values: dict[str, Any] = {}
    timeseries_written: set[str] = set()
    for name, aspect_plan in aspects.items():
        spec = aspect_plan.spec
        for field_name, role in _aspect_fields(spec):
            writers.setdefault(field_name, [])
            if name not in writers[field_name]:
                writers[field_name].append(name)
            writes[field_name] += 1
            delete_values.setdefault(field_name, {"main": None, "has": False, "num": 0}[role])
            if spec.timeseries:
                timeseries_written.add(field_name)
    return writers, writes, delete_values, timeseries_written


def _unpredictable_and_multiset(aspects: Mapping[str, _AspectPlan]) -> tuple[set[str], set[str]]:
    """Fields no aspect value predicts (system fields, modified-at times, cross-entity
    references), and map-derived list fields (compared as multisets)."""
    unpredictable = set(SYSTEM_FIELDS)
    multiset: set[str] = set()
    for aspect_plan in aspects.values():
        spec = aspect_plan.spec
        for s in spec.searchable:
            if s.system_modified_at_field_name:
                unpredictable.add(s.system_modified_at_field_name)
            if s.is_map and s.field_type not in _OBJECT_FIELD_TYPES:
                multiset.add(s.field_name)
        for ref in spec.searchable_refs:
            unpredictable.add(ref.field_name)
    return unpredictable, multiset


# --- the entity doc -----------------------------------------------------------------------------


def _unknown_entity(urn: str, type_name: str, aspects: Mapping[str, Any]) -> ExpectedDocument:
    error = ProjectionError(urn, "", f"unknown entity type {type_name!r}")
    return ExpectedDocument(
        urn=urn,
        entity_type=type_name,
        fields={"urn": urn},
        ambiguous={},
        unpredictable=_EMPTY,
        known_fields=frozenset({"urn"}),
        multiset_fields=_EMPTY,
        delete_values={},
        field_aspects={},
        unknown_aspects=tuple(aspects),
        errors=(error,),
    )


def _rows_with_key(
    plan: _EntityPlan, urn: str, aspects: Mapping[str, Any]
) -> tuple[list[tuple[str, Any]], ProjectionError | None]:
    """The aspect rows, plus the key aspect read from the urn when no row holds it (and why the
    urn could not give it)."""
    items = list(aspects.items())
    key_name = plan.entity.key_aspect
    if key_name in aspects:
        return items, None
    try:
        items.append((key_name, key_fields_from_urn(plan.entity, urn)))
    except ValueError as exc:
        return items, ProjectionError(urn, key_name, f"urn does not fit the key: {exc}")
    return items, None


def _project_rows(
    plan: _EntityPlan,
    urn: str,
    items: list[tuple[str, Any]],
    errors: list[ProjectionError],
    broken: set[str],
) -> tuple[dict[str, Any], dict[str, list[Any]], list[str], bool]:
    """Every row's written fields: (fields, candidates of routed fields, unknown aspects, removed).

    A malformed row goes to `errors` and its fields to `broken`.
    """
    fields: dict[str, Any] = {"urn": urn}
    candidates: dict[str, list[Any]] = {}
    routed = plan.routed
    unknown: list[str] = []
    removed = False
    for name, raw in items:
        aspect_plan = plan.aspects.get(name)
        if aspect_plan is None:
            unknown.append(name)
            continue
        if aspect_plan.spec.timeseries:
            continue
        value = raw
        try:
            if not isinstance(value, dict):
                value = _decode(value)
                if not isinstance(value, dict):
                    raise _Malformed(f"the aspect value is {_kind(value)}, not a record")
            written = aspect_plan.run(value)
        except _Malformed as exc:
            errors.append(ProjectionError(urn, name, str(exc)))
            broken |= aspect_plan.fields
            continue
        if name == "status":
            removed = value.get("removed", False) is True
        for field_name in routed[name]:
            field_value = written.pop(field_name, _ABSENT)
            if field_value is _ABSENT:
                continue
            bucket = candidates.setdefault(field_name, [])
            if isinstance(field_value, Candidates):
                bucket.extend(field_value)
            else:
                bucket.append(field_value)
        fields.update(written)
    return fields, candidates, unknown, removed


def _merge_candidates(
    plan: _EntityPlan, fields: dict[str, Any], candidates: dict[str, list[Any]]
) -> dict[str, tuple[Any, ...]]:
    """A field whose writers agree gets their value (into `fields`); the others are returned:
    the ambiguous fields, each with its distinct candidates."""
    ambiguous: dict[str, tuple[Any, ...]] = {}
    for field_name, values in candidates.items():
        distinct: list[Any]
        if all(v is None or isinstance(v, (str, bool, int, float)) for v in values):
            # the common case (has-flags, names, platform): plain values dedupe exactly by hash
            # keyed by type too: True and 1 are different field values
            distinct = list({(type(v), v): v for v in values}.values())
            if len(distinct) > 1 and any(isinstance(v, float) for v in distinct):
                distinct = [
                    v for i, v in enumerate(distinct) if not any(_same(False, v, d) for d in distinct[:i])
                ]
        else:
            distinct = []
            for v in values:
                if not any(_same(field_name in plan.multiset, v, d) for d in distinct):
                    distinct.append(v)
        if len(distinct) == 1:
            fields[field_name] = distinct[0]
        else:
            ambiguous[field_name] = tuple(distinct)
    return ambiguous


def project_entity(
    registry: Registry, urn: str, aspects: Mapping[str, Any], withheld: frozenset[str] = _EMPTY
) -> ExpectedDocument:
    """The entity doc DataHub's consumer builds from these aspect rows (name -> value); the
    `withheld` fields (its release does not write them, its index's mapping lacks them) left out.

    The key aspect comes from its row when present, else from the urn. An aspect the
    registry does not give this entity type is listed in `unknown_aspects`; a malformed
    value is recorded in `errors` and its fields become unpredictable. Never raises for data.
    """
    try:
        type_name = entity_type(urn)
    except UrnError:
        type_name = ""
    if not registry.has_entity(type_name):
        return _unknown_entity(urn, type_name, aspects)
    plan = _entity_plan(registry, type_name)
    items, key_error = _rows_with_key(plan, urn, aspects)
    errors: list[ProjectionError] = []
    broken: set[str] = set()
    if key_error is not None:
        errors.append(key_error)
        broken |= plan.aspects[key_error.aspect].fields
    fields, candidates, unknown, removed = _project_rows(plan, urn, items, errors, broken)
    ambiguous = _merge_candidates(plan, fields, candidates)
    known = plan.known
    if withheld:  # a few pops, not a copy: this runs for every entity
        for field_name in withheld:
            fields.pop(field_name, None)
            ambiguous.pop(field_name, None)
        known = known_without(known, withheld)
    unpredictable = plan.unpredictable
    if broken:
        unpredictable = unpredictable | broken
        for field_name in broken:
            fields.pop(field_name, None)
            ambiguous.pop(field_name, None)
    return ExpectedDocument(
        urn=urn,
        entity_type=plan.entity.name,
        fields=fields,
        ambiguous=ambiguous,
        unpredictable=unpredictable,
        known_fields=known,
        multiset_fields=plan.multiset,
        delete_values=plan.delete_values,
        field_aspects=plan.field_aspects,
        removed=removed,
        unknown_aspects=tuple(unknown),
        errors=tuple(errors),
        present_aspects=frozenset(name for name, _ in items),
    )


# --- graph --------------------------------------------------------------------------------------


def expected_edges(registry: Registry, urn: str, aspects: Mapping[str, Any]) -> set[Edge]:
    """The `graph_service_v1` edges these aspect rows give (Relationship annotations).

    Malformed or unknown aspects give no edges; destinations Java cannot parse as urns are
    skipped, as GraphIndexUtils does.
    """
    try:
        type_name = entity_type(urn)
    except UrnError:
        return set()
    if not registry.has_entity(type_name):
        return set()
    plan = _entity_plan(registry, type_name)
    items, _ = _rows_with_key(plan, urn, aspects)
    edges: set[Edge] = set()
    for name, raw in items:
        aspect_plan = plan.aspects.get(name)
        if aspect_plan is None or aspect_plan.spec.timeseries or not aspect_plan.relationships:
            continue
        try:
            value = _decode(raw)
            if not isinstance(value, dict):
                continue
            found = [(rel.name, extract(value)) for rel, extract in aspect_plan.relationships]
        except _Malformed:
            continue
        for relationship, destinations in found:
            for destination in destinations:
                if isinstance(destination, str) and is_valid_urn(destination):
                    edges.add(Edge(urn, relationship, destination))
    return edges
