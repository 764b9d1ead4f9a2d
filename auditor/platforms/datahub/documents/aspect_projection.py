"""The doc fields one aspect value writes: its compiled plan (cached per spec) and project_aspect."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from auditor.core.json_guard import loads as guarded_loads
from auditor.platforms.datahub.documents.aspect_codegen import _AspectCodegen
from auditor.platforms.datahub.documents.emit import _aspect_dups, _aspect_fields, _compile_emitter
from auditor.platforms.datahub.documents.extract import _compile_extractor, _kind, _Malformed
from auditor.platforms.datahub.registry.registry import AspectSpec, RelationshipSpec


class ProjectionError(Exception):
    """One aspect value cannot be projected (not a record, a value of the wrong type, ...)."""

    def __init__(self, urn: str, aspect: str, reason: str) -> None:
        super().__init__(f"{urn} {aspect}: {reason}")
        self.urn = urn
        self.aspect = aspect
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        return (ProjectionError, (self.urn, self.aspect, self.reason))


@dataclass
class _AspectPlan:
    spec: AspectSpec
    # generated: value -> written fields; compiled on its first value (`_compiled_when_run`)
    run: Callable[[dict[str, Any]], dict[str, Any]]
    relationships: tuple[tuple[RelationshipSpec, Callable[[Any], list[Any]]], ...]
    fields: frozenset[str]  # every doc field this aspect writes


def _reference_run(spec: AspectSpec) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The closure-per-spec projector: slower, kept as the reference the generated code must
    match (tests compare both)."""
    dups = _aspect_dups(spec)
    writers = tuple((_compile_extractor(s, s.value_type), _compile_emitter(s, dups)) for s in spec.searchable)

    def run(value: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for extract, emit in writers:
            emit(extract(value), out)
        return out

    return run


def _compile_aspect(spec: AspectSpec) -> _AspectPlan:
    relationships = tuple((r, _compile_extractor(r, "string")) for r in spec.relationships)
    fields = frozenset(name for name, _ in _aspect_fields(spec))
    plan = _AspectPlan(spec, _unbuilt, relationships, fields)
    plan.run = _compiled_when_run(plan)
    return plan


def _unbuilt(value: dict[str, Any]) -> dict[str, Any]:
    raise AssertionError("an aspect plan's code is set when the plan is made")


def _compiled_when_run(plan: _AspectPlan) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The aspect's code generated and compiled when it first projects a value, then in its
    plan's place. An entity plan knows every aspect of its type (44 for a dataset) while one
    entity's rows hold a few: a triage compiled all of them (0.27 s of a 2.5 s profiled run)."""

    def first(value: dict[str, Any]) -> dict[str, Any]:
        built = _AspectCodegen(plan.spec).build()
        plan.run = built  # every later value: the compiled code, no step between
        return built(value)

    return first


_ASPECT_PLANS: dict[int, _AspectPlan] = {}


def _aspect_plan(spec: AspectSpec) -> _AspectPlan:
    plan = _ASPECT_PLANS.get(id(spec))
    if plan is None or plan.spec is not spec:
        plan = _ASPECT_PLANS[id(spec)] = _compile_aspect(spec)
    return plan


def _run(plan: _AspectPlan, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Malformed(f"the aspect value is {_kind(value)}, not a record")
    return plan.run(value)


def project_aspect(spec: AspectSpec, value: dict[str, Any]) -> dict[str, Any]:
    """The fields one upsert of this aspect writes into the entity doc (besides `urn`).

    A scalar with no value is left out (the upsert does not touch it); `""` becomes None;
    has/num fields are always there. A field two specs of the aspect both write holds a
    `Candidates` tuple. Raises ProjectionError (urn "") for a malformed value.
    """
    try:
        return _run(_aspect_plan(spec), _decode(value))
    except _Malformed as exc:
        raise ProjectionError("", spec.name, str(exc)) from None


def _decode(value: Any) -> Any:
    """An aspect value as stored (JSON text or bytes) or already decoded -> the decoded value."""
    if isinstance(value, (str, bytes, bytearray)):
        try:
            return guarded_loads(value)
        except ValueError as exc:
            raise _Malformed(f"not JSON: {exc}") from None
    return value
