"""The repair plan as data: each judged finding maps to the actions that actually fix it.

Reports render the plan (as commands to run), rebuild executes it. A finding declares what
repairs it (`Finding.repairs`, set by its check); the verdict decides whether it needs one:
a divergence is repaired, a stalled consumer is restarted, a malformed row is fixed at the
source, a finding in flight needs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from auditor.core.model import Cause, Classified, RepairKind, Verdict
from auditor.exit_codes import ExitCode

# actions that write to the index, in the order a repair runs them
WRITES = (
    RepairKind.DELETE_DOCUMENT,
    RepairKind.REPLAY_WINDOW,
    RepairKind.REWRITE_DOCUMENT,
    RepairKind.REPLAY_ASPECT,
    RepairKind.REWRITE_SYSTEM_METADATA,
    RepairKind.REWRITE_EDGES,
)
# actions on a whole index (no urn: a person runs them with the platform's own tools)
INDEX_ACTIONS = (RepairKind.RECREATE_INDEX, RepairKind.ALIAS_ONE_INDEX)


@dataclass(frozen=True)
class RepairAction:
    """One thing to do. Entity actions name a urn; window and consumer actions do not."""

    kind: RepairKind
    urn: str | None = None
    entity_type: str | None = None
    aspect: str | None = None  # REPLAY_ASPECT / FIX_ROW of one aspect (None: every aspect)
    index: str | None = None
    doc_id: str | None = None
    since: datetime | None = None  # REPLAY_WINDOW: from this write time on
    findings: int = 1  # findings this action repairs

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.kind.value, self.urn or "", self.aspect or "", self.index or "")


@dataclass
class RepairPlan:
    """The actions for a set of findings, deduplicated, in the order a repair runs them."""

    actions: list[RepairAction] = field(default_factory=list)

    def of(self, kind: RepairKind) -> list[RepairAction]:
        return [a for a in self.actions if a.kind == kind]

    @property
    def urns(self) -> list[str]:
        return sorted({a.urn for a in self.actions if a.urn})

    def counts(self) -> dict[RepairKind, int]:
        out: dict[RepairKind, int] = {}
        for a in self.actions:
            out[a.kind] = out.get(a.kind, 0) + 1
        return out


def actions_for(c: Classified) -> list[RepairAction]:
    """What fixes one judged finding (nothing for a finding in flight)."""
    f = c.finding
    if c.verdict == Verdict.STALLED:
        return [RepairAction(RepairKind.RESTART_CONSUMER)]
    if c.verdict == Verdict.INVALID:
        return [RepairAction(RepairKind.FIX_ROW, f.urn, f.entity_type, f.aspect)]
    if c.verdict != Verdict.DIVERGED:
        return []
    if c.subkind == Cause.INDEX_BEHIND_RESTORE.value:
        window = RepairAction(
            RepairKind.REPLAY_WINDOW, entity_type=f.entity_type, index=f.index, since=f.changed_at
        )
        return [window]
    doc_id = f.details.get("doc_id")
    return [
        RepairAction(
            kind,
            None if kind in INDEX_ACTIONS else f.urn,
            f.entity_type,
            f.aspect if kind in (RepairKind.REPLAY_ASPECT, RepairKind.FIX_ROW) else None,
            f.index,
            str(doc_id) if doc_id is not None and kind == RepairKind.DELETE_DOCUMENT else None,
        )
        for kind in f.repairs
    ]


def plan(findings: Iterable[Classified]) -> RepairPlan:
    """The plan for judged findings: one action per (kind, urn, aspect, index), merged.

    A urn whose rows are gone (DELETE_DOCUMENT) gets no replay or rewrite (nothing to build
    from); a whole-document rewrite of a urn covers its aspect replays; an index behind a
    restore gets one window from the earliest stale write.
    """
    merged: dict[tuple[str, str, str, str], RepairAction] = {}
    for c in findings:
        for action in actions_for(c):
            if action.kind == RepairKind.REPLAY_WINDOW:
                key = (action.kind.value, "", "", action.index or "")
            elif action.kind == RepairKind.RESTART_CONSUMER:
                key = (action.kind.value, "", "", "")
            else:
                key = action.key
            known = merged.get(key)
            if known is None:
                merged[key] = action
                continue
            since = known.since
            if action.since is not None and (since is None or action.since < since):
                since = action.since
            merged[key] = RepairAction(
                known.kind,
                known.urn,
                known.entity_type,
                known.aspect,
                known.index,
                known.doc_id or action.doc_id,
                since,
                known.findings + action.findings,
            )
    gone = {a.urn for a in merged.values() if a.kind == RepairKind.DELETE_DOCUMENT}
    whole = {a.urn for a in merged.values() if a.kind == RepairKind.REWRITE_DOCUMENT}
    kept = []
    for a in merged.values():
        if a.urn in gone and a.kind != RepairKind.DELETE_DOCUMENT:
            continue
        if a.urn in whole and a.kind == RepairKind.REPLAY_ASPECT:
            continue
        kept.append(a)
    order = {
        k: i for i, k in enumerate((*WRITES, RepairKind.RESTART_CONSUMER, RepairKind.FIX_ROW, *INDEX_ACTIONS))
    }
    kept.sort(key=lambda a: (order[a.kind], a.urn or "", a.aspect or ""))
    return RepairPlan(kept)


@dataclass
class RebuildOutcome:
    """What a repair planned, did and verified (data only: reports render it)."""

    mode: str  # plan | replay | reindex
    applied: bool
    plan: RepairPlan
    rows: int | None = None  # rows (replay) or entities (reindex) the selection covers
    estimate_seconds: float | None = None  # at the rate asked for
    counts: dict[str, int] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)  # urns whose writes failed for good
    why: dict[str, str] = field(default_factory=dict)  # failed urn -> why (when known)
    elsewhere: dict[str, int] = field(default_factory=dict)  # action kind -> count another mode does
    consumer_caught_up: bool | None = None  # replay: the MAE group passed what was produced
    still_wrong: list[Classified] = field(default_factory=list)  # after verification
    # replay: what the verification found still waiting on the MAE consumer (its MCL not applied)
    waiting: list[Classified] = field(default_factory=list)
    verified_urns: int = 0
    checkpoint: str | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. a full rebuild's swapped indices
    shard: tuple[int, int] | None = None  # (i, n): the shard of the urns this repair covered
    urn_range: tuple[str | None, str | None] | None = None  # its shard plan's range [lo, hi)
    platform: str = "datahub"  # whose words its report speaks (reports/rebuild_report.py)
    journal: str | None = None  # the run id its writes were journaled under (`rebuild undo RUN`)

    @property
    def exit_code(self) -> ExitCode:
        """0 done and verified clean (or a dry run), 1 still wrong after verification, 4 a replay
        the MAE consumer has not applied (never verified clean: what it produced waits)."""
        if self.applied and (self.still_wrong or self.failed):
            return ExitCode.PERSISTENT
        if self.applied and self.consumer_caught_up is False:
            return ExitCode.STALLED
        return ExitCode.OK


@dataclass
class RestoreEvidence:
    """After a restore: what was behind, the window repaired, what was done, the final audit."""

    started_at: datetime
    finished_at: datetime | None = None
    sources: dict[str, str] = field(default_factory=dict)  # where, server versions; no secrets
    behind: dict[str, int] = field(default_factory=dict)  # index -> entities behind the restore
    table_last_write: datetime | None = None  # the database's high-water mark (createdon)
    system_metadata_last_update: datetime | None = None  # the index's (lastUpdated)
    since: datetime | None = None  # the window repaired: rows written from here on
    mode: str = "replay"
    outcome: RebuildOutcome | None = None
    final_counts: dict[str, int] = field(default_factory=dict)  # "verdict/subkind" -> findings
    final_exit_code: int | None = None
