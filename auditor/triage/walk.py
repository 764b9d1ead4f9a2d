"""The walk: judge one urn with the scan's own pipeline, then show every boundary as it was seen.

The verdict is the scan's (the same join, re-observation and classification over a selection
of one urn, with a short adaptive sampling window); the boundaries explain it: the rows, the
MCL of each aspect's latest change, the MAE group's position on the urn's partition, the
entity document field by field, its system-metadata docs and its edges. The first broken
boundary is where a finding is placed (`auditor.core.triage.boundary_of`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from auditor.backends.protocols import State
from auditor.core.classify import History
from auditor.core.model import Classified, Finding, Kind, PartitionPosition, Report, Selection
from auditor.core.naming import document_id
from auditor.core.records import EntityRows, OffsetSample, SearchDoc, json_loads
from auditor.core.registry import Registry
from auditor.core.triage import Boundary, Status, Step, TriageResult, boundary_of, status_of
from auditor.core.urns import entity_type, urn_partition
from auditor.errors import BackendUnavailable, ConfigError
from auditor.scan.run import ScanBackends, ScanOptions, ScanTarget, run_scan, scanner_for
from auditor.triage.near import near_matches
from auditor.triage.published import Published, look_up

# a triage samples the group once more if a lagging partition did not move, up to this long
MAX_WINDOW_SECONDS = 1.5


class ReadOnlyState:
    """The state file's history and last offsets, read; a triage records nothing."""

    def __init__(self, inner: State) -> None:
        self.inner = inner

    def history(self, keys: Iterable[str]) -> dict[str, History]:
        return self.inner.history(keys)

    def record_findings(
        self,
        findings: Iterable[Finding],
        now: datetime,
        scope_types: tuple[str, ...],
        forget_unseen: bool = True,
    ) -> None:
        return None

    def previous_samples(self, group: str) -> dict[tuple[str, int], OffsetSample]:
        return self.inner.previous_samples(group)

    def record_samples(self, group: str, samples: Iterable[OffsetSample]) -> None:
        return None

    def close(self) -> None:
        self.inner.close()


def walk(
    backends: ScanBackends,
    registry: Registry,
    target: ScanTarget,
    urn: str,
    *,
    asked: str | None = None,
    read_as: list[str] | None = None,
    grace: float = 300.0,
    settle: float = 10.0,
) -> TriageResult:
    """Row -> MCL -> consumer -> entity doc -> system metadata -> edges, for one urn."""
    began = time.monotonic()
    etype = entity_type(urn)
    if not registry.has_entity(etype):
        raise ConfigError(
            f"unknown entity type {etype!r} in {urn!r}",
            hint="`auditor registry` lists the entity types DataHub's schemas define",
        )
    etype = registry.entity(etype).name
    out = TriageResult(asked if asked is not None else urn, urn, list(read_as or []))
    selection = Selection(entity_types=(etype,), urns=(urn,))
    report = Report(started_at=datetime.now(UTC), scope=selection, consumer_group=target.group)
    options = ScanOptions(
        grace=grace, settle=settle, sample_window=0, use_state=False, max_window=MAX_WINDOW_SECONDS
    )
    report = run_scan(backends, registry, report, options, target)
    out.findings = [c for c in report.findings if c.finding.urn == urn]
    out.warnings = list(report.warnings)

    scanner = scanner_for(backends, registry, target)
    plan = scanner.plan(selection)
    rows = dict(scanner.row_stream(plan)).get(urn)
    seen: dict[str, dict[str, Any]] = {
        name: dict(stream) for name, stream in scanner.projection_streams(plan).items()
    }
    doc: SearchDoc | None = seen.get("doc", {}).get(urn)
    index = plan.indices.get(etype) or scanner.index_of(etype)

    out.steps.append(_rows(backends, rows, doc is not None))
    if rows is None and doc is None and not out.findings:
        out.steps.append(
            Step(
                Boundary.DOCUMENT,
                Status.INFO,
                f"no document in {index} (_id {document_id(urn)})",
                {"present": False, "index": index},
            )
        )
        out.near = near_matches(
            backends.store, backends.search, index if index in plan.indices.values() else None, urn
        )
        return _finish(out, began)
    position = _position(report, target, urn)
    published = _published(backends, registry, target, urn, rows, position, out)
    out.steps.append(published)
    out.steps.append(_consumed(target, position, published.facts.get("offsets", {}), report))
    out.steps.append(_document(index, urn, doc, plan.indices))
    out.steps.append(_system_metadata(plan.sysmeta, seen.get("sysmeta", {}).get(urn, [])))
    out.steps.append(_edges(plan.graph, seen.get("edges", {}).get(urn, [])))
    _place(out)
    return _finish(out, began)


def _finish(out: TriageResult, began: float) -> TriageResult:
    out.checked_at = datetime.now(UTC)
    out.seconds = time.monotonic() - began
    return out


# -- the boundaries as seen ------------------------------------------------------------------


def _rows(backends: ScanBackends, rows: EntityRows | None, has_doc: bool) -> Step:
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
        f"{len(rows.rows)} aspects at version 0; newest {newest.aspect} "
        f"at {newest.createdon.isoformat(timespec='seconds')}"
        f" by {facts['createdby'] or '?'}"
        + (f", runId {meta['runId']}" if meta.get("runId") else "")
        + (f"; older versions kept: {kept}" if kept else "")
        + ("; soft-deleted (status.removed = true)" if removed else "")
    )
    return Step(Boundary.ROWS, Status.OK, detail, facts)


