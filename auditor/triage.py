"""On-call triage of one entity: walk every boundary from the row to the index, name the first break."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from auditor.backends.protocols import Events
from auditor.core.model import Classified, Kind, Report, Selection
from auditor.core.naming import document_id, entity_index
from auditor.core.records import EntityRows
from auditor.core.registry import Registry
from auditor.core.urns import entity_type, urn_partition
from auditor.errors import ConfigError
from auditor.scan.run import ScanBackends, ScanOptions, ScanTarget, run_scan


@dataclass(frozen=True)
class Step:
    """One boundary and what was found there."""

    name: str
    ok: bool | None  # None: could not be checked
    detail: str


@dataclass
class Triage:
    urn: str
    steps: list[Step] = field(default_factory=list)
    findings: list[Classified] = field(default_factory=list)
    report: Report | None = None

    @property
    def first_break(self) -> Step | None:
        return next((s for s in self.steps if s.ok is False), None)


def walk(
    backends: ScanBackends, registry: Registry, target: ScanTarget, urn: str, grace: float = 300.0
) -> Triage:
    """Row -> MCL -> consumer -> entity doc -> system metadata -> edges, for one urn."""
    try:
        etype = entity_type(urn)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    out = Triage(urn)
    rows = next(backends.store.stream_entities(urns=(urn,)), None)
    out.steps.append(_rows_step(rows))
    if backends.events is None:
        out.steps.append(Step("MCL on the topic", None, "Kafka not available"))
    else:
        out.steps += _topic_steps(backends.events, target, urn, rows is not None)
    index = entity_index(etype, target.index_prefix)
    doc = backends.search.get_many(index, [document_id(urn)])
    out.steps.append(
        Step(
            f"document in {index}",
            (doc != {}) if rows is not None else (doc == {}),
            ("present" if doc else "absent") + f" (_id {document_id(urn)})",
        )
    )
    report = Report(started_at=datetime.now(UTC), scope=Selection(urns=(urn,)), consumer_group=target.group)
    options = ScanOptions(grace=grace, sample_window=0, use_state=False)
    out.report = run_scan(backends, registry, report, options, target)
    out.findings = list(out.report.findings)
    out.steps += _projection_steps(out.report)
    out.steps.append(Step("checked at", None, datetime.now(UTC).isoformat(timespec="seconds")))
    return out


def _rows_step(rows: EntityRows | None) -> Step:
    if rows is None:
        return Step("rows in metadata_aspect_v2", False, "no version-0 row for this urn")
    newest = max(rows.rows.values(), key=lambda r: r.created)
    detail = f"{len(rows.rows)} aspects, newest {newest.aspect} at {newest.createdon.isoformat()}"
    return Step("rows in metadata_aspect_v2", True, detail)


def _topic_steps(events: Events, target: ScanTarget, urn: str, has_rows: bool) -> list[Step]:
    topic = target.versioned_topic
    p = urn_partition(urn, events.partitions(topic))
    sample = {s.partition: s for s in events.sample([topic], target.group)}.get(p)
    if sample is None:
        return []
    hits, _ = events.find(topic, p, {urn}, sample.start, sample.end, 200_000)
    committed = sample.committed if sample.committed is not None else sample.start
    newest = hits[-1] if hits else None
    if newest is None:
        return [Step("MCL on the topic", False, f"no MCL for the urn on {topic}[{p}]")] if has_rows else []
    consumed = newest.offset < committed
    return [
        Step(
            "MCL on the topic",
            True,
            f"{len(hits)} MCLs on {topic}[{p}], newest at offset {newest.offset} "
            f"({newest.aspect or '?'}, {newest.change_type or '?'})",
        ),
        Step(
            "consumed by the MAE group",
            consumed,
            f"group {target.group} at offset {committed} of {sample.end}"
            + ("" if consumed else f": {newest.offset - committed + 1} to go"),
        ),
    ]


def _projection_steps(report: Report) -> list[Step]:
    by_kind: dict[Kind, list[Classified]] = {}
    for c in report.findings:
        by_kind.setdefault(c.finding.kind, []).append(c)
    steps = []
    for label, kinds in (
        ("searchable fields", (Kind.STALE_FIELDS, Kind.FIELD_LEFT_BEHIND, Kind.SOFT_DELETE_MISMATCH)),
        ("system metadata", (Kind.STALE_SYSTEM_METADATA,)),
        ("graph edges", (Kind.MISSING_EDGE, Kind.ORPHAN_EDGE)),
    ):
        found = [c for k in kinds for c in by_kind.get(k, [])]
        detail = (
            "; ".join(f"{c.verdict.value}/{c.subkind}: {c.evidence.reason}" for c in found[:3])
            or "as the rows say"
        )
        steps.append(Step(label, not found, detail))
    return steps
