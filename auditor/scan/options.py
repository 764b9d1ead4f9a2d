"""What every platform's scan is asked: how it judges (ScanOptions) and whom it tells of its
progress (Progress). The api, the CLI and the Platform interface speak these; each platform's
pipeline reads them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from auditor.core.model import Classified, Report

Progress = Callable[[int], None]  # called with the number of entities joined since the last call


class FindingsSink(Protocol):
    """Where every finding of a scan goes as it is judged, not only the worst the report keeps
    (the JSON Lines of `scan --findings-out`: auditor/reports/jsonl.py)."""

    def write(self, c: Classified) -> None: ...

    def close(self, report: Report) -> None:
        """The scan ended: the report is closed."""

    def discard(self) -> None:
        """The scan failed (or the sink is closed): nothing of it is left."""


FindingsOut = Callable[["Report"], FindingsSink]  # a scan's sink, opened for its report


@dataclass(frozen=True)
class ScanOptions:
    """How a scan judges what it sees (None: the target's setting)."""

    grace: float | None = None
    settle: float = 10.0  # a change younger than this may not have its MCL produced yet
    sample_window: float | None = None
    confirm: float = 0.0  # re-check in-flight findings after this many seconds
    max_findings: int = 10_000  # findings kept in detail (all are counted)
    findings_out: FindingsOut | None = None  # where every finding goes as it is judged (or nowhere)
    use_state: bool = True
    visibility: float | None = None  # a committed write is searchable this much later
    # sample again (up to this long) while a lagging partition has not moved: tells a consumer
    # that commits once a second from a stalled one in a short window (None: never)
    max_window: float | None = None