def _json(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json_loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _position(report: Report, target: ScanTarget, urn: str) -> PartitionPosition | None:
    mine = [p for p in report.partitions if p.topic == target.versioned_topic]
    if not mine:
        return None
    partition = urn_partition(urn, len(mine))
    return next((p for p in mine if p.partition == partition), None)


def _published(
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


def _consumed(
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
    facts = {
        "group": target.group,
        "committed": p.committed,
        "end": p.end,
        "lag": p.lag,
        "health": p.health.value,
        "members": p.members,
        "rate": p.rate,
        "eta_seconds": p.eta_seconds,
    }
    return Step(Boundary.CONSUMED, Status.OK, detail, facts)


def _document(index: str, urn: str, doc: SearchDoc | None, indices: dict[str, str]) -> Step:
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


def _system_metadata(index: str | None, docs: list[dict[str, Any]]) -> Step:
    if index is None:
        return Step(Boundary.SYSTEM_METADATA, Status.UNCHECKED, "no system-metadata index")
    aspects = sorted(str(d.get("aspect")) for d in docs)
    return Step(
        Boundary.SYSTEM_METADATA,
        Status.OK,
        f"{len(docs)} docs in {index}" + (f" ({', '.join(aspects)})" if aspects else ""),
        {"count": len(docs), "aspects": aspects},
    )


def _edges(index: str | None, edges: list[dict[str, Any]]) -> Step:
    if index is None:
        return Step(Boundary.EDGES, Status.UNCHECKED, "no graph index")
    kinds = sorted({str(e.get("relationshipType")) for e in edges})
    return Step(
        Boundary.EDGES,
        Status.OK,
        f"{len(edges)} outgoing edges in {index}" + (f" ({', '.join(kinds)})" if kinds else ""),
        {"count": len(edges)},
    )


# -- placing the findings --------------------------------------------------------------------


def _place(out: TriageResult) -> None:
    """Each finding marks its boundary broken (or pending); alike findings are said in one line."""
    steps = {s.boundary: s for s in out.steps}
    groups: dict[tuple[Boundary, str, str], list[Classified]] = {}
    for c in sorted(out.findings, key=lambda c: c.verdict.rank):
        key = (boundary_of(c), f"{c.verdict.value}/{c.subkind}", _tail(c))
        groups.setdefault(key, []).append(c)
    for (where, head, tail), found in groups.items():
        step = steps.get(where)
        if step is None:
            continue
        if step.status != Status.BROKEN:
            step.status = status_of(found[0])
        whats = [w for c in found if (w := what(c, out.findings))]
        shown = "; ".join(whats[:MAX_SHOWN]) + (
            f"; +{len(whats) - MAX_SHOWN} more" if len(whats) > MAX_SHOWN else ""
        )
        count = f" x{len(found)}" if len(found) > 1 else ""
        step.problems.append(f"{head}{count}: " + (f"{shown} - " if shown else "") + tail)


MAX_SHOWN = 4  # alike findings named in one problem line before "+N more"


def _tail(c: Classified) -> str:
    eta = c.evidence.eta_seconds
    return c.evidence.reason + (f" (ETA {eta:.0f}s)" if eta is not None and eta > 0 else "")


def what(c: Classified, all_findings: list[Classified]) -> str:
    """What exactly is wrong, from the finding's details."""
    f = c.finding
    out = ""
    if f.kind == Kind.ORPHAN_DOCUMENT:
        sysmeta = sum(
            1
            for x in all_findings
            if x.finding.kind == Kind.STALE_SYSTEM_METADATA and x.finding.details.get("problem") == "orphan"
        )
        edges = sum(1 for x in all_findings if x.finding.kind == Kind.ORPHAN_EDGE)
        out = (
            f"the rows are gone; the document (and {sysmeta} system-metadata docs, {edges} edges) left behind"
        )
    elif f.kind in (Kind.STALE_FIELDS, Kind.FIELD_LEFT_BEHIND):
        fields = f.details.get("fields") or []
        shown = [
            f"{d['field']}: expected {d['expected']!r}, found {d['actual']!r}"
            + (" (left behind)" if d.get("kind") == "left_behind" else "")
            for d in fields[:MAX_SHOWN]
        ]
        more = f"; +{len(fields) - MAX_SHOWN} more fields" if len(fields) > MAX_SHOWN else ""
        out = "; ".join(shown) + more
    elif f.kind == Kind.SOFT_DELETE_MISMATCH:
        out = (
            f"the rows say removed = {f.details.get('expected_removed')}, "
            f"the document says {f.details.get('actual_removed')}"
            + ("; still searchable" if f.details.get("expected_removed") else "")
        )
    elif f.kind == Kind.MISSING_DOCUMENT:
        out = "no document although the rows exist"
    elif f.kind == Kind.STALE_SYSTEM_METADATA:
        out = f"{f.aspect} ({f.details.get('problem', 'stale')})"
    elif f.kind in (Kind.MISSING_EDGE, Kind.ORPHAN_EDGE):
        out = f"{f.details.get('relationship')} -> {f.details.get('destination')}"
    elif f.kind == Kind.MALFORMED_ASPECT:
        out = f"{f.aspect}: {f.details.get('error', 'cannot be parsed')}"
    if f.aspect and f.kind in (Kind.STALE_FIELDS, Kind.FIELD_LEFT_BEHIND, Kind.MISSING_EDGE):
        out = f"[{f.aspect}] " + out
    return out
