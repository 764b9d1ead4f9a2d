"""Merging the JSON reports of sharded scans (`--shard i/N`) into one report."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from auditor import platforms
from auditor.core.absence import one_per_index
from auditor.core.model import (
    Classified,
    Evidence,
    Finding,
    Observation,
    PartitionHealth,
    PartitionPosition,
    RepairKind,
    Report,
    RunSummary,
    Selection,
    Verdict,
    kind_of,
)
from auditor.core.sanity import StoreSmaller
from auditor.exit_codes import worst
from auditor.reports.json_report import SCHEMA_VERSION


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _stores(f: dict[str, Any]) -> tuple[str, ...]:
    """A finding's stores: `stores` (a list), or from a report written before it, `store` ("a,b")."""
    if isinstance(f.get("stores"), list):
        return tuple(str(s) for s in f["stores"])
    return tuple(s for s in str(f.get("store") or "").split(",") if s)


def from_dict(data: dict[str, Any]) -> Report:
    """A report back from its JSON form (schema_version 2, or 1: written before every finding
    named its platform, a DataHub finding's platform is the report's, `sources.platform`, or
    DataHub's). A finding of a version-2 report that names no platform is refused (ValueError)."""
    version = data.get("schema_version")
    if version not in (1, SCHEMA_VERSION):
        raise ValueError(f"unsupported report schema_version {version!r}")
    scope = data.get("scope") or {}
    report = Report(
        started_at=_dt(data["started_at"]) or datetime.now(),
        finished_at=_dt(data.get("finished_at")),
        scope=Selection(
            entity_types=tuple(scope.get("entity_types") or ()),
            urn_like=scope.get("urn_like"),
            since=_dt(scope.get("since")),
            shard=tuple(scope["shard"]) if scope.get("shard") else None,  # type: ignore[arg-type]
            urns=tuple(scope.get("urns") or ()),
            urn_range=tuple(scope["urn_range"]) if scope.get("urn_range") else None,  # type: ignore[arg-type]
        ),
        index_prefix=scope.get("index_prefix") or "",
        consumer_group=data.get("consumer_group") or Report.consumer_group,
        sources=dict(data.get("sources") or {}),
        entities=dict(data.get("entities") or {}),
        documents=dict(data.get("documents") or {}),
        kafka_available=bool(data.get("kafka_available")),
        warnings=list(data.get("warnings") or []),
        unknown=dict(data.get("unknown") or {}),
        converged=list(data.get("converged") or []),
        converged_total=int(data.get("converged_total", len(data.get("converged") or []))),
        reobserved=dict(data.get("reobserved") or {}),
        read={str(k): int(v) for k, v in (data.get("read") or {}).items()},
        complete=bool(data.get("complete", True)),
        store_smaller=StoreSmaller.of(data.get("store_smaller")),
        findings_dropped=int(data.get("findings_dropped") or 0),
        stores={
            str(k): {str(c): int(n) for c, n in v.items()} for k, v in (data.get("stores") or {}).items()
        },
    )
    for row in data.get("counts") or []:
        report.counts[(row["entity_type"], row["verdict"], row["subkind"])] = int(row["count"])
    report.partitions = [_partition(p) for p in data.get("partitions") or []]
    unnamed = str(report.sources.get("platform") or platforms.DEFAULT) if version == 1 else None
    report.findings = [_finding(f, unnamed) for f in data.get("findings") or []]
    for name in platforms.of_report(report.sources).report_sections:
        if data.get(name) is not None:
            report.sections[name] = data[name]
    report.trend = [
        RunSummary(_dt(r["started_at"]) or report.started_at, r["entities"], r["verdicts"], r["exit_code"])
        for r in data.get("trend") or []
    ]
    return report


def _partition(p: dict[str, Any]) -> PartitionPosition:
    return PartitionPosition(
        topic=p["topic"],
        partition=p["partition"],
        committed=p["committed"],
        end=p["end"],
        start=p["start"],
        position_time=_dt(p.get("position_time")),
        health=PartitionHealth(p["health"]),
        rate=p.get("rate"),
        members=p.get("members", 0),
        first_committed=p.get("first_committed"),
        window_seconds=p.get("window_seconds", 0.0),
        first_end=p.get("first_end"),
    )


def _evidence(data: dict[str, Any]) -> Evidence:
    ev = dict(data)
    for key in ("position_time", "first_seen"):
        ev[key] = _dt(ev.get(key))
    if ev.get("partition_health"):
        ev["partition_health"] = PartitionHealth(ev["partition_health"])
    if ev.get("observed"):
        seen = dict(ev["observed"])
        for key in ("rows_read_at", "offsets_sampled_at", "docs_read_at", "rows_confirmed_at"):
            seen[key] = _dt(seen.get(key))
        ev["observed"] = Observation(**seen)
    return Evidence(**ev)


def _details(f: dict[str, Any], unnamed: str | None) -> dict[str, Any]:
    """A finding's details, naming its platform: as written, or `unnamed` (a version-1 report's
    DataHub findings named none); a finding that names none where every finding must is refused."""
    details = dict(f.get("details") or {})
    if details.get("platform"):
        return details
    if unnamed is None:
        raise ValueError(
            f"finding {f.get('key') or f.get('urn')!r} names no platform (details.platform): "
            f"every finding of a schema_version {SCHEMA_VERSION} report does"
        )
    return {"platform": unnamed, **details}


