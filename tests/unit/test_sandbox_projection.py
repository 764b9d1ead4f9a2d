"""The sandbox's hand-written projection and edges, on literal aspects and literal documents."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import datahub.metadata.schema_classes as m
import pytest

from sandbox.edges import RELATIONSHIPS, extract_edges, relationship_types
from sandbox.projection import (
    PROJECTED_ASPECTS,
    SEARCH_FIELDS,
    Kind,
    document_fields,
    project,
    search_document,
)

URN = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"
SEP = "\u241f"


def obj(aspect: Any) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(json.dumps(aspect.to_obj()))
    return result


def test_dataset_key_and_properties() -> None:
    assert search_document(
        URN, "datasetKey", {"platform": "urn:li:dataPlatform:hive", "name": "db.t", "origin": "PROD"}
    ) == {"urn": URN, "platform": "urn:li:dataPlatform:hive", "id": "db.t", "origin": "PROD"}
    props = obj(
        m.DatasetPropertiesClass(
            name="t",
            qualifiedName="hive.db.t",
            description="Orders",
            customProperties={"team": "core", "big": "x" * 5000, "k=v": "a, b"},
            created=m.TimeStampClass(time=1700000000000),
        )
    )
    assert project("datasetProperties", props) == {
        "customProperties": ["team=core", "k=v=a, b"],  # values of 4096+ chars are left out
        "name": "t",
        "qualifiedName": "hive.db.t",
        "description": "Orders",
        "hasDescription": True,
        "createdAt": 1700000000000,
    }


def test_empty_strings_absent_scalars_and_defaults() -> None:
    assert project("datasetProperties", {"description": ""}) == {
        "customProperties": [],
        "description": None,
        "hasDescription": False,
    }
    assert project("datasetProperties", {}) == {"customProperties": [], "hasDescription": False}
    assert project("status", {}) == {"removed": False}  # Pegasus default applies
    assert project("status", {"removed": True, "lifecycleStage": "x"}) == {
        "removed": True,
        "lifecycleStage": "x",
    }
    assert project("corpUserInfo", {"active": True}) == {
        "customProperties": [],
        "active": True,
        "system": False,
    }


def test_arrays_has_and_num_fields() -> None:
    tags = obj(
        m.GlobalTagsClass(
            tags=[
                m.TagAssociationClass(tag="urn:li:tag:a"),
                m.TagAssociationClass(
                    tag="urn:li:tag:b",
                    attribution=m.MetadataAttributionClass(
                        time=5, actor="urn:li:corpuser:x", source="urn:li:dataHubAction:y"
                    ),
                ),
            ]
        )
    )
    assert project("globalTags", tags) == {
        "tags": ["urn:li:tag:a", "urn:li:tag:b"],
        "hasTags": True,
        "tagAttributionDates": [5],
        "tagAttributionActors": ["urn:li:corpuser:x"],
        "tagAttributionSources": ["urn:li:dataHubAction:y"],
    }
    assert project("globalTags", {"tags": []}) == {
        "tags": [],
        "hasTags": False,
        "tagAttributionDates": [],
        "tagAttributionActors": [],
        "tagAttributionSources": [],
    }
    io = {
        "inputDatasets": ["urn:a", "urn:b"],
        "outputDatasets": [],
        "inputDatasetEdges": [{"destinationUrn": "urn:a"}, {"destinationUrn": "urn:b"}],
    }
    assert project("dataJobInputOutput", io) == {
        "inputs": ["urn:a", "urn:b"],
        "numInputDatasets": 2,
        "inputDatasetEdges": ["urn:a", "urn:b"],
        "outputs": [],
        "numOutputDatasets": 0,
        "outputDatasetEdges": [],
        "inputFields": [],
        "numInputFields": 0,
        "outputFields": [],
        "numOutputFields": 0,
        "fineGrainedUpstreams": [],
        "hasFineGrainedUpstreams": False,
    }
    many = {"typeNames": [str(i) for i in range(1500)]}
    assert len(project("subTypes", many)["typeNames"]) == 1000


def test_schema_metadata_field_specs() -> None:
    schema = obj(
        m.SchemaMetadataClass(
            schemaName="t",
            platform="urn:li:dataPlatform:hive",
            version=0,
            hash="",
            platformSchema=m.OtherSchemaClass(rawSchema=""),
            fields=[
                m.SchemaFieldClass(
                    fieldPath="id",
                    nativeDataType="int",
                    type=m.SchemaFieldDataTypeClass(type=m.NumberTypeClass()),
                ),
                m.SchemaFieldClass(
                    fieldPath="name",
                    nativeDataType="varchar",
                    description="Name",
                    type=m.SchemaFieldDataTypeClass(type=m.StringTypeClass()),
                    globalTags=m.GlobalTagsClass(tags=[m.TagAssociationClass(tag="urn:li:tag:pii")]),
                ),
            ],
        )
    )
    doc = project("schemaMetadata", schema)
    assert doc is not None
    assert doc["fieldPaths"] == ["id", "name"]
    assert doc["fieldDescriptions"] == ["Name"] and doc["hasDescription"] is True
    assert doc["fieldTags"] == ["urn:li:tag:pii"] and doc["hasTags"] is True
    assert doc["fieldGlossaryTerms"] == [] and doc["hasGlossaryTerms"] is False
    assert "tags" not in doc  # the nested GlobalTags annotation is overridden


def test_ownership_owner_types_and_browse_paths() -> None:
    owners = {
        "owners": [{"owner": "urn:li:corpuser:a", "type": "DATAOWNER"}],
        "ownerTypes": {"urn:li:ownershipType:__system__none": ["urn:li:corpuser:a", "urn:li:corpGroup:b"]},
    }
    assert project("ownership", owners) == {
        "owners": ["urn:li:corpuser:a"],
        "hasOwners": True,
        "ownerAttributionDates": [],
        "ownerAttributionActors": [],
        "ownerAttributionSources": [],
        "ownerTypes": {"urn:li:ownershipType:__system__none": ["urn:li:corpuser:a", "urn:li:corpGroup:b"]},
    }
    path = obj(
        m.BrowsePathsV2Class(
            path=[
                m.BrowsePathEntryClass(id="prod"),
                m.BrowsePathEntryClass(id="urn:li:container:c", urn="urn:li:container:c"),
            ]
        )
    )
    assert project("browsePathsV2", path) == {"browsePathV2": f"{SEP}prod{SEP}urn:li:container:c"}
    assert project("browsePathsV2", {"path": []}) == {"browsePathV2": ""}


def test_delete_nulls_fields() -> None:
    assert project("globalTags", {"tags": []}, for_delete=True) == {
        "hasTags": False,
        "tags": None,
        "tagAttributionDates": None,
        "tagAttributionActors": None,
        "tagAttributionSources": None,
    }
    assert project("dataJobInputOutput", {}, for_delete=True)["numInputDatasets"] == 0


def test_aspects_without_fields() -> None:
    assert project("containerKey", {"guid": "x"}) is None
    assert project("someUnknownAspect", {"a": 1}) is None
    assert search_document(URN, "domainKey", {"id": "d"}) is None


def test_document_fields_merge_in_order() -> None:
    merged = document_fields([("status", {"removed": True}), ("status", {"removed": False})])
    assert merged == {"removed": False}


def test_edges_fallbacks_and_ids() -> None:
    lineage = obj(
        m.UpstreamLineageClass(
            upstreams=[
                m.UpstreamClass(
                    dataset="urn:li:dataset:(urn:li:dataPlatform:hive,db.up,PROD)",
                    type=m.DatasetLineageTypeClass.TRANSFORMED,
                    auditStamp=m.AuditStampClass(time=123, actor="urn:li:corpuser:etl"),
                    properties={"k": "v"},
                )
            ]
        )
    )
    sm = {"lastObserved": 999}
    (edge,) = extract_edges(
        URN, "upstreamLineage", lineage, system_metadata=sm, created_actor="urn:li:corpuser:datahub"
    )
    assert edge.to_doc() == {
        "source": {"urn": URN, "entityType": "dataset"},
        "destination": {
            "urn": "urn:li:dataset:(urn:li:dataPlatform:hive,db.up,PROD)",
            "entityType": "dataset",
        },
        "relationshipType": "DownstreamOf",
        "createdOn": 999,
        "createdActor": "urn:li:corpuser:datahub",  # no `created`: fallbacks
        "updatedOn": 123,
        "updatedActor": "urn:li:corpuser:datahub",
        "properties": {"k": "v"},
    }
    merged = edge.to_doc(keep_created=False)
    assert "createdOn" not in merged and "createdActor" not in merged
    owned = extract_edges(
        URN, "ownership", {"owners": [{"owner": "urn:li:corpGroup:g", "type": "DATAOWNER"}]}
    )
    assert [(e.relationship_type, e.destination) for e in owned] == [("OwnedBy", "urn:li:corpGroup:g")]
    assert owned[0].doc_id == "BCps7j6QKvbodv8FWQlOOg=="
    assert relationship_types("ownership") == ["OwnedBy", "ownershipType"]
    assert relationship_types("corpGroupInfo") == ["IsPartOf"]
    assert extract_edges(URN, "datasetProperties", {"name": "x"}) == []


# ---------------------------------------------------------------- the table vs the wheel


def _annotation_names(node: Any, key: str) -> set[str]:
    """Every fieldName / has / num name written in the .avsc's `key` annotations."""
    names: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key:
                names |= _names_in(v)
            names |= _annotation_names(v, key)
    elif isinstance(node, list):
        for v in node:
            names |= _annotation_names(v, key)
    return names


