"""What a triage of one entity found: its boundaries, in order, and the first that breaks.

Pure model and rules: which boundary a judged finding breaks, and the triage's verdict. The
walks that fill it are each platform's (DataHub's: `auditor.platforms.datahub.triage`); the
renderers are `reports.triage_report`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from auditor.core.model import Cause, Classified, Kind, Verdict
from auditor.exit_codes import ExitCode


class Boundary(StrEnum):
    """The places a change passes on its way from the table to search, in order (DataHub's; an
    OpenMetadata entity passes its rows, the retry queue and its document)."""

    ROWS = "rows"
    RETRY_QUEUE = "retry queue"  # OpenMetadata: a search write the server queued to retry
    PUBLISHED = "MCL published"
    CONSUMED = "consumed"
    DOCUMENT = "document"
    SYSTEM_METADATA = "system metadata"
    EDGES = "graph edges"


ORDER = tuple(Boundary)


class Status(StrEnum):
    OK = "ok"
    BROKEN = "broken"  # will not converge by itself (diverged, invalid) or the consumer stalled
    PENDING = "pending"  # in flight: it will converge
    UNCHECKED = "unchecked"  # could not be checked (a backend not reachable, a read cap)
    INFO = "info"  # nothing to hold there (no rows for a deleted entity, say)


@dataclass
class Step:
    """One boundary and what was seen there."""

    boundary: Boundary
    status: Status
    detail: str
    facts: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # what the findings placed here say


@dataclass(frozen=True)
class NearMatch:
    """A urn the table or the index knows that differs from the one asked for in a small way."""

    urn: str
    where: str  # "table", "index" or "table+index"
    how: str  # what differs: "case", "URL-encoded", "whitespace", "platform/origin", ...


@dataclass
class TriageResult:
    """One entity traced from its rows to its search documents."""

    asked: str  # the text given
    urn: str  # the urn it was read as
    read_as: list[str] = field(default_factory=list)  # what normalising the text did
    steps: list[Step] = field(default_factory=list)
    findings: list[Classified] = field(default_factory=list)
    near: list[NearMatch] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)  # boundaries that could not be checked, and why
    warnings: list[str] = field(default_factory=list)
    checked_at: datetime | None = None
    seconds: float = 0.0

    @property
    def known(self) -> bool:
        """The table or the index knows the urn."""
        return any(
            s.facts.get("present") for s in self.steps if s.boundary in (Boundary.ROWS, Boundary.DOCUMENT)
        )

    @property
    def verdict(self) -> str:
        """`consistent`, `unknown`, or the scan's worst verdict among the findings."""
        if self.findings:
            return min(self.findings, key=lambda c: c.verdict.rank).verdict.value
        return "consistent" if self.known else "unknown"

    @property
    def worst(self) -> Classified | None:
        return (
            min(self.findings, key=lambda c: (c.verdict.rank, ORDER.index(boundary_of(c))))
            if self.findings
            else None
        )

    @property
    def first_break(self) -> Step | None:
        """The earliest boundary that is broken (else the earliest pending one)."""
        for wanted in (Status.BROKEN, Status.PENDING):
            step = next((s for s in self.steps if s.status == wanted), None)
            if step is not None:
                return step
        return None

    @property
    def exit_code(self) -> ExitCode:
        """As the scan: 0 nothing persistent, 1 divergence, 4 consumer stalled, 5 only a document
        an older release wrote (a reindex of its type is due); 7 unknown urn."""
        if not self.findings:
            return ExitCode.OK if self.known else ExitCode.UNKNOWN_URN
        verdicts = {c.verdict for c in self.findings}
        if verdicts & {Verdict.DIVERGED, Verdict.INVALID}:
            return ExitCode.PERSISTENT
        if Verdict.STALLED in verdicts:
            return ExitCode.STALLED
        if Verdict.STORE_BEHIND in verdicts:
            return ExitCode.STORE_BEHIND
        return ExitCode.OUTDATED if Verdict.OUTDATED in verdicts else ExitCode.OK


DOCUMENT_KINDS = frozenset(
    {
        Kind.MISSING_DOCUMENT,
        Kind.ORPHAN_DOCUMENT,
        Kind.STALE_FIELDS,
        Kind.FIELD_LEFT_BEHIND,
        Kind.SOFT_DELETE_MISMATCH,
    }
)


def boundary_of(c: Classified) -> Boundary:
    """The boundary a judged finding breaks (or, in flight, is pending at)."""
    kind = c.finding.kind
    if kind in (Kind.MALFORMED_ASPECT, Kind.STORE_BEHIND):  # the row itself (behind the index)
        return Boundary.ROWS
    if c.subkind == Cause.EVENT_NEVER_PUBLISHED.value:
        return Boundary.PUBLISHED
    if c.verdict == Verdict.STALLED or (c.verdict == Verdict.IN_FLIGHT and c.evidence.mcl_found):
        return Boundary.CONSUMED
    if kind == Kind.STALE_SYSTEM_METADATA:
        return Boundary.SYSTEM_METADATA
    if kind in (Kind.MISSING_EDGE, Kind.ORPHAN_EDGE):
        return Boundary.EDGES
    return Boundary.DOCUMENT


def status_of(c: Classified) -> Status:
    return Status.PENDING if c.verdict == Verdict.IN_FLIGHT else Status.BROKEN
