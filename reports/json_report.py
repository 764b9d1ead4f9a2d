"""The JSON report: every finding with its evidence, in a stable, documented schema (v2:
docs/report.md; v1 differed only in DataHub's findings naming no platform)."""

from __future__ import annotations

import json
from dataclasses import asdict, is_dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from auditor import platforms
from auditor.core.model import Classified, PartitionPosition, Report
from auditor.reports.commands import finding_commands, finding_rebuild

# 2: every finding names its platform (`details.platform`); 1: DataHub's named none
SCHEMA_VERSION = 2


def plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if is_dataclass(value) and not isinstance(value, type):
        return {k: plain(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    return value


def finding_json(c: Classified, report: Report) -> dict[str, Any]:
    f = c.finding
    commands = finding_commands(c, group=report.consumer_group, until=report.started_at)
    platform = platforms.get(f.platform)
    return {
        "key": f.key,
        "check": f.check,
        "kind": f.kind.value,
        "verdict": c.verdict.value,
        "subkind": c.subkind,
        "urn": f.urn,
        "entity_type": f.entity_type,
        "index": f.index,
        "aspect": f.aspect,
        "stores": list(f.stores),
        "store": ",".join(f.stores) or None,  # schema v1: the stores joined
        "changed_at": plain(f.changed_at),
        "details": plain(dict(f.details)),
        "evidence": plain(c.evidence),
        "repairs": [k.value for k in f.repairs],
        "repair": finding_rebuild(c),
        # the platform's own tools (DataHub's, or OpenMetadata's for its findings)
        "repair_platform": " ; ".join(commands) if commands else None,
        # kept for readers of schema v1: DataHub's tools, null for another platform's finding
        "repair_datahub": " ; ".join(commands) if commands and platform.fills_repair_datahub else None,
    }


def partition_json(p: PartitionPosition) -> dict[str, Any]:
    out = plain(p)
    out["lag"] = p.lag
    out["eta_seconds"] = p.eta_seconds
    lost = p.lost_to_retention
    out["lost_to_retention"] = list(lost) if lost is not None else None  # [first, last] offsets
    return out


def store_smaller_json(report: Report) -> dict[str, Any] | None:
    """The systemic finding with its sentence (None: the store explains the index)."""
    found = report.store_smaller
    return None if found is None else {**plain(found), "text": found.text}


def to_dict(report: Report) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "started_at": plain(report.started_at),
        "finished_at": plain(report.finished_at),
        "complete": report.complete,
        "exit_code": report.exit_code,
        # the headline when set: the store empty or far smaller than the index (docs/report.md)
        "store_smaller": store_smaller_json(report),
        "scope": {**plain(report.scope), "index_prefix": report.index_prefix},
        "consumer_group": report.consumer_group,
        "sources": report.sources,
        "kafka_available": report.kafka_available,
        "entities": report.entities,
        "documents": report.documents,
        "counts": [
            {"entity_type": t, "verdict": v, "subkind": s, "count": n}
            for (t, v, s), n in sorted(report.counts.items())
        ],
        "partitions": [partition_json(p) for p in report.partitions],
        "unknown": report.unknown,
        "warnings": report.warnings,
        "converged": report.converged,
        "converged_total": report.converged_total,
        "reobserved": report.reobserved,
        "read": report.read,
        "stores": report.stores,
        "findings_dropped": report.findings_dropped,
        "findings": [finding_json(c, report) for c in report.findings],
        "trend": [plain(run) for run in report.trend],
        **sections(report),
    }


def sections(report: Report) -> dict[str, Any]:
    """The platform's own sections, each written (empty if the scan said nothing), in its order;
    then any other section the report holds, as it is."""
    declared = platforms.of_report(report.sources).report_sections
    out = {name: report.sections.get(name, s.empty()) for name, s in declared.items()}
    out.update((k, v) for k, v in report.sections.items() if k not in out)
    return out


def render(report: Report) -> str:
    return json.dumps(to_dict(report), indent=2, ensure_ascii=False, default=str)
