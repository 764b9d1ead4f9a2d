"""The last steps of every platform's scan: count every judged finding, keep the worst in detail,
count them per store (a federation), close the report; the key of the scans a trend compares."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime

from auditor.core.model import Classified, Report, Selection, Verdict


def finish(
    report: Report,
    classified: Iterable[Classified],
    max_findings: int,
    sink: Callable[[Classified], None] | None = None,
) -> None:
    """Count every finding as it passes, hand each to `sink` (the JSON Lines of every finding),
    keep only the worst `max_findings` in detail, close the report. One pass, and no sort of the
    whole list: a scan after a restore judges millions, and only the worst are held."""
    passed = 0
    tally(report.stores, ())  # every store counted, a store without findings too

    def counted() -> Iterator[Classified]:
        nonlocal passed
        for c in classified:
            passed += 1
            key = (c.finding.entity_type, c.verdict.value, c.subkind)
            report.counts[key] = report.counts.get(key, 0) + 1
            tally(report.stores, (c,))
            if sink is not None:
                sink(c)
            yield c

    if max_findings > 0:  # nsmallest holds at most max_findings, and is stable as a sort is
        report.findings = heapq.nsmallest(max_findings, counted(), key=rank)
    else:
        report.findings = []
        deque(counted(), maxlen=0)
    report.findings_dropped = max(0, passed - len(report.findings))
    report.finished_at = datetime.now(UTC)


def rank(c: Classified) -> tuple[int, str, str]:
    """The report's order: the worst verdict first, then by type and urn."""
    return (c.verdict.rank, c.finding.entity_type, c.finding.urn)


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
