"""DataHub on AWS with `SCHEMA_REGISTRY_TYPE=AWS_GLUE`, as far as the machine allows: MCLs in Glue's
wire format, and a stand-in for the Glue registry's API.

Glue's framing (awslabs/aws-glue-schema-registry, AWSSchemaRegistryConstants): byte 0 = 3 (the
header version), byte 1 = compression (0 none, 5 zlib), the schema version's UUID (16 bytes),
then the Avro binary body. `GlueFraming` writes and reads it for the sandbox's GMS writer and MAE
consumer (the schema is the wheel's MetadataChangeLog).

`GlueRegistry` answers the AWS JSON 1.1 protocol boto3 speaks (`X-Amz-Target:
AWSGlue.GetSchemaVersion`), each request's SigV4 signature checked for service `glue` by
sandbox/aws_sigv4.py; clients reach it through boto3's own `AWS_ENDPOINT_URL_GLUE`.
"""

from __future__ import annotations

import io
import json
import threading
import uuid
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import fastavro

from sandbox.avro import mcl_schema, mcl_schema_str
from sandbox.aws_sigv4 import Refused, Verifier

GLUE_MAGIC, GLUE_ZLIB, HEADER = 3, 5, 18


@dataclass
class GlueFraming:
    """Encodes MCLs as a Glue-serialising producer does, under one schema version."""

    version: uuid.UUID = field(default_factory=uuid.uuid4)
    compression: int = 0  # 0 none, 5 zlib

    def encode(self, record: dict[str, Any]) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, _parsed(), record)
        body = out.getvalue()
        if self.compression == GLUE_ZLIB:
            body = zlib.compress(body)
        return bytes([GLUE_MAGIC, self.compression]) + self.version.bytes + body


def is_glue(data: bytes | None) -> bool:
    return data is not None and len(data) >= HEADER and data[0] == GLUE_MAGIC


def decode_glue(data: bytes) -> dict[str, Any]:
    """A Glue-framed MCL back to its record (the sandbox wrote it with the wheel's schema)."""
    body = data[HEADER:]
    if data[1] == GLUE_ZLIB:
        body = zlib.decompress(body)
    record = fastavro.schemaless_reader(io.BytesIO(body), _parsed())
    if not isinstance(record, dict):
        raise ValueError("not an MCL record")
    return record


_PARSED: list[Any] = []


def _parsed() -> Any:
    if not _PARSED:
        _PARSED.append(fastavro.parse_schema(mcl_schema()))
    return _PARSED[0]


class GlueRegistry:
    """`with GlueRegistry(verifier) as glue:` the Glue API at `glue.url`; `register()` a version."""

    def __init__(self, verifier: Verifier) -> None:
        self.verifier = verifier
        self.versions: dict[str, tuple[str, str, str]] = {}  # id -> (registry, schema, definition)
        self.calls: list[str] = []
        glue = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    key = glue.verifier.check_header("POST", self.path, dict(self.headers.items()), body)
                    target = self.headers.get("X-Amz-Target", "")
                    operation = target.rpartition(".")[2]
                    glue.verifier.allow(key, f"glue:{operation}")
                    status, answer = 200, glue.answer(operation, json.loads(body or b"{}"))
                except Refused as refused:
                    status, answer = refused.status, {"__type": refused.code, "Message": refused.message}
                payload = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def register(
        self, registry: str, schema: str, definition: str | None = None, version: uuid.UUID | None = None
    ) -> uuid.UUID:
        version = version or uuid.uuid4()
        self.versions[str(version)] = (registry, schema, definition or mcl_schema_str())
        return version

    def answer(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(operation)
        if operation != "GetSchemaVersion":
            raise Refused(400, f"{operation} is not served by this stand-in", "InvalidInputException")
        if "SchemaVersionId" in request:
            version_id = str(request["SchemaVersionId"])
            found = [(version_id, *self.versions[version_id])] if version_id in self.versions else []
        else:
            wanted = request.get("SchemaId", {})
            name, registry = wanted.get("SchemaName"), wanted.get("RegistryName", "default-registry")
            found = [
                (v, *rest) for v, rest in self.versions.items() if rest[1] == name and rest[0] == registry
            ][-1:]
        if not found:
            raise Refused(400, "Schema version is not found.", "EntityNotFoundException")
        version, registry, schema, definition = found[0]
        return {
            "SchemaVersionId": version,
            "SchemaDefinition": definition,
            "DataFormat": "AVRO",
            "SchemaArn": f"arn:aws:glue:{self.verifier.region}:123456789012:schema/{registry}/{schema}",
            "VersionNumber": 1,
            "Status": "AVAILABLE",
        }

    def __enter__(self) -> GlueRegistry:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
