"""The boundaries of one entity as they were seen: rows, MCLs, the group, doc, system metadata, edges.

Each builder turns what was read into a Step (status OK unless it could not be checked); the
findings are placed on them afterwards (`auditor.triage.place`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from auditor.core.model import PartitionPosition, Report
from auditor.core.records import EntityRows, SearchDoc, json_loads
from auditor.core.triage import Boundary, Status, Step, TriageResult
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.naming import document_id
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.run import ScanBackends, ScanTarget
from auditor.platforms.datahub.triage.published import Published, look_up
from auditor.platforms.datahub.urns import urn_partition

# -- the boundaries as seen ------------------------------------------------------------------


def rows_step(backends: ScanBackends, rows: EntityRows | None, has_doc: bool) -> Step:
    if rows is None:
        detail = (
            "no version-0 row: the entity was hard-deleted (or never written)"
            if has_doc
            else "no version-0 row"
        )
        return Step(Boundary.ROWS, Status.INFO, detail, {"present": False})
    versions = backends.store.versions(rows.urn)
    newest = max(rows.rows.values(), key=lambda r: r.created)
    meta = _json(newest.systemmetadata)
    removed = bool(_json(rows.rows["status"].metadata).get("removed")) if "status" in rows.rows else False
    kept = ", ".join(f"{a} v{n - 1}" for a, (n, _) in sorted(versions.items()) if n > 1)
    facts = {
        "present": True,
        "aspects": sorted(rows.rows),
        "versions": {a: n for a, (n, _) in sorted(versions.items())},
        "newest_aspect": newest.aspect,
        "newest_createdon": newest.createdon.isoformat(),
        "createdby": versions.get(newest.aspect, (0, None))[1],
        "run_id": meta.get("runId"),
        "soft_deleted": removed,
    }
    detail = (
        f"{len(rows.rows)} aspects at version 0{_where(rows, facts)}; newest {newest.aspect} "
        f"at {newest.createdon.isoformat(timespec='seconds')}"
        f" by {facts['createdby'] or '?'}"
        + (f", runId {meta['runId']}" if meta.get("runId") else "")
        + (f"; older versions kept: {kept}" if kept else "")
        + ("; soft-deleted (status.removed = true)" if removed else "")
    )
    return Step(Boundary.ROWS, Status.OK, detail, facts)


def _where(rows: EntityRows, facts: dict[str, Any]) -> str:
    """A federation's rows: the store holding them (the newest writer's when two do)."""
    holders: tuple[str, ...] = getattr(rows, "holders", ())
    store: str = getattr(rows, "store", "")
    if not store:
        return ""
    facts["stores"] = list(holders)
    if len(holders) == 1:
        return f" in store {store}"
    others = ", ".join(h for h in holders if h != store)
    return f" of store {store} (the newest writer; also held by {others}: a conflict)"


def _json(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json_loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def position_of(
    report: Report, target: ScanTarget, urn: str, partition_of: Callable[[str, int], int] = urn_partition
) -> PartitionPosition | None:
    mine = [p for p in report.partitions if p.topic == target.versioned_topic]
    if not mine:
        return None
    partition = partition_of(urn, len(mine))
    return next((p for p in mine if p.partition == partition), None)


def published_step(
    backends: ScanBackends,
    registry: Registry,
    target: ScanTarget,
    urn: str,
    rows: EntityRows | None,
    position: PartitionPosition | None,
    out: TriageResult,
) -> Step:
    events = backends.events
    if events is None or position is None:
        why = "Kafka not configured" if events is None else "Kafka not reachable"
        out.unchecked.append(f"{Boundary.PUBLISHED}: {why}")
        return Step(Boundary.PUBLISHED, Status.UNCHECKED, why)
    if rows is None:
        return Step(Boundary.PUBLISHED, Status.INFO, "no rows: no change to publish")
    aspects = [a for a in rows.rows if registry.has_aspect(a) and not registry.aspect(a).timeseries]
    topic = target.versioned_topic
    try:
        found = look_up(events, topic, position.partition, position.start, position.end, rows, aspects)
    except BackendUnavailable as exc:
        out.unchecked.append(f"{Boundary.PUBLISHED}: {exc}")
        return Step(Boundary.PUBLISHED, Status.UNCHECKED, str(exc))
    return _published_step(found)


def _published_step(found: Published) -> Step:
    where = f"{found.topic}[{found.partition}]"
    parts = [f"{a} at offset {h.offset}" for a, h in sorted(found.own.items(), key=lambda x: x[1].offset)]
    detail = f"{found.hits} MCLs of the urn on {where} since its earliest change"
    if not found.complete:
        newest = found.read_to - found.read_from
        detail = f"{found.hits} MCLs of the urn in the newest {newest} messages of {where}"
    if parts:
        more = f", +{len(parts) - 6} more" if len(parts) > 6 else ""
        detail += "; latest changes published: " + ", ".join(parts[-6:]) + more
    if found.missing:
        detail += "; no MCL found for the latest change of: " + ", ".join(found.missing)
    if found.older:
        detail += "; changed before the messages read (not looked for): " + ", ".join(found.older)
    if not found.decoded:
        detail += " (values not decoded: no schema registry; matched by time)"
    facts = {
        "topic": found.topic,
        "partition": found.partition,
        "read": [found.read_from, found.read_to],
        "complete": found.complete,
        "offsets": {a: h.offset for a, h in found.own.items()},
        "missing": found.missing,
        "not_looked_for": found.older,
    }
    return Step(Boundary.PUBLISHED, Status.OK, detail, facts)


def consumed_step(
    target: ScanTarget, p: PartitionPosition | None, offsets: dict[str, int], report: Report
) -> Step:
    if p is None:
        return Step(
            Boundary.CONSUMED, Status.UNCHECKED, "Kafka not reachable: the group's position is unknown"
        )
    committed = p.committed if p.committed is not None else p.start
    waiting = sorted(o for o in offsets.values() if o >= committed)
    detail = (
        f"group {target.group} on {p.topic}[{p.partition}] at offset {committed} of {p.end} "
        f"(lag {p.lag}, {p.health.value}, {p.members} members" + (f", {p.rate:.1f}/s" if p.rate else "") + ")"
    )
    if offsets:
        detail += "; " + (
            f"{len(waiting)} of the MCLs above wait (from offset {waiting[0]})"
            if waiting
            else "every MCL above is consumed"
        )
    lost = p.lost_to_retention
    if lost is not None:  # a change of those offsets was published: the group never read it
        detail += (
            f"; offsets {lost[0]} to {lost[1]} were lost to retention: deleted before the group read "
            f"them (the first offset kept is {p.start}): an MCL among them will never be applied"
        )
    facts = {
        "group": target.group,
        "committed": p.committed,
        "end": p.end,
        "lag": p.lag,
        "health": p.health.value,
        "members": p.members,
        "rate": p.rate,
        "eta_seconds": p.eta_seconds,
        "lost_to_retention": list(lost) if lost is not None else None,
    }
    return Step(Boundary.CONSUMED, Status.OK, detail, facts)


def document_step(index: str, urn: str, doc: SearchDoc | None, indices: dict[str, str]) -> Step:
    doc_id = document_id(urn)
    if index not in indices.values():
        return Step(
            Boundary.DOCUMENT,
            Status.UNCHECKED,
            f"the index {index} does not exist",
            {"present": False, "index": index},
        )
    if doc is None:
        return Step(
            Boundary.DOCUMENT,
            Status.OK,
            f"absent from {index} (_id {doc_id})",
            {"present": False, "index": index},
        )
    removed = bool(doc.source.get("removed"))
    detail = f"present in {index} (_id {doc.id}, {len(doc.source)} fields" + (
        ", removed = true)" if removed else ")"
    )
    return Step(
        Boundary.DOCUMENT,
        Status.OK,
        detail,
        {"present": True, "index": index, "id": doc.id, "removed": removed},
    )


def system_metadata_step(index: str | None, docs: list[dict[str, Any]]) -> Step:
    if index is None:
        return Step(Boundary.SYSTEM_METADATA, Status.UNCHECKED, "no system-metadata index")
    aspects = sorted(str(d.get("aspect")) for d in docs)
    return Step(
        Boundary.SYSTEM_METADATA,
        Status.OK,
        f"{len(docs)} docs in {index}" + (f" ({', '.join(aspects)})" if aspects else ""),
        {"count": len(docs), "aspects": aspects},
    )


def edges_step(index: str | None, edges: list[dict[str, Any]]) -> Step:
    if index is None:
        return Step(Boundary.EDGES, Status.UNCHECKED, "no graph index")
    kinds = sorted({str(e.get("relationshipType")) for e in edges})
    return Step(
        Boundary.EDGES,
        Status.OK,
        f"{len(edges)} outgoing edges in {index}" + (f" ({', '.join(kinds)})" if kinds else ""),
        {"count": len(edges)},
    )
