"""The projection of aspect rows into DataHub's entity doc and edges, and the doc comparison."""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path
from typing import Any

import datahub.metadata.schema_classes as schema_classes
import pytest
from datahub.emitter.serialization_helper import pre_json_transform

from auditor.platforms.datahub.documents.aspect_projection import (
    ProjectionError,
    _aspect_plan,
    _reference_run,
    project_aspect,
)
from auditor.platforms.datahub.documents.compare import FieldDiff, compare_document
from auditor.platforms.datahub.documents.emit import Candidates
from auditor.platforms.datahub.documents.expected import ExpectedDocument
from auditor.platforms.datahub.documents.extract import _Malformed
from auditor.platforms.datahub.documents.javastr import sanitize_rich_text
from auditor.platforms.datahub.documents.projection import Edge, expected_edges, project_entity
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.urns import is_valid_urn, key_fields_from_urn, parse_urn

CASES = json.loads((Path(__file__).parent / "data" / "projection_cases.json").read_text())
_CLASSES = {name: getattr(schema_classes, name) for name in dir(schema_classes)}


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.load()


def build(spec: dict[str, Any], raw_to_obj: bool = False) -> Any:
    """An aspect value from a case: built with schema_classes, given as JSON, or as text."""
    if "build" in spec:
        obj = eval(spec["build"], {"__builtins__": {}}, _CLASSES)  # trusted test data
        return obj.to_obj() if raw_to_obj else pre_json_transform(obj.to_obj())
    if "json" in spec:
        return spec["json"]
    return spec["value"]


def aspects_of(case: dict[str, Any]) -> dict[str, Any]:
    return {name: build(spec) for name, spec in case["aspects"].items()}


def _reference(registry: Registry, aspect: str, value: Any) -> dict[str, Any]:
    return _reference_run(registry.aspect(aspect))(value)


# --- one aspect ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES["aspect_cases"], ids=lambda c: c["name"])
def test_project_aspect(registry: Registry, case: dict[str, Any]) -> None:
    value = build(case["value"], case.get("raw_to_obj", False))
    got = project_aspect(registry.aspect(case["aspect"]), value)
    assert got == case["expect"]
    if not isinstance(value, str):
        assert _reference(registry, case["aspect"], value) == case["expect"]


@pytest.mark.parametrize("case", CASES["malformed_cases"], ids=lambda c: c["name"])
def test_malformed_value(registry: Registry, case: dict[str, Any]) -> None:
    value = build(case["value"])
    with pytest.raises(ProjectionError) as caught:
        project_aspect(registry.aspect(case["aspect"]), value)
    assert caught.value.aspect == case["aspect"]
    assert case["reason"] in caught.value.reason
    # inside an entity the error is recorded for that aspect only
    urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"
    doc = project_entity(registry, urn, {case["aspect"]: value, "subTypes": {"typeNames": ["T"]}})
    assert [(e.urn, e.aspect) for e in doc.errors] == [(urn, case["aspect"])]
    assert case["reason"] in doc.errors[0].reason
    assert doc.fields["typeNames"] == ["T"]
    assert doc.fields["id"] == "db.t"


def test_projection_error_is_plain_and_picklable() -> None:
    error = ProjectionError("urn:li:corpuser:a", "status", "bad")
    assert type(error).__mro__[1] is Exception
    again = pickle.loads(pickle.dumps(error))
    assert (again.urn, again.aspect, again.reason) == ("urn:li:corpuser:a", "status", "bad")
    assert str(again) == "urn:li:corpuser:a status: bad"


def test_map_value_length_rule(registry: Registry) -> None:
    spec = registry.aspect("datasetProperties")
    value = {
        "customProperties": {
            "short": "x",
            "just_under": "y" * 4095,
            "at_limit": "z" * 4096,
            "emoji_under": "\U0001f600" * 2047,  # 4094 UTF-16 units
            "emoji_at": "\U0001f600" * 2048,  # 4096 UTF-16 units: Java counts UTF-16
        }
    }
    got = project_aspect(spec, value)["customProperties"]
    assert got == ["short=x", "just_under=" + "y" * 4095, "emoji_under=" + "\U0001f600" * 2047]


def test_arrays_capped_at_1000(registry: Registry) -> None:
    names = [f"t{i}" for i in range(1500)]
    got = project_aspect(registry.aspect("subTypes"), {"typeNames": names})
    assert got["typeNames"] == names[:1000]
    tags = {"tags": [{"tag": f"urn:li:tag:{i}"} for i in range(1200)]}
    got = project_aspect(registry.aspect("globalTags"), tags)
    assert len(got["tags"]) == 1000
    assert got["tags"][-1] == "urn:li:tag:999"