def _finding(f: dict[str, Any], unnamed: str | None) -> Classified:
    finding = Finding(
        check=f["check"],
        kind=kind_of(f["kind"]),
        urn=f["urn"],
        entity_type=f["entity_type"],
        index=f.get("index"),
        aspect=f.get("aspect"),
        changed_at=_dt(f.get("changed_at")),
        details=_details(f, unnamed),
        repairs=tuple(RepairKind(k) for k in f.get("repairs") or ()),
        stores=_stores(f),
    )
    return Classified(finding, Verdict(f["verdict"]), f["subkind"], _evidence(f["evidence"]))


def read_finding(f: dict[str, Any], unnamed: str | None) -> Classified:
    """One finding of a report (JSON, or a line of JSON Lines) back from its JSON form."""
    return _finding(f, unnamed)


def _tiled(parts: list[Report]) -> bool:
    """Shards of one plan: each range starts where the one before ends, open at both ends. All
    without a range (crc32 shards) tile too."""
    ranges = [r.scope.urn_range for r in sorted(parts, key=lambda r: r.scope.shard or (0, 0))]
    if all(r is None for r in ranges):
        return True
    if any(r is None for r in ranges):
        return False
    edges = [b for r in ranges for b in r]  # type: ignore[union-attr]
    return (
        edges[0] is None
        and edges[-1] is None
        and all(edges[k] == edges[k + 1] for k in range(1, len(edges) - 1, 2))
    )


def merge(reports: Iterable[Report]) -> Report:
    """One report from the shards' reports: counts added, findings joined, worst state kept."""
    parts = list(reports)
    if not parts:
        raise ValueError("nothing to merge")
    out = Report(started_at=min(r.started_at for r in parts), sources=dict(parts[0].sources))
    out.finished_at = max((r.finished_at for r in parts if r.finished_at), default=None)
    out.scope = Selection(
        entity_types=parts[0].scope.entity_types,
        urn_like=parts[0].scope.urn_like,
        since=parts[0].scope.since,
    )
    out.index_prefix, out.consumer_group = parts[0].index_prefix, parts[0].consumer_group
    declared = platforms.of_report(out.sources).report_sections
    shards = {r.scope.shard for r in parts}
    expected = {(i, n) for (_, n) in [s for s in shards if s] for i in range(n)}
    if None in shards and len(parts) > 1:
        out.warnings.append("merging a report that was not a shard: counts may repeat")
    elif expected and shards != expected:
        missing = sorted(expected - shards)  # type: ignore[operator]
        out.warnings.append(f"shards missing from the merge: {missing}")
        out.complete = False
    elif not _tiled(parts):
        out.warnings.append(
            "the shards' urn ranges do not tile the urn space (scanned with different shard plans, "
            "or some with none): urns may be missing or counted twice"
        )
        out.complete = False
    for r in parts:
        for table, into in (
            (r.entities, out.entities),
            (r.documents, out.documents),
            (r.unknown, out.unknown),
        ):
            for k, v in table.items():
                into[k] = into.get(k, 0) + v
        for key, n in r.counts.items():
            out.counts[key] = out.counts.get(key, 0) + n
        for name, value in r.reobserved.items():
            out.reobserved[name] = out.reobserved.get(name, 0) + value
        for name, n in r.read.items():
            out.read[name] = out.read.get(name, 0) + n
        for store, counts in r.stores.items():  # a federation's shards: per store, added
            into_store = out.stores.setdefault(store, {})
            for column, n in counts.items():
                into_store[column] = into_store.get(column, 0) + n
        out.findings.extend(r.findings)
        out.findings_dropped += r.findings_dropped
        out.add_converged(r.converged, r.converged_total)
        out.warnings.extend(w for w in r.warnings if w not in out.warnings)
        for name, value in r.sections.items():
            section = declared.get(name)
            if name not in out.sections:
                out.sections[name] = value
            elif section is not None:
                out.sections[name] = section.merge(out.sections[name], value)
        out.complete = out.complete and r.complete
        if r.store_smaller is not None:
            out.store_smaller = r.store_smaller.plus(out.store_smaller)
        out.kafka_available = out.kafka_available or r.kafka_available
    out.findings, folded = one_per_index(out.findings)  # each shard named a missing index
    for c in folded:
        key = (c.finding.entity_type, c.verdict.value, c.subkind)
        out.counts[key] -= 1
        if not out.counts[key]:
            del out.counts[key]
    newest = max(parts, key=lambda r: r.finished_at or r.started_at)
    out.partitions = list(newest.partitions)
    out.trend = merged_trend([r.trend for r in parts])
    return out


def merged_trend(trends: list[list[RunSummary]]) -> list[RunSummary]:
    """The shards' trends added run by run, newest aligned (the k-th last run of every shard job
    is the same scheduled scan); as long as the shortest."""
    depth = min((len(t) for t in trends), default=0)
    out: list[RunSummary] = []
    for k in range(depth, 0, -1):
        runs = [t[-k] for t in trends]
        verdicts: dict[str, int] = {}
        for run in runs:
            for verdict, n in run.verdicts.items():
                verdicts[verdict] = verdicts.get(verdict, 0) + n
        out.append(
            RunSummary(
                min(r.started_at for r in runs),
                sum(r.entities for r in runs),
                verdicts,
                worst(r.exit_code for r in runs),  # the one code every command merges by
            )
        )
    return out
