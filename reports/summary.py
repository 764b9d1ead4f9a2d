"""Summaries every renderer shares: per-type tables, worst offenders and the commands to run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from auditor import platforms
from auditor.core.model import Classified, PartitionPosition, Report, Verdict
from auditor.platforms.base import Capability
from auditor.reports.commands import repair_commands as plan_repairs

VERDICT_ORDER = ("invalid", "diverged", "stalled", "store_behind", "outdated", "in_flight")


def by_type(report: Report) -> list[tuple[str, int, dict[str, int]]]:
    """(entity type, entities, {"verdict/subkind": count}) sorted by entity type."""
    table: dict[str, dict[str, int]] = {}
    for (etype, verdict, subkind), n in report.counts.items():
        label = verdict if verdict == subkind else f"{verdict}/{subkind}"
        table.setdefault(etype, {})[label] = table.setdefault(etype, {}).get(label, 0) + n
    types = sorted(set(table) | set(report.entities))
    return [(t, report.entities.get(t, 0), table.get(t, {})) for t in types]


def totals(report: Report) -> Counter[str]:
    out: Counter[str] = Counter()
    for (_, verdict, subkind), n in report.counts.items():
        out[verdict if verdict == subkind else f"{verdict}/{subkind}"] += n
    return out


def worst(report: Report, limit: int = 10) -> list[tuple[str, int]]:
    """Urns with the most findings (the kept detail only)."""
    counts = Counter(c.finding.urn for c in report.findings if c.verdict != Verdict.IN_FLIGHT)
    return counts.most_common(limit)


def repair_commands(report: Report) -> list[str]:
    """What to run for the report's findings: its repair plan as commands."""
    return plan_repairs(report.findings, group=report.consumer_group, until=report.started_at)


def describe(c: Classified) -> str:
    """One line for a finding."""
    f = c.finding
    where = f" {f.aspect}" if f.aspect else ""
    extra = ""
    if f.details.get("fields"):
        names = [d["field"] if isinstance(d, dict) else d for d in f.details["fields"]]
        extra = f" fields={','.join(map(str, names))[:80]}"
    elif f.details.get("relationship"):
        extra = f" {f.details['relationship']}->{f.details.get('destination')}"
    store = f" store={','.join(f.stores)}" if f.stores else ""
    return f"{c.verdict.value}/{c.subkind} {f.urn}{where}{extra}{store}"


STORE_COLUMNS = ("entities", "conflicts", "findings", "diverged")


def by_store(report: Report) -> list[tuple[str, list[int]]]:
    """A federation: (store, [entities, conflicts, findings, diverged]) in configuration order."""
    return [(name, [int(counts.get(k, 0)) for k in STORE_COLUMNS]) for name, counts in report.stores.items()]


def observed_text(c: Classified) -> str:
    """When each side was read, in order: why the finding is a delay or a divergence."""
    seen = c.evidence.observed
    if seen is None:
        return ""

    def at(moment: datetime) -> str:
        return moment.strftime("%H:%M:%S.%f")[:-3]

    steps = [f"rows {at(seen.rows_read_at)}"]
    if seen.offsets_sampled_at is not None:
        steps.append(f"offsets {at(seen.offsets_sampled_at)}")
    steps += [f"docs {at(seen.docs_read_at)}", f"rows again {at(seen.rows_confirmed_at)}"]
    tail = f", round {seen.rounds}" if seen.settled else f", rows still changing after {seen.rounds} rounds"
    return "read " + " → ".join(steps) + tail


def reobservation_text(report: Report) -> str:
    """One line on the causal re-observation of the join's candidates."""
    r = report.reobserved
    if not r or not r.get("entities"):
        return ""
    order = "rows → offsets → docs → rows" if report.kafka_available else "rows → docs → rows"
    return (
        f"re-read {int(r['entities'])} entities in causal order ({order}) "
        f"in {r.get('seconds', 0):.1f}s: {int(r.get('converged', 0))} findings converged meanwhile, "
        f"{int(r.get('unsettled', 0))} kept changing"
    )


def weak_evidence_text(report: Report) -> str | None:
    """Why the verdicts rest on time and history, if they do (None: Kafka evidence was read)."""
    platform = platforms.of_report(report.sources)
    if not platform.supports(Capability.CHANGE_LOG):
        return platform.weak_evidence
    if not report.kafka_available:
        return "Kafka not available: verdicts rest on time and history only"
    return None


def eta_text(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f}min"
    return f"{seconds / 3600:.1f}h"


def lost_text(p: PartitionPosition) -> str:
    """What retention took from a partition before the group read it (nothing: empty)."""
    lost = p.lost_to_retention
    if lost is None:
        return ""
    first, last = lost
    return f"; offsets {first}-{last} lost to retention (deleted before the group read them)"


def sorted_findings(findings: Iterable[Classified]) -> list[Classified]:
    rank = {v: i for i, v in enumerate(VERDICT_ORDER)}
    return sorted(findings, key=lambda c: (rank.get(c.verdict.value, 9), c.finding.urn))


def outdated_lines(report: Report) -> list[dict[str, Any]]:
    """The report's documents written by an older release: one line per entity type, field and
    release (`outdated` section: entity_type, field, written_by, judged_by, documents, examples,
    repair, native)."""
    lines = report.sections.get("outdated") or []
    return [line for line in lines if isinstance(line, dict)]


def restore_lines(report: Report) -> list[dict[str, Any]]:
    """The report's indices behind a restore, one line each (`restores` section: index,
    entity_type, since, behind, changed_since, repair, reindex)."""
    lines = report.sections.get("restores") or []
    return [line for line in lines if isinstance(line, dict)]


def restore_text(line: dict[str, Any]) -> str:
    """One index behind a restore, said once however many findings it holds."""
    return (
        f"{line.get('index')} holds the state of before {line.get('since')}: "
        f"{line.get('behind', 0):,} of the {line.get('changed_since', 0):,} entities changed since are "
        "behind (a restored snapshot?)"
    )


def written_span(line: dict[str, Any]) -> str:
    """Which releases wrote an `outdated` line's documents (a report from before the range was
    said holds only the newest of them)."""
    return str(line.get("written_span") or f"{line.get('written_by')} or older")
