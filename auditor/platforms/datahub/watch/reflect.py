"""Whether the index reflects one MCL: the fields its aspect writes, and its system-metadata doc."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditor.core.model import Kind
from auditor.platforms.datahub.documents.aspect_projection import ProjectionError, project_aspect
from auditor.platforms.datahub.documents.compare import compare_document
from auditor.platforms.datahub.documents.expected import ExpectedDocument
from auditor.platforms.datahub.documents.projection import project_entity
from auditor.platforms.datahub.naming import (
    document_id,
    entity_index,
    system_metadata_id,
    system_metadata_index,
)
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.urns import UrnError, entity_type


@dataclass
class WatchedEvent:
    """One MCL the watch waits to see in the index."""

    topic: str
    partition: int
    offset: int
    urn: str
    aspect: str
    change: str  # UPSERT, CREATE, RESTATE, PATCH, DELETE, ...
    produced_at: float  # the Kafka message timestamp (epoch seconds): latency counts from here
    entity_type: str
    value: Mapping[str, Any] | None  # the aspect as written (None: a delete)
    run_id: str | None = None
    last_observed: int | None = None  # systemMetadata.lastObserved (ms)
    key_aspect: bool = False  # deleting it deletes the entity (and its doc)
    fields: frozenset[str] = frozenset()  # the doc fields this aspect's upsert writes
    counted: bool = False  # settled for the SLI (good or late) already
    ids: tuple[str, tuple[tuple[str, str], tuple[str, str]]] | None = None  # doc_ids' cache
    expected: ExpectedDocument | None = None  # the projection's cache

    @property
    def key(self) -> tuple[str, str]:
        return self.urn, self.aspect


@dataclass(frozen=True)
class Reflection:
    """What one read of the index says about an event."""

    reflected: bool
    kind: Kind | None = None  # what is missing when not reflected
    detail: str = ""


def decode_mcl(value: Mapping[str, Any]) -> tuple[str, str, str, Any, Mapping[str, Any]] | None:
    """(urn, aspect, changeType, aspect value or None, systemMetadata) of a decoded MCL."""
    urn, aspect, change = value.get("entityUrn"), value.get("aspectName"), value.get("changeType")
    if not isinstance(urn, str) or not isinstance(aspect, str) or not isinstance(change, str):
        return None
    payload = (value.get("aspect") or {}).get("value")
    parsed: Any = None
    if payload is not None:
        try:
            parsed = json.loads(payload)
        except ValueError:
            return None
    return urn, aspect, change, parsed, value.get("systemMetadata") or {}


def event_of(
    registry: Registry, topic: str, partition: int, offset: int, produced_at: float, value: Mapping[str, Any]
) -> WatchedEvent | None:
    """The watched event of a decoded MCL; None when the index cannot show it (an unknown entity
    type or aspect, a timeseries aspect: its docs live elsewhere, or an MCL without a urn)."""
    decoded = decode_mcl(value)
    if decoded is None:
        return None
    urn, aspect, change, parsed, sm = decoded
    try:
        etype = entity_type(urn)
    except UrnError:
        return None
    if not registry.has_entity(etype) or not registry.is_known(etype, aspect):
        return None
    spec = registry.aspect(aspect)
    if spec.timeseries:
        return None
    if change != "DELETE" and not isinstance(parsed, dict):
        return None
    written: frozenset[str] = frozenset()
    if change != "DELETE":
        try:  # the fields this aspect's upsert writes: the entity's other aspects are not its to show
            written = frozenset(project_aspect(spec, parsed))
        except ProjectionError:
            return None  # a malformed value: not checkable (the scan calls the row invalid)
    entity = registry.entity(etype)
    observed = sm.get("lastObserved")
    return WatchedEvent(
        topic,
        partition,
        offset,
        urn,
        aspect,
        change,
        produced_at,
        entity.name,
        parsed if change != "DELETE" else None,
        run_id=sm.get("runId"),
        last_observed=int(observed) if isinstance(observed, int) else None,
        key_aspect=entity.key_aspect == aspect,
        fields=written,
    )


def doc_ids(event: WatchedEvent, prefix: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """((entity index, doc id), (system-metadata index, doc id)) the event should change
    (computed once per event: it is read every round until it shows)."""
    if event.ids is None or event.ids[0] != prefix:
        event.ids = (
            prefix,
            (
                (entity_index(event.entity_type, prefix), document_id(event.urn)),
                (system_metadata_index(prefix), system_metadata_id(event.urn, event.aspect)),
            ),
        )
    return event.ids[1]


def reflects(
    registry: Registry, event: WatchedEvent, doc: Mapping[str, Any] | None, sm_doc: Mapping[str, Any] | None
) -> Reflection:
    """Does one read of the entity doc and the (urn, aspect) system-metadata doc show the event?"""
    if event.value is None:  # a delete: the system-metadata doc goes (the entity doc with its key)
        if event.key_aspect and doc is not None:
            return Reflection(False, Kind.ORPHAN_DOCUMENT, "the entity doc is still there")
        if sm_doc is not None and not sm_doc.get("removed"):
            return Reflection(False, Kind.STALE_SYSTEM_METADATA, "its system-metadata doc is still there")
        return Reflection(True)
    if doc is None:
        return Reflection(False, Kind.MISSING_DOCUMENT, "no entity doc")
    written = event.fields
    if event.expected is None:  # projected once per event
        event.expected = project_entity(registry, event.urn, {event.aspect: event.value})
    expected = event.expected
    stale = [d.field for d in compare_document(expected, doc) if d.field in written]
    if stale:
        return Reflection(False, Kind.STALE_FIELDS, "fields not yet as written: " + ", ".join(stale[:5]))
    if sm_doc is None:
        return Reflection(False, Kind.STALE_SYSTEM_METADATA, "no system-metadata doc")
    if event.run_id is not None and sm_doc.get("runId") != event.run_id:
        return Reflection(False, Kind.STALE_SYSTEM_METADATA, "system-metadata runId differs")
    if event.last_observed is not None and sm_doc.get("lastUpdated") != event.last_observed:
        return Reflection(False, Kind.STALE_SYSTEM_METADATA, "system-metadata lastUpdated differs")
    return Reflection(True)
