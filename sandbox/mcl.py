"""Build and read MetadataChangeLog records the way GMS fills them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sandbox.naming import DEFAULT_RUN_ID

JSON_CONTENT_TYPE = "application/json"
SYSTEM_METADATA_FIELDS = (
    "lastObserved",
    "runId",
    "lastRunId",
    "pipelineName",
    "registryName",
    "registryVersion",
    "properties",
    "version",
    "schemaVersion",
    "aspectCreated",
    "aspectModified",
)
SYSTEM_METADATA_DEFAULTS: dict[str, Any] = {
    "lastObserved": 0,
    "runId": DEFAULT_RUN_ID,
    "lastRunId": DEFAULT_RUN_ID,
}
UPDATE_CHANGE_TYPES = frozenset({"UPSERT", "CREATE", "CREATE_ENTITY", "RESTATE", "PATCH"})


def aspect_json(value: dict[str, Any]) -> str:
    """Compact JSON of an aspect, as GMS stores it and sends it in `GenericAspect.value`."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def generic_aspect(value: dict[str, Any]) -> dict[str, Any]:
    """`GenericAspect` record: JSON bytes plus content type."""
    return {"value": aspect_json(value).encode("utf-8"), "contentType": JSON_CONTENT_TYPE}


def system_metadata_record(sm: dict[str, Any] | None) -> dict[str, Any] | None:
    """Stored systemmetadata JSON -> Avro `SystemMetadata` record (every field present)."""
    if sm is None:
        return None
    record = {name: sm.get(name, SYSTEM_METADATA_DEFAULTS.get(name)) for name in SYSTEM_METADATA_FIELDS}
    if record["properties"] is not None:
        record["properties"] = {str(k): str(v) for k, v in record["properties"].items()}
    return record


def build_mcl(
    *,
    entity_type: str,
    urn: str,
    change_type: str,
    aspect_name: str,
    aspect: dict[str, Any] | None,
    system_metadata: dict[str, Any] | None,
    previous_aspect: dict[str, Any] | None,
    previous_system_metadata: dict[str, Any] | None,
    created_time_ms: int,
    actor: str,
) -> dict[str, Any]:
    """The MCL GMS emits after committing one aspect write (or delete)."""
    return {
        "auditHeader": None,
        "entityType": entity_type,
        "entityUrn": urn,
        "entityKeyAspect": None,
        "changeType": change_type,
        "aspectName": aspect_name,
        "aspect": generic_aspect(aspect) if aspect is not None else None,
        "systemMetadata": system_metadata_record(system_metadata),
        "headers": None,
        "previousAspectValue": (generic_aspect(previous_aspect) if previous_aspect is not None else None),
        "previousSystemMetadata": system_metadata_record(previous_system_metadata),
        "created": {"time": created_time_ms, "actor": actor, "impersonator": None, "message": None},
    }


@dataclass(frozen=True)
class ChangeLog:
    """A decoded MCL reduced to what the MAE consumer needs."""

    entity_type: str
    urn: str
    change_type: str
    aspect_name: str
    aspect: dict[str, Any] | None
    previous_aspect: dict[str, Any] | None
    system_metadata: dict[str, Any] | None
    previous_system_metadata: dict[str, Any] | None
    created_time: int | None
    created_actor: str | None

    @property
    def force_indexing(self) -> bool:
        """`systemMetadata.properties.forceIndexing == "true"` (RestoreIndices, replays)."""
        props = (self.system_metadata or {}).get("properties") or {}
        return any(str(props.get(k, "")).lower() == "true" for k in ("forceIndexing", "FORCE_INDEXING"))


def _parse_generic(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    if value.get("contentType", JSON_CONTENT_TYPE) != JSON_CONTENT_TYPE:
        raise ValueError(f"unsupported aspect content type {value.get('contentType')!r}")
    raw = value["value"]
    parsed: dict[str, Any] = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
    return parsed


def read_mcl(record: dict[str, Any]) -> ChangeLog:
    """Decoded Avro MCL record -> ChangeLog (aspect JSON parsed)."""
    urn = record.get("entityUrn")
    if not urn:
        raise ValueError("MCL without entityUrn (key-aspect-only MCLs are not supported)")
    created = record.get("created") or {}
    return ChangeLog(
        entity_type=record["entityType"],
        urn=urn,
        change_type=record["changeType"],
        aspect_name=record.get("aspectName") or "",
        aspect=_parse_generic(record.get("aspect")),
        previous_aspect=_parse_generic(record.get("previousAspectValue")),
        system_metadata=record.get("systemMetadata"),
        previous_system_metadata=record.get("previousSystemMetadata"),
        created_time=created.get("time"),
        created_actor=created.get("actor"),
    )
