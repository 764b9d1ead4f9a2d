"""DataHub's MetadataChangeLog Avro schema (from the wheel), Confluent-framed via the registry."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sandbox.registry import schemas_dir

MCL_SCHEMA_FILE = "MetadataChangeLog.avsc"
MCL_FULL_NAME = "com.linkedin.pegasus2avro.mxe.MetadataChangeLog"


@lru_cache(maxsize=1)
def mcl_schema_str() -> str:
    """The wheel's `MetadataChangeLog.avsc`, exactly as shipped."""
    return schemas_dir().joinpath(MCL_SCHEMA_FILE).read_text(encoding="utf-8")


def mcl_schema() -> dict[str, Any]:
    """The MCL schema as parsed JSON."""
    schema: dict[str, Any] = json.loads(mcl_schema_str())
    return schema


def registry_client(url: str) -> SchemaRegistryClient:
    """Client for a Confluent-compatible registry (Apicurio's ccompat API works)."""
    return SchemaRegistryClient({"url": url})


class MclCodec:
    """Serializes MCL records under subject `<topic>-value` (auto-registered) and back."""

    def __init__(self, registry_url: str) -> None:
        self.client = registry_client(registry_url)
        # set to a sandbox.glue.GlueFraming: MCLs written in Glue's wire format instead
        self.glue: Any = None
        self._serializer = AvroSerializer(self.client, mcl_schema_str(), conf={"auto.register.schemas": True})
        self._deserializer = AvroDeserializer(self.client)

    def encode(self, topic: str, record: dict[str, Any]) -> bytes:
        """Avro binary with Confluent framing: magic byte 0, 4-byte schema id, body (or Glue's)."""
        if self.glue is not None:
            return bytes(self.glue.encode(record))
        data = self._serializer(record, SerializationContext(topic, MessageField.VALUE))
        assert data is not None
        return data

    def decode(self, topic: str, data: bytes) -> dict[str, Any]:
        """Confluent-framed Avro back to an MCL record (writer schema from the registry), or a
        Glue-framed one (the wheel's schema: the sandbox wrote it)."""
        from sandbox.glue import decode_glue, is_glue

        if is_glue(data):
            return decode_glue(data)
        record = self._deserializer(data, SerializationContext(topic, MessageField.VALUE))
        if not isinstance(record, dict):
            raise ValueError(f"not an MCL record on {topic}: {record!r}")
        return record
