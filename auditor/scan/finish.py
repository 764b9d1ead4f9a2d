"""The last steps of every platform's scan: count every judged finding, keep the worst in detail,
count them per store (a federation), close the report; the key of the scans a trend compares."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from auditor.core.model import Classified, Report, Selection, Verdict


def finish(report: Report, classified: list[Classified], max_findings: int) -> None:
    """Count every finding, keep the worst in detail, close the report."""
    for c in classified:
        key = (c.finding.entity_type, c.verdict.value, c.subkind)
        report.counts[key] = report.counts.get(key, 0) + 1
    classified.sort(key=lambda c: (c.verdict.rank, c.finding.entity_type, c.finding.urn))
    report.findings = classified[:max_findings]
    report.findings_dropped = max(0, len(classified) - max_findings)
    tally(report.stores, classified)
    report.finished_at = datetime.now(UTC)


def scope_key(selection: Selection) -> str:
    """Which scans are comparable in a trend: same types, pattern, shard (any --since alike)."""
    parts = [
        "types=" + ",".join(sorted(selection.entity_types)),
        f"like={selection.urn_like or ''}",
        f"shard={'/'.join(map(str, selection.shard)) if selection.shard else ''}",
        f"since={'yes' if selection.since else ''}",
        f"urns={len(selection.urns)}",
    ]
    if selection.urn_range is not None:  # a shard of a plan: another plan's shard i is another scope
        parts.append("range=" + "..".join(b or "" for b in selection.urn_range))
    return ";".join(parts)


def tally(stores: dict[str, dict[str, int]], classified: Iterable[Classified]) -> None:
    """Per store: its findings and its diverged findings (a conflict counts for each holder)."""
    if not stores:
        return
    for counts in stores.values():
        counts.setdefault("findings", 0)
        counts.setdefault("diverged", 0)
    for c in classified:
        for name in c.finding.stores:
            if name in stores:
                stores[name]["findings"] += 1
                stores[name]["diverged"] += c.verdict in (Verdict.DIVERGED, Verdict.INVALID)
