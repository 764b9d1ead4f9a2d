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


def still_wrong(
    scan: Callable[[Selection], Report], urns: Iterable[str], batch: int = BATCH
) -> list[Classified]:
    """Scan the touched urns (`scan`: one selection's report), batch by batch: what is still
    diverged or invalid."""
    out: list[Classified] = []
    ordered = sorted(set(urns))
    size = batch or len(ordered) or 1
    for i in range(0, len(ordered), size):
        report = scan(Selection(urns=tuple(ordered[i : i + size])))
        out += [c for c in report.findings if c.verdict in (Verdict.DIVERGED, Verdict.INVALID)]
    return out


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
    scan: Callable[[Selection], Report], chosen: Sequence[Selection]
) -> tuple[int, list[Classified]]:
    """A scan of each selection a filter-based repair walked: (entities scanned, still wrong)."""
    entities, out = 0, []
    for selection in chosen:
        report = scan(selection)
        entities += sum(report.entities.values())
        out += [c for c in report.findings if c.verdict in (Verdict.DIVERGED, Verdict.INVALID)]
    return entities, out
