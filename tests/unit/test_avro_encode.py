"""The compiled Avro encoder writes fastavro's bytes: on DataHub's own MetadataChangeLog schema
(from acryl-datahub) with records generated from the schema itself, and on the schema shapes
the MCL does not use (wide unions, arrays, self-reference, defaults). What it cannot place it
refuses with EncodeError (fastavro refuses the same values)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import datahub.metadata
import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.backends.avro_encode import EncodeError, compile_schema

MCL = json.loads((Path(datahub.metadata.__file__).parent / "schemas" / "MetadataChangeLog.avsc").read_text())
PRIMITIVE = {
    "null": st.none(),
    "boolean": st.booleans(),
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1),
    "string": st.text(max_size=20),
    "bytes": st.binary(max_size=40),
    "double": st.floats(allow_nan=False),
}


def values_of(schema: Any, named: dict[str, Any], ns: str | None = None) -> st.SearchStrategy[Any]:
    """Values that fit `schema`, generated from the schema itself."""
    if isinstance(schema, list):
        return st.one_of([values_of(b, named, ns) for b in schema])
    if isinstance(schema, str):
        if schema in PRIMITIVE:
            return PRIMITIVE[schema]
        full = schema if "." in schema or not ns else f"{ns}.{schema}"
        return named[full] if full in named else named[schema]
    kind = schema["type"]
    if isinstance(kind, (list, dict)) or kind in PRIMITIVE:
        return values_of(kind, named, ns)
    if kind in ("record", "enum", "fixed"):
        name = schema["name"]
        space = schema.get("namespace", ns)
        full = name if "." in name or not space else f"{space}.{name}"
        if kind == "enum":
            out: st.SearchStrategy[Any] = st.sampled_from(schema["symbols"])
        elif kind == "fixed":
            out = st.binary(min_size=schema["size"], max_size=schema["size"])
        else:
            inner = full.rsplit(".", 1)[0] if "." in full else None
            holder: list[st.SearchStrategy[Any]] = []
            named[full] = st.deferred(lambda: holder[0])  # a record may reference itself
            fields = {f["name"]: values_of(f["type"], named, inner) for f in schema["fields"]}
            out = st.fixed_dictionaries(fields)
            holder.append(out)
        named[full] = out
        return out
    if kind == "map":
        return st.dictionaries(st.text(max_size=8), values_of(schema["values"], named, ns), max_size=3)
    if kind == "array":
        return st.lists(values_of(schema["items"], named, ns), max_size=3)
    raise AssertionError(kind)


def fastavro_bytes(schema: Any, value: Any) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def compiled_bytes(schema: Any, value: Any) -> bytes:
    out = bytearray()
    compile_schema(schema)(value, out)
    return bytes(out)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(values_of(MCL, {}))
def test_datahubs_mcl_schema_is_written_byte_for_byte_as_fastavro_writes_it(record: dict[str, Any]) -> None:
    assert compiled_bytes(MCL, record) == fastavro_bytes(MCL, record)


OTHER = {
    "type": "record",
    "name": "Node",
    "namespace": "t",
    "fields": [
        {
            "name": "wide",
            "type": ["null", "boolean", "long", "string", "bytes", {"type": "array", "items": "int"}],
        },
        {"name": "tags", "type": {"type": "map", "values": ["null", "double"]}},
        {"name": "next", "type": ["null", "Node"], "default": None},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}, "default": "A"},
        {"name": "id", "type": {"type": "fixed", "name": "Id", "size": 2}},
    ],
}


@settings(max_examples=300)
@given(values_of(OTHER, {}))
def test_wide_unions_arrays_maps_fixed_and_self_reference_match_too(record: dict[str, Any]) -> None:
    assert compiled_bytes(OTHER, record) == fastavro_bytes(OTHER, record)


def test_a_missing_field_takes_its_default() -> None:
    record = {"wide": None, "tags": {}, "id": b"ab"}
    assert compiled_bytes(OTHER, record) == fastavro_bytes(OTHER, record)


@pytest.mark.parametrize(
    "record",
    [
        {"wide": 1.5, "tags": {}, "id": b"ab"},  # no branch takes a float
        {"wide": None, "tags": {"x": "y"}, "id": b"ab"},  # a string for a double|null
        {"wide": None, "tags": {}, "id": b"abc"},  # fixed of the wrong size
        {"wide": None, "tags": {}, "kind": "C", "id": b"ab"},  # not a symbol
        {"wide": None, "tags": {}},  # a field without default missing
    ],
)
def test_what_does_not_fit_is_refused_as_fastavro_refuses_it(record: dict[str, Any]) -> None:
    with pytest.raises(EncodeError):
        compiled_bytes(OTHER, record)
    with pytest.raises((ValueError, TypeError, KeyError, AttributeError)):
        fastavro_bytes(OTHER, record)
