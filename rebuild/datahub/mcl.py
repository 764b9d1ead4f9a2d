"""The RESTATE MCL of one version-0 row, as DataHub's RestoreIndices emits it."""

from __future__ import annotations

import json
import time
from typing import Any

from auditor.core.json_guard import loads as guarded_loads
from auditor.core.records import AspectRow, json_loads
from auditor.platforms.datahub.urns import entity_type

RESTATE_ACTOR = "urn:li:corpuser:__datahub_system"
JSON_CONTENT_TYPE = "application/json"


def _record_fields(schema: Any, name: str) -> list[dict[str, Any]] | None:
    """The fields of the named record anywhere in an Avro schema (parsed JSON)."""
    if isinstance(schema, list):
        for branch in schema:
            found = _record_fields(branch, name)
            if found is not None:
                return found
        return None
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "record":
        if schema.get("name") == name:
            return list(schema.get("fields", []))
        for f in schema.get("fields", []):
            found = _record_fields(f.get("type"), name)
            if found is not None:
                return found
    return None


class RestateBuilder:
    """Builds RESTATE MCL records that fit the registered MetadataChangeLog schema."""

    def __init__(self, schema_str: str) -> None:
        schema = json.loads(schema_str)
        fields = _record_fields(schema, "SystemMetadata")
        if fields is None:
            raise ValueError("the registered schema has no SystemMetadata record: not a MetadataChangeLog")
        self.system_fields = [(f["name"], f.get("default")) for f in fields]

    def system_metadata(self, row: AspectRow) -> dict[str, Any]:
        """The row's systemMetadata with `properties.forceIndexing = "true"` (every field present)."""
        stored: Any = {}
        if row.systemmetadata:
            try:
                stored = json_loads(row.systemmetadata)
            except ValueError:  # orjson is stricter (a lone surrogate): the stdlib's reading
                try:
                    stored = guarded_loads(row.systemmetadata)
                except ValueError:  # not JSON, or nested too deep to read
                    stored = {}
        if not isinstance(stored, dict):
            stored = {}
        out = {name: stored.get(name, default) for name, default in self.system_fields}
        properties = {str(k): str(v) for k, v in (stored.get("properties") or {}).items()}
        properties["forceIndexing"] = "true"
        out["properties"] = properties
        if out.get("lastObserved") is None:
            out["lastObserved"] = int(row.createdon.timestamp() * 1000)
        return out

    def record(self, urn: str, row: AspectRow) -> dict[str, Any]:
        """One MCL: `changeType=RESTATE`, the aspect as JSON bytes, no previous value."""
        return {
            "auditHeader": None,
            "entityType": entity_type(urn),
            "entityUrn": urn,
            "entityKeyAspect": None,
            "changeType": "RESTATE",
            "aspectName": row.aspect,
            "aspect": {"value": row.metadata.encode("utf-8"), "contentType": JSON_CONTENT_TYPE},
            "systemMetadata": self.system_metadata(row),
            "headers": None,
            "previousAspectValue": None,
            "previousSystemMetadata": None,
            "created": {
                "time": int(time.time() * 1000),
                "actor": RESTATE_ACTOR,
                "impersonator": None,
                "message": None,
            },
        }
