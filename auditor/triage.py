"""On-call triage of one entity: walk every boundary from the row to the index, name the first break."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from auditor.api import ScanOptions, open_events, open_search, open_store, scan
from auditor.core.model import Classified, Report
from auditor.core.urns import document_id, entity_type, urn_partition
from auditor.errors import ConfigError
from auditor.scan import Selection
from auditor.settings import Settings


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


def triage(settings: Settings, urn: str, grace: float = 300.0) -> Triage:
    """Row -> MCL -> consumer -> entity doc -> system metadata -> edges, for one urn."""
    try:
        etype = entity_type(urn)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    out = Triage(urn)
    store = open_store(settings)
    rows = next(store.stream_entities(urns=(urn,)), None)
    if rows is None:
        out.steps.append(Step("rows in metadata_aspect_v2", False, "no version-0 row for this urn"))
    else:
        newest = max(rows.rows.values(), key=lambda r: r.created)
        out.steps.append(
            Step(
                "rows in metadata_aspect_v2",
                True,
                f"{len(rows.rows)} aspects, newest {newest.aspect} at {newest.createdon.isoformat()}",
            )
        )
    warnings: list[str] = []
    events = open_events(settings, warnings)
    if events is None:
        out.steps.append(Step("MCL on the topic", None, "; ".join(warnings)))
    else:
        topic = settings.mcl_versioned_topic
        partitions = events.partitions(topic)
        p = urn_partition(urn, partitions)
        sample = {s.partition: s for s in events.sample([topic], settings.mae_consumer_group)}.get(p)
        if sample is not None:
            hits, _ = events.find(topic, p, {urn}, sample.start, sample.end)
            committed = sample.committed if sample.committed is not None else sample.start
            newest_hit = hits[-1] if hits else None
            if rows is not None and newest_hit is None:
                out.steps.append(Step("MCL on the topic", False, f"no MCL for the urn on {topic}[{p}]"))
            elif newest_hit is not None:
                out.steps.append(
                    Step(
                        "MCL on the topic",
                        True,
                        f"{len(hits)} MCLs on {topic}[{p}], newest at offset {newest_hit.offset} "
                        f"({newest_hit.aspect or '?'}, {newest_hit.change_type or '?'})",
                    )
                )
                consumed = newest_hit.offset < committed
                out.steps.append(
                    Step(
                        "consumed by the MAE group",
                        consumed,
                        f"group {settings.mae_consumer_group} at offset {committed} of {sample.end}"
                        + ("" if consumed else f": {newest_hit.offset - committed + 1} to go"),
                    )
                )
        events.close()
    search = open_search(settings)
    index = f"{settings.index_prefix}_" if settings.index_prefix else ""
    index += f"{etype.lower()}index_v2"
    doc = search.get_many(index, [document_id(urn)])
    out.steps.append(
        Step(
            f"document in {index}",
            (doc != {}) if rows is not None else (doc == {}),
            ("present" if doc else "absent") + f" (_id {document_id(urn)})",
        )
    )
    report = scan(
        settings,
        Selection(urns=(urn,)),
        ScanOptions(grace=grace, sample_window=0, use_state=False),
    )
    out.report = report
    out.findings = list(report.findings)
    by_kind: dict[str, list[Classified]] = {}
    for c in report.findings:
        by_kind.setdefault(c.finding.kind.value, []).append(c)
    for label, kinds in (
        ("searchable fields", ("stale_fields", "soft_delete_mismatch")),
        ("system metadata", ("stale_system_metadata",)),
        ("graph edges", ("missing_edge", "orphan_edge")),
    ):
        found = [c for k in kinds for c in by_kind.get(k, [])]
        detail = (
            "; ".join(f"{c.verdict.value}/{c.subkind}: {c.evidence.reason}" for c in found[:3])
            or "as the rows say"
        )
        out.steps.append(Step(label, not found, detail))
    out.steps.append(Step("checked at", None, datetime.now(UTC).isoformat(timespec="seconds")))
    return out