def test_long_rich_text_keeps_both_candidates(registry: Registry) -> None:
    image = "![chart](data:image/png;base64," + "A" * 2000 + ")"
    text = "Intro " + image + " end"
    got = project_aspect(registry.aspect("datasetProperties"), {"description": text})
    assert got["description"] == Candidates(("Intro [Image: chart] end", text))
    assert got["hasDescription"] is True
    short = "![x](data:image/png;base64,AAAA)"
    assert project_aspect(registry.aspect("datasetProperties"), {"description": short}) == {
        "customProperties": [],
        "description": short,
        "hasDescription": True,
    }
    urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"
    doc = project_entity(registry, urn, {"datasetProperties": {"description": text}})
    assert doc.ambiguous["description"] == ("Intro [Image: chart] end", text)
    assert compare_document(doc, {**doc.fields, "description": text}) == []
    assert compare_document(doc, {**doc.fields, "description": "Intro [Image: chart] end"}) == []


def test_sanitizer_matches_datahub() -> None:
    body = "A" * 1200
    assert sanitize_rich_text(f"x ![](data:image/png;base64,{body}) y") == "x  y"
    assert (
        sanitize_rich_text(f"<p><IMG class='a' src='data:image/gif;base64,{body}'></p>") == "<p>[Image]</p>"
    )
    kept = "![ok](https://example.com/a.png) " + "b" * 1200
    assert sanitize_rich_text(kept) == kept


# --- urns ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES["urn_key_cases"], ids=lambda c: c["urn"])
def test_key_fields_from_urn(registry: Registry, case: dict[str, Any]) -> None:
    entity = registry.entity(case["entity"])
    if "error" in case:
        with pytest.raises(ValueError, match=None) as caught:
            key_fields_from_urn(entity, case["urn"])
        assert case["error"] in str(caught.value)
    else:
        key = key_fields_from_urn(entity, case["urn"])
        assert key == case["key"]
        assert list(key) == [f.name for f in entity.key_fields]


def test_unknown_enum_in_urn_reads_as_unknown(registry: Registry) -> None:
    doc = project_entity(registry, "urn:li:dataset:(urn:li:dataPlatform:hive,t,FOO)", {})
    assert doc.fields["origin"] == "$UNKNOWN"
    assert doc.errors == ()


def test_parse_urn_limits() -> None:
    assert parse_urn("urn:li:corpuser") == ("corpuser", [])
    assert parse_urn("urn:custom-ns:thing:x") == ("thing", ["x"])
    assert not is_valid_urn("urn:li:corpuser:" + "x" * 497)  # 513 characters
    assert is_valid_urn("urn:li:corpuser:" + "x" * 496)
    assert not is_valid_urn("urn:LI:corpuser:x")
    assert not is_valid_urn("urn:li:corp-user:x")
    assert not is_valid_urn(None)
    assert not is_valid_urn("urn:li:dataset:(a,b")


# --- entities -----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES["entity_cases"], ids=lambda c: c["name"])
def test_project_entity(registry: Registry, case: dict[str, Any]) -> None:
    aspects = aspects_of(case)
    doc = project_entity(registry, case["urn"], aspects)
    assert dict(doc.fields) == case["fields"]
    assert {k: list(v) for k, v in doc.ambiguous.items()} == case["ambiguous"]
    assert doc.removed is case["removed"]
    assert list(doc.unknown_aspects) == case.get("unknown_aspects", [])
    assert [(e.aspect, e.urn) for e in doc.errors] == [
        (aspect, case["urn"]) for aspect, _ in case.get("errors", [])
    ]
    for error, (_, reason) in zip(doc.errors, case.get("errors", []), strict=True):
        assert reason in error.reason
    for name in case.get("unpredictable_has", []):
        assert name in doc.unpredictable
    assert compare_document(doc, {**doc.fields, **{k: v[0] for k, v in doc.ambiguous.items()}}) == []
    if "edges" in case:
        edges = expected_edges(registry, case["urn"], aspects)
        assert edges == {Edge(case["urn"], rel, dst) for rel, dst in case["edges"]}


