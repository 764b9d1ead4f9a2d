"""Confluent's wire format, read: magic byte 0, a 4-byte schema id, then Avro binary.

The writer schema is fetched by id from the registry (`GET /schemas/ids/{id}`, standard REST
API, basic auth from the URL's user info) once per id and decoded with fastavro. This is what
`AvroDeserializer` does, without importing confluent-kafka's registry stack (httpx, authlib,
an asyncio client: about 0.2 s at every start of a one-shot command such as `auditor triage`).
"""

from __future__ import annotations

import base64
import io
import json
import urllib.request
from typing import Any, TypeGuard
from urllib.parse import unquote, urlsplit, urlunsplit

import fastavro

MAGIC = 0


def is_framed(data: bytes | None) -> TypeGuard[bytes]:
    """Magic byte 0 and a schema id: what every MCL DataHub produces starts with (the schema may
    still be unknown to the registry: that is for the decoder to say)."""
    return data is not None and len(data) >= 5 and data[0] == MAGIC


class WireFormatError(ValueError):
    """Bytes that are not a Confluent-framed Avro message, or a schema that cannot be had."""


class WireDecoder:
    def __init__(self, registry_url: str, timeout: float = 10.0) -> None:
        parts = urlsplit(registry_url)
        self._auth: str | None = None
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            self._auth = "Basic " + base64.b64encode(pair.encode()).decode()
            netloc = parts.hostname or ""
            if parts.port:
                netloc += f":{parts.port}"
            parts = parts._replace(netloc=netloc)
        self.base = urlunsplit(parts).rstrip("/")
        self.timeout = timeout
        self._schemas: dict[int, Any] = {}
        self._failed: dict[int, str] = {}

    def schema(self, schema_id: int) -> Any:
        """The parsed writer schema of `schema_id` (fetched once; a failure too is kept, so a
        registry that lacks the id or is down costs one request, not one a message)."""
        if schema_id in self._failed:
            raise WireFormatError(self._failed[schema_id])
        if schema_id not in self._schemas:
            request = urllib.request.Request(f"{self.base}/schemas/ids/{schema_id}")
            if self._auth:
                request.add_header("Authorization", self._auth)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                    body = json.loads(response.read())
                self._schemas[schema_id] = fastavro.parse_schema(json.loads(body["schema"]))
            except Exception as exc:
                self._failed[schema_id] = f"schema id {schema_id}: {exc}"
                raise WireFormatError(self._failed[schema_id]) from None
        return self._schemas[schema_id]

    def __call__(self, data: bytes | None) -> dict[str, Any]:
        if not is_framed(data):
            raise WireFormatError("not a Confluent-framed Avro message")
        schema = self.schema(int.from_bytes(data[1:5], "big"))
        value = fastavro.schemaless_reader(io.BytesIO(data[5:]), schema)
        if not isinstance(value, dict):
            raise WireFormatError("the message is not an Avro record")
        return value
