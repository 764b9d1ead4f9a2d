"""DataHub's V3 entity index, audited beside V2 when it exists.

DataHub (from 1.3, PR 14966) can write a second, unified copy of every entity document:
`[prefix_]<key>index_v3`, where the key is the entity's search group when its registry entry
names one (several entity types in one index, told apart by the `_entityType` field) and the
entity type otherwise. Its document `_id` is the SHA-256 hex of the urn (V2 keeps the URL-encoded
urn); the `_source` holds the same searchable fields. Both are written by the same MCL, so a V3
document that is missing, stale or orphaned is a divergence exactly as a V2 one is, and a
difference found in one of the two only ("V2 and V3 disagree") says which write was lost.

The V3 pass is the scan's own pipeline again (join, causal re-observation, verdicts) over the
V3 indices, filtered by `_entityType`, with the entity-document checks only (system metadata
and edges are shared). Its findings carry the V3 index's name; the report's `v3` section lists
the indices and the entities wrong in one version only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from auditor.core.model import Classified, Report
from auditor.platforms.datahub.naming import ENTITY_INDEX_V3_SUFFIX, V3_TYPE_FIELD, prefixed
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.join import Progress
from auditor.platforms.datahub.scan.run import ScanBackends, ScanOptions, ScanTarget, run_scan
from auditor.platforms.datahub.sections import merge_outdated, merge_reindex, outdated, reindexes
from auditor.scan.options import FindingsSink

DOC_CHECKS = ("index.missing-document", "index.orphan-document", "index.stale-fields", "index.soft-delete")


def v3_indices(search: Any, index_prefix: str, registry: Registry) -> dict[str, str]:
    """Entity type -> the V3 index (or alias) holding its documents; empty when there is no V3."""
    listed = search.names(prefixed(f"*{ENTITY_INDEX_V3_SUFFIX}", index_prefix))
    names = sorted(n for n in listed if n.endswith(ENTITY_INDEX_V3_SUFFIX))
    if not names:
        return {}
    head = prefixed("", index_prefix)
    by_type: dict[str, str] = {}
    for name in names:
        key = name[len(head) : -len(ENTITY_INDEX_V3_SUFFIX)]
        if registry.has_entity(key):  # no search group: the entity type's own index
            by_type.setdefault(registry.entity(key).name, name)
            continue
        for etype in search.terms(name, V3_TYPE_FIELD):  # a search group: the types it holds
            if registry.has_entity(etype):
                by_type[registry.entity(etype).name] = name
    return by_type


def scan_with_v3(
    backends: ScanBackends,
    registry: Registry,
    report: Report,
    options: ScanOptions,
    target: ScanTarget,
    progress: Progress | None = None,
    log: Callable[[str], None] | None = None,
) -> Report:
    """The scan of V2 (as always), then of V3 when it exists, merged into one report. Every
    finding (`--findings-out`) goes to one sink for both passes, closed with the merged report."""
    if options.findings_out is None:
        return _scan_with_v3(backends, registry, report, options, target, progress, log)
    sink = options.findings_out(report)
    try:
        shared = replace(options, findings_out=lambda _: _Unclosed(sink))
        _scan_with_v3(backends, registry, report, shared, target, progress, log)
        sink.close(report)
    finally:
        sink.discard()
    return report


class _Unclosed:
    """A pass's view of the scan's sink: its findings written, its end not the scan's."""

    def __init__(self, sink: FindingsSink) -> None:
        self.sink = sink

    def write(self, c: Classified) -> None:
        self.sink.write(c)

    def close(self, report: Report) -> None:
        pass

    def discard(self) -> None:
        pass


def _scan_with_v3(
    backends: ScanBackends,
    registry: Registry,
    report: Report,
    options: ScanOptions,
    target: ScanTarget,
    progress: Progress | None,
    log: Callable[[str], None] | None,
) -> Report:
    run_scan(backends, registry, report, options, target, progress, log)
    indices = v3_indices(backends.search, target.index_prefix, registry)
    wanted = report.scope.entity_types
    types = tuple(t for t in sorted(indices) if not wanted or t in {registry.entity(w).name for w in wanted})
    if not types:
        return report
    if log:
        log(f"auditing DataHub's V3 index ({', '.join(sorted(set(indices.values())))})")
    sub = Report(
        started_at=datetime.now(UTC),
        scope=replace(report.scope, entity_types=types),
        index_prefix=report.index_prefix,
        consumer_group=report.consumer_group,
    )
    v3_target = replace(
        target,
        entity_indices=tuple((t, indices[t]) for t in types),
        type_field=V3_TYPE_FIELD,
    )
    run_scan(backends, registry, sub, replace(options, use_state=False), v3_target, None, log)
    merge(report, sub, {t: indices[t] for t in types}, options.max_findings)
    return report


def merge(report: Report, v3: Report, indices: dict[str, str], max_findings: int) -> None:
    """The V3 pass's findings, counts and notes into the report; V2/V3 disagreement named."""
    v3_names = set(indices.values())
    v2_wrong = {
        c.finding.urn
        for c in report.findings
        if c.finding.check in DOC_CHECKS and c.finding.entity_type in indices
    }
    v3_wrong = {c.finding.urn for c in v3.findings if c.finding.index in v3_names}
    findings = report.findings + v3.findings
    findings.sort(key=lambda c: (c.verdict.rank, c.finding.entity_type, c.finding.urn))
    report.findings = findings[:max_findings]
    report.findings_dropped += v3.findings_dropped + max(0, len(findings) - max_findings)
    for key, n in v3.counts.items():
        report.counts[key] = report.counts.get(key, 0) + n
    report.documents.update(v3.documents)
    for what, n in v3.read.items():
        report.read[what] = report.read.get(what, 0) + n
    report.warnings += [w for w in v3.warnings if w not in report.warnings]
    report.add_converged(v3.converged, v3.converged_total)
    if "reindex" in v3.sections:
        report.sections["reindex"] = merge_reindex(reindexes(report), v3.sections["reindex"])
    if v3.sections.get("outdated"):
        report.sections["outdated"] = merge_outdated(outdated(report), v3.sections["outdated"])
    report.complete = report.complete and v3.complete
    v3_only, v2_only = sorted(v3_wrong - v2_wrong), sorted(v2_wrong - v3_wrong)
    # the V3 indices that hold the entities wrong there only (not every V3 index)
    holding = sorted(
        {c.finding.index for c in v3.findings if c.finding.urn in set(v3_only) and c.finding.index}
    )
    report.sections["v3"] = {
        "indices": dict(sorted(indices.items())),
        "wrong_in_v3_only": v3_only[:100],
        "wrong_in_v2_only": v2_only[:100],
        "disagreeing": len(v3_only) + len(v2_only),
    }
    if v3_only or v2_only:
        report.warnings.append(
            f"V2 and V3 disagree on {len(v3_only) + len(v2_only)} entities: {len(v3_only)} wrong in "
            f"the V3 index only ({', '.join(holding) or '-'}), {len(v2_only)} in the V2 index only "
            "(one of the two writes of their MCL was lost; the findings name the index)"
        )
    report.finished_at = datetime.now(UTC)
