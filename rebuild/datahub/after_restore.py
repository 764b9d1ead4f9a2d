"""After a restore: how far the search side is behind the database, that window repaired, the evidence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from auditor.core.model import Cause, Report, Verdict
from auditor.core.plan import RestoreEvidence

# a write this much older than the table's newest one is not "behind" (indexing takes a moment)
SLACK = timedelta(seconds=60)


def window(
    report: Report, table_last_write: datetime | None, system_metadata_last_update: datetime | None
) -> RestoreEvidence:
    """The evidence so far: the indices the scan found behind a restore, and the window to repair.

    The window starts at the earliest stale write of an index behind a restore (the scan's
    restore detection, its `restores` section: over every finding, not only the worst the report
    keeps in detail); or, when the system-metadata index's newest `lastUpdated` is older than
    the table's newest write, at that high-water mark: everything written since never reached it.
    """
    evidence = RestoreEvidence(
        started_at=report.started_at,
        sources=dict(report.sources),
        table_last_write=table_last_write,
        system_metadata_last_update=system_metadata_last_update,
    )
    starts: list[datetime] = []
    lines = [line for line in report.sections.get("restores") or () if isinstance(line, dict)]
    for line in lines:  # the scan's restore detection, per index: counted over every finding
        evidence.behind[str(line["index"])] = int(line["behind"])
        starts.append(datetime.fromisoformat(str(line["since"])))
    for c in report.findings if not lines else ():  # a report from before the section: its detail
        if c.verdict == Verdict.DIVERGED and c.subkind == Cause.INDEX_BEHIND_RESTORE.value:
            index = c.finding.index or "?"
            evidence.behind[index] = evidence.behind.get(index, 0) + 1
            if c.finding.changed_at is not None:
                starts.append(c.finding.changed_at)
    high = system_metadata_last_update
    if high is not None and table_last_write is not None and high < table_last_write - SLACK:
        evidence.behind.setdefault("system_metadata_service_v1", 0)
        starts.append(high)
    evidence.since = min(starts) if starts else None
    return evidence


def ms_to_datetime(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value / 1000, UTC) if value is not None else None
