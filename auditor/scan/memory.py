"""What a scan leaves for the next one in the state file, for every platform alike: the findings
still wrong (a second sight is what makes an orphan or a stale document persistent: the kernel's
`classify` reads them back as `History`) and the scan's totals (the trend of its scope)."""

from __future__ import annotations

from collections.abc import Iterable

from auditor.backends.protocols import State
from auditor.core.model import Finding, Report, RunSummary
from auditor.scan.finish import scope_key


def remember(state: State, still: Iterable[Finding], report: Report, types: tuple[str, ...]) -> None:
    """Remember what is still wrong; forget the unseen of `types` only when whole types were
    scanned (a narrowed scan did not look at the rest)."""
    state.record_findings(still, report.started_at, types, forget_unseen=not report.scope.narrowed)


def trend_key(report: Report, platform: str | None) -> str:
    """The scans a trend compares: the same platform and scope. DataHub's key carries no platform
    (its state files were written before there was another)."""
    key = scope_key(report.scope)
    return f"platform={platform};{key}" if platform else key


def record_trend(state: State, report: Report, platform: str | None) -> None:
    """Remember this scan's totals (after `finish`), then read its scope's recent scans, this one last."""
    verdicts: dict[str, int] = {}
    for (_, verdict, _), n in report.counts.items():
        verdicts[verdict] = verdicts.get(verdict, 0) + n
    run = RunSummary(report.started_at, sum(report.entities.values()), verdicts, report.exit_code)
    key = trend_key(report, platform)
    state.record_run(key, run)
    report.trend = state.runs(key) or [run]
