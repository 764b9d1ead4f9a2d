"""Confluent's wire format read without confluent-kafka's registry client: framing, schema by
id over HTTP (with basic auth from the URL), errors for what is not a framed Avro message."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import fastavro
import pytest

from auditor.backends.avro_wire import WireDecoder, WireFormatError

SCHEMA = {
    "type": "record",
    "name": "MetadataChangeLog",
    "namespace": "com.linkedin.pegasus2avro.mxe",
    "fields": [
        {"name": "entityUrn", "type": ["null", "string"], "default": None},
        {
            "name": "changeType",
            "type": {"type": "enum", "name": "ChangeType", "symbols": ["UPSERT", "RESTATE"]},
        },
        {"name": "aspectName", "type": ["null", "string"], "default": None},
        {
            "name": "aspect",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "GenericAspect",
                    "fields": [{"name": "value", "type": "bytes"}, {"name": "contentType", "type": "string"}],
                },
            ],
            "default": None,
        },
    ],
}


@pytest.fixture
def registry() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(f"{self.path} {self.headers.get('Authorization')}")
            if self.path != "/schemas/ids/7":
                self.send_response(404)
                self.end_headers()
                return
            body = json.dumps({"schema": json.dumps(SCHEMA)}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://user:p%40ss@127.0.0.1:{server.server_port}", seen
    server.shutdown()


def framed(record: dict, schema_id: int = 7) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(SCHEMA), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + out.getvalue()


def test_a_framed_mcl_decodes_as_the_deserializer_would(registry: tuple[str, list[str]]) -> None:
    url, seen = registry
    record = {
        "entityUrn": "urn:li:tag:x",
        "changeType": "RESTATE",
        "aspectName": "tagProperties",
        "aspect": {"value": b'{"name":"x"}', "contentType": "application/json"},
    }
    decode = WireDecoder(url)
    assert decode(framed(record)) == record
    assert decode(framed(record)) == record
    assert seen == ["/schemas/ids/7 Basic dXNlcjpwQHNz"]  # fetched once, with the URL's credentials


def test_what_is_not_a_framed_avro_message_is_refused(registry: tuple[str, list[str]]) -> None:
    url, _ = registry
    decode = WireDecoder(url)
    for bad in (b"", None, b'{"json": true}', b"\x00\x00\x00"):
        with pytest.raises(WireFormatError):
            decode(bad)
    with pytest.raises(WireFormatError) as caught:
        decode(framed({"entityUrn": None, "changeType": "UPSERT", "aspectName": None, "aspect": None}, 8))
    assert "schema id 8" in str(caught.value) and "p@ss" not in str(caught.value)


def test_a_schema_id_the_registry_lacks_costs_one_request(registry: tuple[str, list[str]]) -> None:
    url, seen = registry
    decode = WireDecoder(url)
    unknown = framed({"entityUrn": None, "changeType": "UPSERT", "aspectName": None, "aspect": None}, 9)
    for _ in range(3):
        with pytest.raises(WireFormatError, match="schema id 9"):
            decode(unknown)
    assert [s.split()[0] for s in seen] == ["/schemas/ids/9"]
