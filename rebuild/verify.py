"""A repair's verification, for every platform: the scan engine over what the repair touched.

The repair verifies with the scan's own steps (the platform's join and causal re-reads, the
kernel's verdicts, the platform's evidence), batch by batch, and keeps what is still diverged or
invalid. A platform with a change log judges by it (a write the consumer has not applied yet is
in flight); one without judges by the repair's own sight: the repair saw each finding before it
wrote (`RepairSight`), so whatever still differs once its rows held still is still wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from auditor.backends.state import ScanState
from auditor.core.classify import History
from auditor.core.model import Classified, Report, Selection, Verdict

BATCH = 1000  # touched entities verified together


WRONG = (Verdict.DIVERGED, Verdict.INVALID)
WAITING = (Verdict.STALLED, Verdict.IN_FLIGHT)  # a write the consumer has not applied yet


def still_wrong(
    scan: Callable[[Selection], Report],
    urns: Iterable[str],
    batch: int = BATCH,
    waiting: list[Classified] | None = None,
) -> list[Classified]:
    """Scan the touched urns (`scan`: one selection's report), batch by batch: what is still
    diverged or invalid. `waiting`: given, what waits on the consumer is added to it (a replay's
    verification names it instead of counting it consistent)."""
    out: list[Classified] = []
    ordered = sorted(set(urns))
    size = batch or len(ordered) or 1
    for i in range(0, len(ordered), size):
        report = scan(Selection(urns=tuple(ordered[i : i + size])))
        out += _keep(report, waiting)
    return out


def _keep(report: Report, waiting: list[Classified] | None) -> list[Classified]:
    """The report's diverged and invalid findings; those waiting on the consumer into `waiting`."""
    if waiting is not None:
        waiting += [c for c in report.findings if c.verdict in WAITING]
    return [c for c in report.findings if c.verdict in WRONG]


class RepairSight(ScanState):
    """The state a verification judges by: every finding was seen once, by the repair, when it
    began (a platform without a change log calls a difference seen twice persistent); nothing is
    remembered."""

    def __init__(self, began: datetime) -> None:
        super().__init__(None)
        self.began = began

    def history(self, keys: Iterable[str]) -> dict[str, History]:
        return {k: History(self.began, 1) for k in keys}


def selections(
    scan: Callable[[Selection], Report],
    chosen: Sequence[Selection],
    waiting: list[Classified] | None = None,
) -> tuple[int, list[Classified]]:
    """A scan of each selection a filter-based repair walked: (entities scanned, still wrong)."""
    entities, out = 0, []
    for selection in chosen:
        report = scan(selection)
        entities += sum(report.entities.values())
        out += _keep(report, waiting)
    return entities, out