def test_dataset_document_metadata(registry: Registry) -> None:
    urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"
    doc = project_entity(registry, urn, {"datasetProfile": {"rowCount": 5}})
    assert doc.entity_type == "dataset"
    assert {"rowCount", "hasRowCount", "sizeInBytes", "lastOperationTime"} <= doc.unpredictable
    assert {"systemCreated", "runId", "termsModifiedAt", "schemaFieldTermsModifiedAt"} <= (doc.unpredictable)
    assert "rowCount" not in doc.fields
    assert {"customProperties", "tags", "hasTags", "browsePathV2", "removed"} <= doc.absent
    assert doc.field_aspects["hasDescription"] == (
        "schemaMetadata",
        "datasetProperties",
        "editableDatasetProperties",
        "editableSchemaMetadata",
    )
    assert doc.delete_values["hasTags"] is False
    assert doc.delete_values["tags"] is None
    assert doc.multiset_fields == {"customProperties"}


def test_project_entity_never_raises(registry: Registry) -> None:
    urn = "urn:li:corpuser:x"
    odd: dict[str, Any] = {
        "corpUserInfo": None,
        "status": b'{"removed": true}',
        "globalTags": "[1, 2]",
        "corpUserKey": {"username": 5},
    }
    doc = project_entity(registry, urn, odd)
    assert sorted(e.aspect for e in doc.errors) == ["corpUserInfo", "corpUserKey", "globalTags"]
    assert doc.removed is True
    assert doc.fields["removed"] is True
    assert "ldap" in doc.unpredictable  # corpUserKey.username is indexed as `ldap`
    doc = project_entity(registry, "not-a-urn", {"status": {}})
    assert doc.errors and doc.unknown_aspects == ("status",)


def test_entity_type_comes_from_the_urns_module(registry: Registry) -> None:
    # the scan reads a urn's type with urns.entity_type; the projection reads it the same way
    doc = project_entity(registry, "urn:custom-ns:dataset:x", {"status": {}})
    assert doc.entity_type == "" and doc.unknown_aspects == ("status",)
    assert expected_edges(registry, "urn:custom-ns:dataset:x", {}) == set()
    doc = project_entity(registry, "urn:li:corpuser", {})
    assert doc.entity_type == "corpuser"
    assert [e.aspect for e in doc.errors] == ["corpUserKey"]


# --- comparison ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base_doc(registry: Registry) -> ExpectedDocument:
    base = CASES["compare_base"]
    return project_entity(registry, base["urn"], aspects_of(base))


@pytest.mark.parametrize("case", CASES["compare_cases"], ids=lambda c: c["name"])
def test_compare_document(base_doc: ExpectedDocument, case: dict[str, Any]) -> None:
    source = {**base_doc.fields, **{k: v[0] for k, v in base_doc.ambiguous.items()}}
    for name, value in case["patch"].items():
        if value == "$delete":
            source.pop(name, None)
        else:
            source[name] = value
    diffs = compare_document(base_doc, source)
    assert [[d.field, d.kind] for d in diffs] == case["diffs"]
    for d in diffs:
        assert d.actual == source.get(name := d.field)
        if name in base_doc.fields:
            assert d.expected == base_doc.fields[name]


def test_compare_reports_values(base_doc: ExpectedDocument) -> None:
    source = {**base_doc.fields, **{k: v[0] for k, v in base_doc.ambiguous.items()}}
    source.update({"hasGlossaryTerms": "x", "tags": ["urn:li:tag:pii"]})
    diffs = compare_document(base_doc, source)
    assert diffs == [
        FieldDiff("hasGlossaryTerms", (True, False), "x", "mismatch"),
        FieldDiff("tags", ["urn:li:tag:pii", "urn:li:tag:gold"], ["urn:li:tag:pii"]),
    ]


def test_compare_large_map_takes_any_1000_entries(registry: Registry) -> None:
    urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"
    props = {f"k{i}": str(i) for i in range(1200)}
    doc = project_entity(registry, urn, {"datasetProperties": {"customProperties": props}})
    entries = [f"k{i}={i}" for i in range(1200)]
    assert doc.fields["customProperties"] == entries
    assert compare_document(doc, {**doc.fields, "customProperties": entries[200:]}) == []
    assert compare_document(doc, {**doc.fields, "customProperties": entries[:999]}) != []
    bogus = [*entries[:999], "k0=changed"]
    assert compare_document(doc, {**doc.fields, "customProperties": bogus}) != []


