"""The entity registry read from the wheel's .avsc files, checked against known facts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from auditor.platforms.datahub.naming import entity_index
from auditor.platforms.datahub.registry.loader import load_registry
from auditor.platforms.datahub.registry.registry import Registry, RegistryError
from auditor.platforms.datahub.urns import UrnError, entity_type

CASES = json.loads((Path(__file__).parent / "data" / "registry_cases.json").read_text())


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.load()


def _spec(registry: Registry, aspect: str, path: str) -> Any:
    found = [s for s in registry.aspect(aspect).searchable if s.path_spec == path]
    assert len(found) <= 1
    return found[0] if found else None


def test_counts(registry: Registry) -> None:
    counts = CASES["counts"]
    assert len(registry.entity_names) == counts["entities"]
    assert len(registry.aspect_names) == counts["aspects"]
    assert sum(a.timeseries for a in registry.aspects()) == counts["timeseries_aspects"]
    keys = [a for a in registry.aspects() if a.key_for_entity]
    assert len(keys) == counts["entities"]
    for entity in registry.entities():
        assert entity.aspects[0] == entity.key_aspect
        assert registry.aspect(entity.key_aspect).key_for_entity == entity.name
        assert len(set(entity.aspects)) == len(entity.aspects)


def test_load_is_cached(registry: Registry) -> None:
    assert Registry.load() is registry
    assert Registry.load(registry.source) is registry


@pytest.mark.parametrize("case", CASES["entities"], ids=lambda c: c["name"])
def test_entity(registry: Registry, case: dict[str, Any]) -> None:
    entity = registry.entity(case["name"])
    assert entity.key_aspect == case["key_aspect"]
    assert entity.category == case["category"]
    assert [f.name for f in entity.key_fields] == case["key_fields"]
    for aspect in (case["key_aspect"], *case["has_aspects"]):
        assert aspect in entity.aspects
        assert registry.is_known(case["name"], aspect)


def test_entity_lookup_ignores_case(registry: Registry) -> None:
    assert registry.entity("DataSet").name == "dataset"
    assert registry.is_known("CORPUSER", "corpUserInfo")
    with pytest.raises(KeyError):
        registry.entity("noSuchEntity")
    with pytest.raises(KeyError):
        registry.aspect("noSuchAspect")


@pytest.mark.parametrize("pair", CASES["not_allowed"], ids=lambda p: "-".join(p))
def test_not_known(registry: Registry, pair: list[str]) -> None:
    assert not registry.is_known(*pair)


@pytest.mark.parametrize("case", CASES["searchable"], ids=lambda c: f"{c['aspect']}{c['path']}")
def test_searchable_spec(registry: Registry, case: dict[str, Any]) -> None:
    spec = _spec(registry, case["aspect"], case["path"])
    assert spec is not None, f"no spec at {case['path']}"
    assert spec.aspect == case["aspect"]
    assert spec.path == tuple(case["path"].strip("/").split("/"))
    assert spec.field_name == case["field_name"]
    assert spec.field_type == case["field_type"]
    assert spec.value_type == case["value_type"]
    assert spec.has_values_field_name == case.get("has")
    assert spec.num_values_field_name == case.get("num")
    assert spec.is_map == case.get("is_map", False)
    assert spec.is_array == case.get("is_array", False)
    assert spec.sanitize_rich_text == case.get("sanitize_rich_text", spec.sanitize_rich_text)
    assert spec.system_modified_at_field_name == case.get("system_modified_at")


@pytest.mark.parametrize("case", CASES["dropped"], ids=lambda c: f"{c['aspect']}{c['path']}")
def test_double_underscore_names_are_dropped(registry: Registry, case: dict[str, Any]) -> None:
    assert _spec(registry, case["aspect"], case["path"]) is None
    assert all("__" not in s.field_name for a in registry.aspects() for s in a.searchable)


def test_spec_counts(registry: Registry) -> None:
    counts = CASES["spec_counts"]
    dataset = sum(len(a.searchable) for a in registry.entity_aspects("dataset"))
    assert dataset == counts["dataset"]
    for aspect, n in counts.items():
        if aspect != "dataset":
            assert len(registry.aspect(aspect).searchable) == n, aspect


def test_names_are_unique_within_an_aspect(registry: Registry) -> None:
    for aspect in registry.aspects():
        names = [s.field_name for s in aspect.searchable]
        assert len(names) == len(set(names)), aspect.name


def test_v3_only_override_keeps_v2_annotation(registry: Registry) -> None:
    # editableSchemaMetadata overrides /*/globalTags/tags/*/tag with only {"v3": ...};
    # the inner override (editedFieldTags) must survive
    spec = _spec(registry, "editableSchemaMetadata", "/editableSchemaFieldInfo/*/globalTags/tags/*/tag")
    assert spec.field_name == "editedFieldTags"
    assert spec.field_type == "URN"


def test_field_name_aliases_kept_apart(registry: Registry) -> None:
    names = {s.field_name for a in registry.aspects() for s in a.searchable}
    aliases = {x for a in registry.aspects() for s in a.searchable for x in s.field_name_aliases}
    assert "_entityName" in aliases
    assert "_entityName" not in names


@pytest.mark.parametrize(
    "case", CASES["relationships"], ids=lambda c: f"{c['aspect']}{c['path']}-{c['name']}"
)
def test_relationship_spec(registry: Registry, case: dict[str, Any]) -> None:
    found = [
        r for r in registry.aspect(case["aspect"]).relationships if "/" + "/".join(r.path) == case["path"]
    ]
    assert len(found) == 1
    rel = found[0]
    assert rel.name == case["name"]
    assert rel.entity_types == tuple(case["entity_types"])
    assert rel.is_lineage == case.get("is_lineage", False)


def test_outer_relationship_override_wins(registry: Registry) -> None:
    names = {r.name for r in registry.aspect("editableSchemaMetadata").relationships}
    assert "EditableSchemaFieldTaggedWith" in names
    assert "TaggedWith" not in names


@pytest.mark.parametrize("case", CASES["index_names"], ids=lambda c: c[2])
def test_index_name(case: list[str]) -> None:
    entity, prefix, expected = case
    assert entity_index(entity, prefix) == expected


@pytest.mark.parametrize("case", CASES["entity_type_of_urn"], ids=lambda c: c[0])
def test_entity_type_of_urn(case: list[Any]) -> None:
    urn, expected = case
    if expected is None:
        with pytest.raises(UrnError):
            entity_type(urn)
    else:
        assert entity_type(urn) == expected


def test_named_type_references_resolve(registry: Registry) -> None:
    # EditableSchemaMetadata's lastModified is a reference by name to AuditStamp defined above
    steps = {s.kind for s in _spec(registry, "datasetProperties", "/lastModified/time").steps}
    assert steps == {"field"}
    aspect = registry.aspect("editableSchemaMetadata")
    fields = {f["name"]: f for f in aspect.schema["fields"]}
    assert fields["lastModified"]["type"] == "com.linkedin.pegasus2avro.common.AuditStamp"


def test_empty_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RegistryError):
        load_registry(tmp_path)


def test_small_custom_registry(tmp_path: Path) -> None:
    key = {
        "type": "record",
        "name": "ThingKey",
        "namespace": "com.linkedin.pegasus2avro.metadata.key",
        "Aspect": {"name": "thingKey", "keyForEntity": "thing", "entityAspects": ["thingInfo"]},
        "fields": [{"name": "id", "type": "string", "Searchable": {}}],
    }
    info = {
        "type": "record",
        "name": "ThingInfo",
        "namespace": "com.linkedin.pegasus2avro.thing",
        "Aspect": {"name": "thingInfo"},
        "fields": [
            {"name": "a", "type": "string", "Searchable": {"fieldName": "x"}},
            {"name": "b", "type": "int", "Searchable": {"fieldName": "x"}},
            {
                "name": "nested",
                "type": {
                    "type": "record",
                    "name": "Nested",
                    "fields": [
                        {"name": "x", "type": "double", "Searchable": {}},
                        {"name": "off", "type": "string", "Searchable": {}},
                    ],
                },
                "Searchable": {"/off": None},
            },
            {"name": "again", "type": ["null", "Nested"], "default": None},
            {
                "name": "props",
                "type": {"type": "map", "values": "string"},
                "Searchable": {"/*": {}},
                "default": {},
            },
        ],
    }
    (tmp_path / "ThingKey.avsc").write_text(json.dumps(key))
    (tmp_path / "ThingInfo.avsc").write_text(json.dumps(info))
    (tmp_path / "NotAnAspect.avsc").write_text(json.dumps({"type": "record", "name": "X"}))
    reg = Registry.load(tmp_path)
    assert reg.entity_names == ("thing",)
    assert reg.entity("thing").aspects == ("thingKey", "thingInfo")
    specs = [(s.path_spec, s.field_name, s.field_type) for s in reg.aspect("thingInfo").searchable]
    assert specs == [
        ("/a", "x", "TEXT"),
        ("/b", "b", "COUNT"),  # a second "x": renamed to its path
        ("/nested/x", "nested_x", "DOUBLE"),  # float/double default to DOUBLE; "x" is taken
        ("/again/x", "again_x", "DOUBLE"),  # a reference by name follows the record
        ("/again/off", "off", "TEXT"),  # only the override on `nested` switched /off off
        ("/props", "props", "KEYWORD"),  # a map defaults to KEYWORD
    ]
    assert reg.aspect("thingKey").searchable[0].field_name == "id"