def _names_in(annotation: Any) -> set[str]:
    if not isinstance(annotation, dict):
        return set()
    found = {
        annotation[k] for k in ("fieldName", "hasValuesFieldName", "numValuesFieldName") if k in annotation
    }
    for value in annotation.values():
        found |= _names_in(value)
    return found


def _schema_file(aspect: str) -> dict[str, Any]:
    folder = resources.files("datahub.metadata").joinpath("schemas")
    for entry in folder.iterdir():
        if entry.name.endswith(".avsc"):
            schema = json.loads(entry.read_text(encoding="utf-8"))
            if isinstance(schema, dict) and schema.get("Aspect", {}).get("name") == aspect:
                return schema
    raise AssertionError(f"no schema for {aspect}")


# Names declared in nested records that schemaMetadata's field-level overrides replace.
OVERRIDDEN = {
    "schemaMetadata": {
        "tags",
        "tagAttributionActors",
        "tagAttributionSources",
        "tagAttributionDates",
        "glossaryTerms",
        "termAttributionActors",
        "termAttributionSources",
        "termAttributionDates",
    }
}


@pytest.mark.parametrize("aspect", sorted(PROJECTED_ASPECTS))
def test_table_matches_the_wheel_annotations(aspect: str) -> None:
    schema = _schema_file(aspect)
    declared = _annotation_names(schema, "Searchable") - OVERRIDDEN.get(aspect, set())
    ours = set()
    for spec in SEARCH_FIELDS[aspect]:
        ours |= {spec.name, spec.has, spec.num} - {None}
    fields = {f["name"] for f in schema["fields"]}
    names = [spec.name for spec in SEARCH_FIELDS[aspect]]
    assert len(names) == len(set(names))  # no renames needed inside one aspect
    # every explicit name in the wheel is in our table ...
    assert declared <= ours
    # ... and every name of ours is either explicit there or a default (the field's own name)
    for spec in SEARCH_FIELDS[aspect]:
        if spec.name not in declared:
            first = spec.path.split("/")[0]
            assert spec.name == first and first in fields, (aspect, spec)
        if spec.kind is Kind.MAP:
            assert "/*" in json.dumps(schema)
    relationship_names = {spec.name for spec in RELATIONSHIPS.get(aspect, ())}
    assert relationship_names <= _relationship_names(schema)


def _relationship_names(node: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "Relationship":
                names |= _rel_names_in(v)
            names |= _relationship_names(v)
    elif isinstance(node, list):
        for v in node:
            names |= _relationship_names(v)
    return names


def _rel_names_in(annotation: Any) -> set[str]:
    if not isinstance(annotation, dict):
        return set()
    found = {annotation["name"]} if isinstance(annotation.get("name"), str) else set()
    for value in annotation.values():
        found |= _rel_names_in(value)
    return found
