"""Each repair action with DataHub's own tools (RestoreIndices, a DELETE of an orphan document)."""

from __future__ import annotations

from datetime import datetime

from auditor.core.absence import alias_lookup
from auditor.core.model import RepairKind
from auditor.core.plan import INDEX_ACTIONS, RepairAction, RepairPlan
from auditor.core.repairs import Renderer
from auditor.platforms.datahub.naming import document_id
from auditor.reports.escape import shell_quote

RESTORE = "datahub-upgrade -u RestoreIndices"
LEFT_BEHIND = (
    "   # a field left behind by a partial update: a replay cannot clear it, a whole-document rewrite can"
)
ORPHAN = "   # its rows are gone: delete its system-metadata docs and edges too (urn / source.urn)"


def _millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


# each action with DataHub's own tools; every value from the data is single-quoted. The text is
# exact (a newline in a urn stays a newline inside its quotes); `shell_line` spells control
# characters for a terminal or a ticket.
RENDERER = Renderer("DataHub's own tools")


def _delete(action: RepairAction) -> str:
    return f'curl -X DELETE "$SEARCH_URL"/{shell_quote(action.index or "")}/_doc/'


@RENDERER.dispatch_for(RepairKind.REPLAY_ASPECT)
def _replay_aspect(action: RepairAction, **_: object) -> str:
    aspect = f" -a aspectName={shell_quote(action.aspect)}" if action.aspect else ""
    return f"{RESTORE} -a urn={shell_quote(action.urn or '')}{aspect}"


@RENDERER.dispatch_for(RepairKind.REWRITE_SYSTEM_METADATA, RepairKind.REWRITE_EDGES)
def _restore_urn(action: RepairAction, **_: object) -> str:
    return f"{RESTORE} -a urn={shell_quote(action.urn or '')}"


@RENDERER.dispatch_for(RepairKind.REWRITE_DOCUMENT)
def _rewrite_document(action: RepairAction, **_: object) -> str:
    urn = action.urn or ""
    delete = f"{_delete(action)}{shell_quote(document_id(urn))}"
    return f"{delete} && {RESTORE} -a urn={shell_quote(urn)}{LEFT_BEHIND}"


@RENDERER.dispatch_for(RepairKind.DELETE_DOCUMENT)
def _delete_document(action: RepairAction, **_: object) -> str:
    return f"{_delete(action)}{shell_quote(action.doc_id or document_id(action.urn or ''))}{ORPHAN}"


@RENDERER.dispatch_for(RepairKind.REPLAY_WINDOW)
def _replay_window(action: RepairAction, *, until: datetime | None = None, **_: object) -> str:
    since = f" -a gePitEpochMs={_millis(action.since)}" if action.since else ""
    until_ms = f" -a lePitEpochMs={_millis(until)}" if until else ""
    return f"{RESTORE}{since}{until_ms}   # the index is behind a restore: replay everything written since"


@RENDERER.dispatch_for(RepairKind.RESTART_CONSUMER)
def _restart_consumer(action: RepairAction, *, group: str = "", **_: object) -> str:
    return f"restart the MAE consumer (group {group}): the stalled findings converge once it moves"


@RENDERER.dispatch_for(RepairKind.FIX_ROW)
def _fix_row(action: RepairAction, **_: object) -> str:
    return "fix the malformed rows (re-ingest, or restore version 1): see the findings"


@RENDERER.dispatch_for(RepairKind.RECREATE_INDEX)
def _recreate_index(action: RepairAction, **_: object) -> str:
    kind = shell_quote(f"urn:li:{action.entity_type}:%")
    return (
        f"datahub-upgrade -u SystemUpdate && {RESTORE} -a urnLike={kind}"
        f"   # BuildIndices creates the missing {action.index} with DataHub's mappings, "
        "then its type is reindexed"
    )


@RENDERER.dispatch_for(RepairKind.ALIAS_ONE_INDEX)
def _alias_one_index(action: RepairAction, **_: object) -> str:
    return alias_lookup(action.index or "")


def command(action: RepairAction, *, group: str, until: datetime | None = None) -> str:
    """One action as a shell command with DataHub's own tools."""
    return RENDERER.render(action, group=group, until=until)


# the actions one RestoreIndices of the urn replays (a window is its own line)
REPLAYABLE = (RepairKind.REPLAY_ASPECT, RepairKind.REWRITE_SYSTEM_METADATA, RepairKind.REWRITE_EDGES)


def native_commands(repairs: RepairPlan, *, group: str, until: datetime | None, per_urn: int) -> list[str]:
    """The plan with DataHub's own tools: a restore window, the replays (one RestoreIndices per
    urn, or per entity type past `per_urn` urns), the documents to rewrite or delete (the first
    `per_urn` of each), then what a person does (restart the consumer, fix the rows)."""
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
    for kind in INDEX_ACTIONS:  # one per index
        out += [command(a, group=group) for a in by_kind.get(kind, [])]
    return out
