"""Confluent's wire format, read: magic byte 0, a 4-byte schema id, then Avro binary; and AWS
Glue's: byte 3, a compression byte, a 16-byte schema version UUID, then Avro (registry.py).

The writer schema is fetched by id from the registry (`GET /schemas/ids/{id}`, standard REST
API, basic auth from the URL's user info) once per id and decoded with fastavro. This is what
`AvroDeserializer` does, without importing confluent-kafka's registry stack (httpx, authlib,
an asyncio client: about 0.2 s at every start of a one-shot command such as `auditor triage`).
"""

from __future__ import annotations

import io
import json
import uuid
import zlib
from typing import Any, TypeGuard

import fastavro

from auditor.backends.registry import (
    GLUE_HEADER,
    GLUE_MAGIC,
    GLUE_ZLIB,
    GlueSchemas,
    Registry,
    as_registry,
    wheel_mcl_schema,
)

MAGIC = 0


def is_framed(data: bytes | None) -> TypeGuard[bytes]:
    """Magic byte 0 and a schema id, or Glue's byte 3 and a schema version: what every MCL
    DataHub produces starts with (the schema may still be unknown to the registry: that is for
    the decoder to say)."""
    if data is None:
        return False
    return (len(data) >= 5 and data[0] == MAGIC) or (len(data) >= GLUE_HEADER and data[0] == GLUE_MAGIC)


class WireFormatError(ValueError):
    """Bytes that are not a Confluent-framed Avro message, or a schema that cannot be had."""


class WireDecoder:
    def __init__(self, registry: Registry | str, timeout: float = 10.0) -> None:
        found = as_registry(registry)
        if found is None:
            raise ValueError("no registry")
        self.registry = found
        self.timeout = timeout
        self._schemas: dict[Any, Any] = {}
        self._failed: dict[Any, str] = {}
        self._glue = GlueSchemas(found) if found.glue else None
        self.note: str | None = None  # said once in the report: the schema used was not the writer's

    def schema(self, schema_id: int) -> Any:
        """The parsed writer schema of `schema_id` (fetched once; a failure too is kept, so a
        registry that lacks the id or is down costs one request, not one a message)."""
        if schema_id in self._failed:
            raise WireFormatError(self._failed[schema_id])
        if schema_id not in self._schemas:
            try:
                body = self.registry.get_json(f"/schemas/ids/{schema_id}", self.timeout)
                self._schemas[schema_id] = fastavro.parse_schema(json.loads(body["schema"]))
            except Exception as exc:
                self._failed[schema_id] = f"schema id {schema_id}: {exc}"
                raise WireFormatError(self._failed[schema_id]) from None
        return self._schemas[schema_id]

    def glue_schema(self, version: uuid.UUID) -> Any:
        """The schema of a Glue schema version; the wheel's MCL schema when Glue cannot be asked."""
        if version not in self._schemas:
            try:
                if self._glue is None:
                    raise WireFormatError("a Glue-framed message, but the registry configured is not Glue")
                definition = self._glue.definition(version)
            except Exception as exc:
                definition = wheel_mcl_schema()
                self.note = self.note or (
                    f"Glue schema version {version} not read ({str(exc)[:160]}): MCLs decoded with the "
                    "acryl-datahub wheel's MetadataChangeLog schema"
                )
            self._schemas[version] = fastavro.parse_schema(json.loads(definition))
        return self._schemas[version]

    def __call__(self, data: bytes | None) -> dict[str, Any]:
        if not is_framed(data):
            raise WireFormatError("not a Confluent- or Glue-framed Avro message")
        if data[0] == GLUE_MAGIC:
            schema = self.glue_schema(uuid.UUID(bytes=data[2:GLUE_HEADER]))
            body = data[GLUE_HEADER:]
            if data[1] == GLUE_ZLIB:
                try:
                    body = zlib.decompress(body)
                except zlib.error as exc:
                    raise WireFormatError(f"a Glue message's zlib body: {exc}") from None
            elif data[1] != 0:
                raise WireFormatError(f"a Glue message's compression byte {data[1]} (0 or 5 expected)")
            value = fastavro.schemaless_reader(io.BytesIO(body), schema)
        else:
            schema = self.schema(int.from_bytes(data[1:5], "big"))
            value = fastavro.schemaless_reader(io.BytesIO(data[5:]), schema)
        if not isinstance(value, dict):
            raise WireFormatError("the message is not an Avro record")
        return value
