"""The walk: judge one urn with the scan's own pipeline, then show every boundary as it was seen.

The verdict is the scan's (the same join, re-observation and classification over a selection
of one urn, with a short adaptive sampling window); the boundaries explain it: the rows, the
MCL of each aspect's latest change, the MAE group's position on the urn's partition, the
entity document field by field, its system-metadata docs and its edges. The first broken
boundary is where a finding is placed (`auditor.core.triage.boundary_of`). The rows and the
documents shown are the ones the verdict was judged on (the join's, or the re-observation's last
round: `join.Witness`), not read again after it; only an urn no round could settle is read anew.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from auditor.core.model import Kind, Report, Selection
from auditor.core.records import EntityRows, SearchDoc
from auditor.core.triage import Boundary, Status, Step, TriageResult
from auditor.errors import ConfigError
from auditor.platforms.datahub.naming import document_id
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.join import Scanner, ScanPlan, Witness
from auditor.platforms.datahub.scan.run import ScanBackends, ScanOptions, ScanTarget, scanner_for
from auditor.platforms.datahub.triage.boundaries import (
    consumed_step,
    document_step,
    edges_step,
    position_of,
    published_step,
    rows_step,
    system_metadata_step,
)
from auditor.platforms.datahub.triage.near import near_matches
from auditor.platforms.datahub.urns import entity_type
from auditor.platforms.datahub.v3 import scan_with_v3
from auditor.triage.place import place

# a triage samples the group once more if a lagging partition did not move, up to this long; a
# consumer that commits less often than this is judged on the broker's log of its commits
# (`platforms.datahub.scan.evidence.STALL_LOOKBACK_SECONDS`): stalled only if it did not move
# there either
MAX_WINDOW_SECONDS = 1.5
WHOLE_INDEX = (Kind.MISSING_INDEX, Kind.DUPLICATE_DOCUMENT)


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
    backends.witness = witness = Witness(frozenset({urn}))
    try:
        report = scan_with_v3(backends, registry, report, options, target)  # V3's document too, if any
    finally:
        backends.witness = None
    if report.consumer_group and report.consumer_group != target.group:
        target = replace(target, group=report.consumer_group)  # the per-hook group the scan chose
    # the urn's own findings, and those on its index as a whole (missing, an alias over copies)
    out.findings = [c for c in report.findings if c.finding.urn == urn or c.finding.kind in WHOLE_INDEX]
    out.warnings = list(report.warnings)

    scanner = scanner_for(backends, registry, target, versions=backends.versions)  # the scan's rules
    plan, rows, seen = _as_judged(witness, urn) or _read_again(scanner, selection, urn)
    doc: SearchDoc | None = seen.get("doc", {}).get(urn)
    index = plan.indices.get(etype) or scanner.index_of(etype)

    out.steps.append(rows_step(backends, rows, doc is not None))
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
    part = getattr(backends.events, "partition_of", None)  # pgQueue routes by CRC32, Kafka by murmur2
    position = position_of(report, target, urn, part) if part else position_of(report, target, urn)
    published = published_step(backends, registry, target, urn, rows, position, out)
    out.steps.append(published)
    out.steps.append(consumed_step(target, position, published.facts.get("offsets", {}), report))
    out.steps.append(document_step(index, urn, doc, plan.indices))
    out.steps.append(system_metadata_step(plan.sysmeta, seen.get("sysmeta", {}).get(urn, [])))
    out.steps.append(edges_step(plan.graph, seen.get("edges", {}).get(urn, [])))
    place(out)
    return _finish(out, began)


Seen = dict[str, dict[str, Any]]  # projection -> urn -> what was read (the doc, sysmeta, edges)


def _as_judged(witness: Witness, urn: str) -> tuple[ScanPlan, EntityRows | None, Seen] | None:
    """The urn's rows and projections as the scan last judged them: the join's, or a later round of
    the re-observation's (read in causal order, rows unchanged around the documents); None when
    no join settled the urn (its rows changed in every round): then it is read again."""
    plan = witness.plan
    if plan is None or urn not in witness.entities:
        return None
    entity = witness.entities[urn]
    if entity is None:  # judged, nothing read: no rows, no document
        return plan, None, {}
    seen: Seen = {
        "doc": {urn: entity.doc} if entity.doc is not None else {},
        "sysmeta": {urn: entity.system_metadata} if entity.system_metadata else {},
        "edges": {urn: entity.edges} if entity.edges else {},
    }
    return plan, entity.rows, seen


def _read_again(scanner: Scanner, selection: Selection, urn: str) -> tuple[ScanPlan, EntityRows | None, Seen]:
    """The urn's rows and projections read now, by the scan's rules."""
    plan = scanner.plan(selection)
    rows = dict(scanner.row_stream(plan)).get(urn)
    seen: Seen = {name: dict(stream) for name, stream in scanner.projection_streams(plan).items()}
    return plan, rows, seen


def _finish(out: TriageResult, began: float) -> TriageResult:
    out.checked_at = datetime.now(UTC)
    out.seconds = time.monotonic() - began
    return out
