"""An entity type's plan compiles an aspect's generated code when a value of it is first
projected, not every aspect of the type at once (a triage's one dataset has a few of its 44)."""

from __future__ import annotations

from auditor.platforms.datahub.documents import aspect_projection
from auditor.platforms.datahub.documents.projection import _entity_plan, project_entity
from auditor.platforms.datahub.registry import loader
from auditor.platforms.datahub.registry.registry import Registry


def test_an_aspects_code_is_compiled_when_a_value_of_it_is_first_projected(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # a registry of its own (`Registry.load` is one a process): no aspect compiled by another test
    registry = loader._load_cached.__wrapped__(str(loader._wheel_schemas_dir().resolve()))
    assert registry is not Registry.load()
    built: list[str] = []
    build = aspect_projection._AspectCodegen.build

    def counted(self: aspect_projection._AspectCodegen):  # type: ignore[no-untyped-def]
        built.append(self.spec.name)
        return build(self)

    monkeypatch.setattr(aspect_projection._AspectCodegen, "build", counted)
    plan = _entity_plan(registry, "dataset")
    assert len(plan.aspects) > 10 and built == []
    urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.orders,PROD)"
    value = {"name": "orders", "description": "what was sold", "customProperties": {}, "tags": []}
    first = project_entity(registry, urn, {"datasetProperties": value})
    assert first.fields["name"] == "orders"
    assert "datasetProperties" in built and len(built) <= 2, built  # it, and the key from the urn
    again = project_entity(registry, urn, {"datasetProperties": {**value, "name": "sales"}})
    assert again.fields["name"] == "sales" and built.count("datasetProperties") == 1, built