# --- graph --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES["edge_cases"], ids=lambda c: c["name"])
def test_expected_edges(registry: Registry, case: dict[str, Any]) -> None:
    edges = expected_edges(registry, case["urn"], aspects_of(case))
    assert edges == {Edge(case["urn"], rel, dst) for rel, dst in case["edges"]}


# --- a registry of our own: unions of records, doubles, OBJECT maps -----------------------------


@pytest.fixture(scope="module")
def custom_registry(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    directory = tmp_path_factory.mktemp("schemas")
    key = {
        "type": "record",
        "name": "ThingKey",
        "namespace": "com.linkedin.pegasus2avro.metadata.key",
        "Aspect": {"name": "thingKey", "keyForEntity": "thing", "entityAspects": ["thingInfo"]},
        "fields": [{"name": "id", "type": "string", "Searchable": {"fieldName": "thingId"}}],
    }
    a_rec = {
        "type": "record",
        "name": "Alpha",
        "namespace": "com.linkedin.pegasus2avro.thing",
        "fields": [{"name": "label", "type": "string"}],
    }
    b_rec = {
        "type": "record",
        "name": "Beta",
        "namespace": "com.linkedin.pegasus2avro.thing",
        "fields": [{"name": "label", "type": "string"}],
    }
    info = {
        "type": "record",
        "name": "ThingInfo",
        "namespace": "com.linkedin.pegasus2avro.thing",
        "Aspect": {"name": "thingInfo"},
        "fields": [
            {
                "name": "kind",
                "type": [a_rec, b_rec],
                "Searchable": {
                    "/com.linkedin.thing.Alpha/label": {"fieldName": "alphaLabel"},
                    "/com.linkedin.thing.Beta/label": {"fieldName": "betaLabel"},
                },
            },
            {"name": "score", "type": ["null", "double"], "default": None, "Searchable": {}},
            {
                "name": "scores",
                "type": {"type": "array", "items": "float"},
                "default": [],
                "Searchable": {"/*": {"numValuesFieldName": "numScores"}},
            },
            {
                "name": "flags",
                "type": {"type": "map", "values": "boolean"},
                "default": {},
                "Searchable": {"/*": {"fieldType": "OBJECT"}},
            },
            {
                "name": "count",
                "type": "long",
                "default": 0,
                "Searchable": {"numValuesFieldName": "countNum", "hasValuesFieldName": "hasCount"},
            },
            {
                "name": "owner",
                "type": ["null", "string"],
                "default": None,
                "Relationship": {"name": "OwnedBy", "entityTypes": ["corpuser"]},
            },
        ],
    }
    (directory / "ThingKey.avsc").write_text(json.dumps(key))
    (directory / "ThingInfo.avsc").write_text(json.dumps(info))
    return Registry.load(directory)


@pytest.mark.parametrize(
    "value, expect",
    [
        (
            {"kind": {"com.linkedin.thing.Beta": {"label": "b"}}, "score": 1.5, "count": 7},
            {
                "betaLabel": "b",
                "score": 1.5,
                "scores": [],
                "numScores": 0,
                "flags": {},
                "hasCount": True,
                "countNum": 7,
                "count": 7,
            },
        ),
        (  # obj.to_obj() spells union members with pegasus2avro
            {"kind": {"com.linkedin.pegasus2avro.thing.Alpha": {"label": ""}}, "scores": [0.5, 2]},
            {
                "alphaLabel": None,
                "scores": [0.5, 2],
                "numScores": 2,
                "flags": {},
                "hasCount": True,
                "countNum": 0,
                "count": 0,
            },
        ),
        (
            {"kind": {}, "flags": {"a": True, "b": False}},
            {
                "scores": [],
                "numScores": 0,
                "flags": {"a": True, "b": False},
                "hasCount": True,
                "countNum": 0,
                "count": 0,
            },
        ),
    ],
)
def test_union_members_doubles_and_object_maps(
    custom_registry: Registry, value: dict[str, Any], expect: dict[str, Any]
) -> None:
    spec = custom_registry.aspect("thingInfo")
    got = project_aspect(spec, value)
    assert {k: v for k, v in got.items() if k not in ("alphaLabel", "betaLabel")} == {
        k: v for k, v in expect.items() if k not in ("alphaLabel", "betaLabel")
    }
    assert got.get("alphaLabel", "unset") == expect.get("alphaLabel", "unset")
    assert got.get("betaLabel", "unset") == expect.get("betaLabel", "unset")
    assert _reference_run(spec)(value) == got


def test_custom_entity_and_edges(custom_registry: Registry) -> None:
    urn = "urn:li:thing:t1"
    aspects = {
        "thingInfo": {
            "kind": {"com.linkedin.thing.Alpha": {"label": "a"}},
            "owner": "urn:li:corpuser:o",
        }
    }
    doc = project_entity(custom_registry, urn, aspects)
    assert doc.fields["thingId"] == "t1"
    assert doc.fields["alphaLabel"] == "a"
    assert expected_edges(custom_registry, urn, aspects) == {Edge(urn, "OwnedBy", "urn:li:corpuser:o")}
    assert compare_document(doc, {**doc.fields, "score": 1.0000001}) == [
        FieldDiff("score", None, 1.0000001, "left_behind")
    ]
    with_score = project_entity(custom_registry, urn, {"thingInfo": {"kind": {}, "score": 0.1}})
    assert compare_document(with_score, {**with_score.fields, "score": 0.10000000149}) == []


# --- generated code against the reference, on random values for every aspect -------------------


class _RandomValues:
    """Random Pegasus JSON for an aspect schema, now and then of the wrong shape."""

    STRINGS = ("", "a", "urn:li:corpuser:x", "x=y", "[1, 2]", "\u00e9\U0001f600")

    def __init__(self, schema: dict[str, Any], rng: random.Random, bad: float) -> None:
        self.walker = proj_walker(schema)
        self.rng = rng
        self.bad = bad

    def value(self, node: Any, ns: str, depth: int) -> Any:
        rng = self.rng
        if rng.random() < self.bad:
            return rng.choice([5, "s", [], {}, True, 1.5])
        node, ns = self.walker._resolve(node, ns)
        if isinstance(node, list):
            members = [m for m in node if m != "null"]
            if not members:
                return None
            member = rng.choice(members)
            if len(members) == 1 and len(node) == 2:
                return self.value(member, ns, depth)
            resolved, member_ns = self.walker._resolve(member, ns)
            key, avro = self.walker._member_key(resolved, ns)
            return {rng.choice((key, avro)): self.value(resolved, member_ns, depth + 1)}
        kind = node if isinstance(node, str) else node.get("type")
        if kind == "record":
            if depth > 5:
                return {}
            out = {}
            record_ns = self.walker._fullname(node, ns).rpartition(".")[0]
            for f in node.get("fields", ()):
                optional = "default" in f or (isinstance(f["type"], list) and "null" in f["type"])
                if optional and rng.random() < 0.3:
                    continue
                v = self.value(f["type"], record_ns, depth + 1)
                if v is not None:
                    out[f["name"]] = v
            return out
        if kind == "array":
            return [self.value(node["items"], ns, depth + 1) for _ in range(rng.randint(0, 3))]
        if kind == "map":
            return {f"k{i}": self.value(node["values"], ns, depth + 1) for i in range(rng.randint(0, 2))}
        if kind == "enum":
            return rng.choice([*node["symbols"], "NOT_A_SYMBOL"])
        if kind in ("string", "bytes", "fixed"):
            return rng.choice(self.STRINGS)
        if kind in ("int", "long"):
            return rng.randint(-3, 3)
        if kind in ("float", "double"):
            return rng.choice([0.5, -2.0, 3])
        if kind == "boolean":
            return rng.random() < 0.5
        return None


def proj_walker(schema: dict[str, Any]) -> Any:
    from auditor.platforms.datahub.registry.schema_walker import _Walker

    return _Walker(schema)


def test_generated_code_matches_reference_on_random_values(registry: Registry) -> None:
    rng = random.Random(20240611)
    checked = 0
    for aspect in registry.aspects():
        if not aspect.searchable:
            continue
        plan = _aspect_plan(aspect)
        reference = _reference_run(aspect)
        gen = _RandomValues(aspect.schema, rng, bad=0.0)
        bad = _RandomValues(aspect.schema, rng, bad=0.05)
        ns = gen.walker._fullname(aspect.schema, "").rpartition(".")[0]
        for source in (gen, gen, gen, bad, bad, bad, bad):
            value = source.value(aspect.schema, ns, 0)
            if not isinstance(value, dict):
                continue
            outcome: list[tuple[str, dict[str, Any] | None]] = []
            for run in (plan.run, reference):
                try:
                    outcome.append(("ok", run(value)))
                except _Malformed:
                    outcome.append(("malformed", None))
            checked += 1
            assert outcome[0] == outcome[1], f"{aspect.name}: {value!r}: {outcome}"
    assert checked > 1000
