"""`auditor probe`: write the canary, find its MCL, time until search shows it."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from auditor.core.watch_model import ProbeResult
from auditor.platforms.datahub.naming import entity_index, system_metadata_index
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.urns import entity_type, urn_partition
from auditor.platforms.datahub.watch.reflect import WatchedEvent, doc_ids, event_of, reflects

CANARY_URN = "urn:li:dataset:(urn:li:dataPlatform:auditor,canary,PROD)"
CANARY_ASPECT = "datasetProperties"
CANARY_KEY = ("datasetKey", {"platform": "urn:li:dataPlatform:auditor", "name": "canary", "origin": "PROD"})
DocReader = Callable[[str, list[str]], Mapping[str, Mapping[str, Any]]]


def canary_value(nonce: str, at: float) -> dict[str, Any]:
    """What the canary says: who wrote it and when (a search for it finds nothing else)."""
    when = datetime.fromtimestamp(at, tz=UTC).isoformat(timespec="seconds")
    return {
        "name": "auditor canary",
        "description": f"Freshness canary written by `auditor probe` at {when} ({nonce}); "
        "remove it with `auditor probe --remove --apply`.",
        "customProperties": {"auditor.probe": nonce},
        "tags": [],
    }


def probe(
    registry: Registry,
    writer: Any,
    read_docs: DocReader,
    *,
    slo_seconds: float,
    timeout: float,
    interval: float,
    index_prefix: str = "",
    events: Any = None,
    topic: str = "MetadataChangeLog_Versioned_v1",
    urn: str = CANARY_URN,
) -> ProbeResult:
    """Write the canary once and time it: write -> MCL (its Kafka timestamp) -> the index."""
    nonce = uuid.uuid4().hex[:12]
    etype = entity_type(urn)
    value = canary_value(nonce, time.time())
    started = time.time()
    if writer.path == "store":
        sm = writer.write(urn, etype, CANARY_ASPECT, value, key=CANARY_KEY if urn == CANARY_URN else None)
    else:
        sm = writer.write(urn, etype, CANARY_ASPECT, value)
    written_at = time.time()
    mcl = {
        "entityUrn": urn,
        "aspectName": CANARY_ASPECT,
        "changeType": "UPSERT",
        "aspect": {"value": json.dumps(value).encode(), "contentType": "application/json"},
        "systemMetadata": sm,
    }
    event = event_of(registry, topic, 0, -1, started, mcl)
    if event is None:
        raise ValueError(f"{urn} {CANARY_ASPECT}: the registry cannot project the canary")
    notes: list[str] = []
    if not sm:
        notes.append("written through GMS: its system-metadata doc is checked for presence only")
    reflected_at = _wait(registry, event, read_docs, index_prefix, written_at + timeout, interval)
    published_at, partition, offset = _published(events, topic, urn, nonce, started)
    if events is None:
        notes.append("no Kafka configured: the MCL's time is not measured")
    elif published_at is None:
        notes.append("the canary's MCL was not found on the topic (dropped, or another topic)")
    if reflected_at is None:
        notes.append(f"the index did not show the canary within {timeout:g}s")
    return ProbeResult(
        urn,
        CANARY_ASPECT,
        writer.path,
        slo_seconds,
        started,
        published_at,
        reflected_at,
        interval,
        offset,
        partition,
        tuple(notes),
        {
            "entity_index": entity_index(etype, index_prefix),
            "system_metadata_index": system_metadata_index(index_prefix),
            "nonce": nonce,
            "acknowledged_seconds": round(written_at - started, 3),
        },
    )


def _wait(
    registry: Registry,
    event: WatchedEvent,
    read_docs: DocReader,
    prefix: str,
    deadline: float,
    interval: float,
) -> float | None:
    """The time of the first read that shows the event (None: not before the deadline)."""
    (ei, eid), (si, sid) = doc_ids(event, prefix)
    while True:
        doc = read_docs(ei, [eid]).get(eid)
        sm_doc = read_docs(si, [sid]).get(sid)
        now = time.time()
        if reflects(registry, event, doc, sm_doc).reflected:
            return now
        if now >= deadline:
            return None
        time.sleep(interval)


def _published(
    events: Any, topic: str, urn: str, nonce: str, started: float
) -> tuple[float | None, int | None, int | None]:
    """The Kafka timestamp, partition and offset of the canary's MCL (matched by its nonce)."""
    if events is None:
        return None, None, None
    partitions = events.partitions(topic)
    if not partitions:
        return None, None, None
    partition = getattr(events, "partition_of", urn_partition)(urn, partitions)  # pgQueue: CRC32
    start = events.offset_for_time(topic, partition, datetime.fromtimestamp(started - 1, tz=UTC))
    if start is None:
        return None, partition, None
    end = next(s.end for s in events.sample([topic], "auditor-probe-none") if s.partition == partition)
    hits, _ = events.find(topic, partition, {urn}, start, end, 10_000)
    for hit in hits:
        payload = hit.value.decode("utf-8", "replace") if hit.value is not None else ""
        if nonce in payload:
            return hit.timestamp.timestamp(), partition, hit.offset
    return None, partition, None
