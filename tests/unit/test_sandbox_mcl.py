"""MCL records built by the sandbox conform to the wheel's Avro schema and read back."""

from __future__ import annotations

import io
import json

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from fastavro.validation import validate

from sandbox.avro import mcl_schema
from sandbox.mcl import build_mcl, read_mcl
from sandbox.registry import entity_facts


def roundtrip(record: dict[str, object]) -> dict[str, object]:
    schema = parse_schema(mcl_schema())
    assert validate(record, schema)
    buffer = io.BytesIO()
    schemaless_writer(buffer, schema, record)
    buffer.seek(0)
    result: dict[str, object] = schemaless_reader(buffer, schema)
    return result


def test_schema_is_datahubs() -> None:
    schema = mcl_schema()
    assert schema["name"] == "MetadataChangeLog"
    assert schema["namespace"] == "com.linkedin.pegasus2avro.mxe"
    names = [f["name"] for f in schema["fields"]]
    assert names[:6] == [
        "auditHeader",
        "entityType",
        "entityUrn",
        "entityKeyAspect",
        "changeType",
        "aspectName",
    ]


@pytest.mark.parametrize("change_type", ["UPSERT", "DELETE", "RESTATE"])
def test_build_and_read(change_type: str) -> None:
    new = None if change_type == "DELETE" else {"name": "é", "n": 1}
    record = build_mcl(
        entity_type="dataset",
        urn="urn:li:dataset:(urn:li:dataPlatform:hive,t,PROD)",
        change_type=change_type,
        aspect_name="datasetProperties",
        aspect=new,
        system_metadata={
            "lastObserved": 5,
            "runId": "r",
            "version": "2",
            "properties": {"forceIndexing": "true"},
        },
        previous_aspect={"name": "old"},
        previous_system_metadata={"lastObserved": 4},
        created_time_ms=5,
        actor="urn:li:corpuser:datahub",
    )
    decoded = roundtrip(record)
    assert decoded["changeType"] == change_type
    change = read_mcl(decoded)
    assert change.aspect == new
    assert change.previous_aspect == {"name": "old"}
    assert change.force_indexing
    assert change.system_metadata is not None and change.system_metadata["version"] == "2"
    assert change.previous_system_metadata is not None
    assert change.previous_system_metadata["runId"] == "no-run-id-provided"
    assert (change.created_time, change.created_actor) == (5, "urn:li:corpuser:datahub")
    if new is not None:
        assert json.loads(decoded["aspect"]["value"]) == new  # type: ignore[index]


def test_force_indexing_only_when_asked() -> None:
    record = build_mcl(
        entity_type="tag",
        urn="urn:li:tag:x",
        change_type="UPSERT",
        aspect_name="tagKey",
        aspect={"name": "x"},
        system_metadata={"lastObserved": 1},
        previous_aspect=None,
        previous_system_metadata=None,
        created_time_ms=1,
        actor="urn:li:corpuser:datahub",
    )
    change = read_mcl(roundtrip(record))
    assert not change.force_indexing
    assert change.previous_aspect is None and change.previous_system_metadata is None


def test_registry_facts() -> None:
    facts = entity_facts()
    assert facts.key_aspect("dataset") == "datasetKey"
    assert facts.is_key_aspect("corpuser", "corpUserKey")
    assert facts.is_timeseries("datasetProfile") and not facts.is_timeseries("status")
    assert "status" not in facts.entity_aspects["domain"]
