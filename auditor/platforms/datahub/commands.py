"""DataHub's repair commands: `auditor rebuild` lines and DataHub's own tools (RestoreIndices)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from auditor.core.model import Classified, RepairKind
from auditor.core.naming import document_id
from auditor.core.plan import REINDEX_ONLY, REPLAYED, RepairAction, RepairPlan, actions_for, plan
from auditor.reports.escape import shell_line, shell_quote

RESTORE = "datahub-upgrade -u RestoreIndices"
LEFT_BEHIND = (
    "   # a field left behind by a partial update: a replay cannot clear it, a whole-document rewrite can"
)
ORPHAN = "   # its rows are gone: delete its system-metadata docs and edges too (urn / source.urn)"


def _millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def command(action: RepairAction, *, group: str, until: datetime | None = None) -> str:
    """One action as a shell command; every value from the data is single-quoted.

    The text is exact (a newline in a urn stays a newline inside its quotes); `shell_line`
    spells control characters for a terminal or a ticket.
    """
    kind, urn = action.kind, action.urn or ""
    delete = f'curl -X DELETE "$SEARCH_URL"/{shell_quote(action.index or "")}/_doc/'
    if kind == RepairKind.REPLAY_ASPECT:
        aspect = f" -a aspectName={shell_quote(action.aspect)}" if action.aspect else ""
        text = f"{RESTORE} -a urn={shell_quote(urn)}{aspect}"
    elif kind in (RepairKind.REWRITE_SYSTEM_METADATA, RepairKind.REWRITE_EDGES):
        text = f"{RESTORE} -a urn={shell_quote(urn)}"
    elif kind == RepairKind.REWRITE_DOCUMENT:
        doc = shell_quote(document_id(urn))
        text = f"{delete}{doc} && {RESTORE} -a urn={shell_quote(urn)}{LEFT_BEHIND}"
    elif kind == RepairKind.DELETE_DOCUMENT:
        text = f"{delete}{shell_quote(action.doc_id or document_id(urn))}{ORPHAN}"
    elif kind == RepairKind.REPLAY_WINDOW:
        since = f" -a gePitEpochMs={_millis(action.since)}" if action.since else ""
        until_ms = f" -a lePitEpochMs={_millis(until)}" if until else ""
        text = (
            f"{RESTORE}{since}{until_ms}   # the index is behind a restore: replay everything written since"
        )
    elif kind == RepairKind.RESTART_CONSUMER:
        text = f"restart the MAE consumer (group {group}): the stalled findings converge once it moves"
    else:
        text = "fix the malformed rows (re-ingest, or restore version 1): see the findings"
    return text


def finding_commands(c: Classified, *, group: str, until: datetime | None = None) -> list[str]:
    """DataHub's own commands that repair one judged finding (none for a finding in flight)."""
    return [command(a, group=group, until=until) for a in actions_for(c)]


def finding_rebuild(c: Classified) -> str | None:
    """The `auditor rebuild` command that repairs one judged finding (None: nothing to write)."""
    kinds = {a.kind for a in actions_for(c)}
    if kinds & REINDEX_ONLY:
        return f"auditor rebuild reindex --urn {shell_quote(c.finding.urn)} --apply"
    if kinds & REPLAYED:
        return f"auditor rebuild replay --urn {shell_quote(c.finding.urn)} --apply"
    return None


# what `rebuild_commands` lists per urn (a window is its own line)
REPLAYABLE = (RepairKind.REPLAY_ASPECT, RepairKind.REWRITE_SYSTEM_METADATA, RepairKind.REWRITE_EDGES)


def rebuild_commands(repairs: RepairPlan, per_urn: int = 5) -> list[str]:
    """The plan as `auditor rebuild` commands: replay what the consumer can re-apply, reindex the rest."""
    out: list[str] = []
    for mode, kinds in (("replay", REPLAYABLE), ("reindex", tuple(REINDEX_ONLY))):
        urns = sorted({a.urn for a in repairs.actions if a.kind in kinds and a.urn})
        if not urns:
            continue
        if len(urns) <= per_urn:
            picked = " ".join(f"--urn {shell_quote(u)}" for u in urns)
            out.append(f"auditor rebuild {mode} {picked} --apply")
        else:
            out.append(
                f"auditor rebuild {mode} --from-report scan.json --apply"
                f"   # {len(urns)} entities; scan.json: this scan's --format json report"
            )
    for a in repairs.of(RepairKind.REPLAY_WINDOW):
        since = f" --since {a.since.isoformat()}" if a.since else ""
        kind = f" --entity-type {shell_quote(a.entity_type)}" if a.entity_type else ""
        out.append(f"auditor rebuild replay{kind}{since} --apply   # the index is behind a restore")
    return [shell_line(c) for c in out]


def plan_commands(
    repairs: RepairPlan, *, group: str, until: datetime | None = None, per_urn: int = 5
) -> list[str]:
    """The plan as one-line commands: `auditor rebuild` first, then DataHub's own tools."""
    out: list[str] = rebuild_commands(repairs, per_urn)
    native = _native_commands(repairs, group=group, until=until, per_urn=per_urn)
    writes = [c for c in native if not c.startswith(("restart ", "fix "))]
    if out and writes:
        out.append("# or with DataHub's own tools:")
    return out + [shell_line(c) for c in native]


def _native_commands(repairs: RepairPlan, *, group: str, until: datetime | None, per_urn: int) -> list[str]:
    out: list[str] = []
    by_kind: dict[RepairKind, list[RepairAction]] = {}
    for a in repairs.actions:
        by_kind.setdefault(a.kind, []).append(a)
    out += [command(a, group=group, until=until) for a in by_kind.get(RepairKind.REPLAY_WINDOW, [])]
    replays = [a for kind in REPLAYABLE for a in by_kind.get(kind, [])]
    if len({a.urn for a in replays}) <= per_urn:
        out += list(dict.fromkeys(command(a, group=group) for a in replays))
    else:
        types = sorted({a.entity_type or "" for a in replays})
        out += [f"{RESTORE} -a urnLike={shell_quote(f'urn:li:{t}:%')}" for t in types]
    for kind, what in (
        (RepairKind.REWRITE_DOCUMENT, "documents to rewrite whole"),
        (RepairKind.DELETE_DOCUMENT, "orphan documents"),
    ):
        actions = by_kind.get(kind, [])
        out += [command(a, group=group) for a in actions[:per_urn]]
        if len(actions) > per_urn:
            out.append(f"... and {len(actions) - per_urn} more {what} (see the JSON report)")
    for kind in (RepairKind.RESTART_CONSUMER, RepairKind.FIX_ROW):
        if by_kind.get(kind):
            out.append(command(by_kind[kind][0], group=group))
    return out


def repair_commands(
    findings: Iterable[Classified], *, group: str, until: datetime | None = None
) -> list[str]:
    """What to run for a report's findings."""
    return plan_commands(plan(findings), group=group, until=until)
