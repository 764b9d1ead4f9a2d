"""A repair's outcome: its plan, what it did, and what the verification still found wrong."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from rich.console import Console

from auditor.core.model import Classified, RepairKind, Report
from auditor.core.plan import RebuildOutcome
from auditor.reports.escape import console_markup, console_text
from auditor.reports.json_report import finding_json, plain

WHAT = {
    RepairKind.REPLAY_ASPECT: "replay the aspect (RESTATE MCL)",
    RepairKind.REWRITE_DOCUMENT: "rewrite the whole entity doc (a replay cannot clear a left-behind field)",
    RepairKind.DELETE_DOCUMENT: "delete the orphan's document, system-metadata docs and edges",
    RepairKind.REWRITE_SYSTEM_METADATA: "rewrite the system-metadata docs from the rows",
    RepairKind.REWRITE_EDGES: "rewrite the edges from the aspects",
    RepairKind.REPLAY_WINDOW: "replay everything written since the index's restore point",
    RepairKind.RESTART_CONSUMER: "nothing to write: restart the MAE consumer, then verify",
    RepairKind.FIX_ROW: "nothing to write: fix the malformed row at its source",
    RepairKind.RECREATE_INDEX: "nothing to write here: recreate the missing index with the platform's "
    "own job, then reindex its type (see the findings)",
    RepairKind.ALIAS_ONE_INDEX: "nothing to write here: keep the alias on one index (see the findings)",
}


# OpenMetadata's words where DataHub's would not be true there: no aspects, no replay, entity rows
OPENMETADATA_WHAT = {
    RepairKind.REWRITE_DOCUMENT: "rewrite the entity's document from its row and relationships",
    RepairKind.DELETE_DOCUMENT: "delete the orphan's document (its row re-checked: gone)",
}
ROWS_IN_SCOPE = {"datahub": "version-0 rows in scope", "openmetadata": "entities in scope"}


def what(outcome: RebuildOutcome, kind: RepairKind) -> str:
    """What a repair kind does, in the words of the outcome's platform."""
    if outcome.platform == "openmetadata" and kind in OPENMETADATA_WHAT:
        return OPENMETADATA_WHAT[kind]
    return WHAT[kind]


def render_console(outcome: RebuildOutcome, console: Console) -> None:
    head = "dry run (nothing written; add --apply)" if not outcome.applied else "applied"
    console.print(f"[bold]rebuild {outcome.mode}[/]: {head}")
    counts = outcome.plan.counts()
    for kind in RepairKind:
        if counts.get(kind):
            console.print(f"  {counts[kind]:6d}  {what(outcome, kind)}", highlight=False)
    if outcome.rows is not None:
        eta = f", about {outcome.estimate_seconds:.1f}s at the rate asked" if outcome.estimate_seconds else ""
        scope = ROWS_IN_SCOPE.get(outcome.platform, ROWS_IN_SCOPE["datahub"])
        console.print(f"  {outcome.rows:6d}  {scope}{eta}", highlight=False)
    for name, n in sorted(outcome.elsewhere.items()):
        other = "reindex" if outcome.mode == "replay" else "a person"
        console.print(f"[yellow]  {n} {name} actions need {other}, not this mode[/]", highlight=False)
    if outcome.counts:
        done = ", ".join(f"{k} {v}" for k, v in sorted(outcome.counts.items()))
        console.print(f"  done: {console_markup(done)}", highlight=False)  # a kept field's name is data
    if outcome.consumer_caught_up is not None:
        caught = "passed" if outcome.consumer_caught_up else "did NOT pass"
        console.print(f"  the MAE consumer {caught} every offset the replay produced", highlight=False)
    if outcome.applied:
        if outcome.still_wrong or outcome.failed:
            console.print(f"[red]still wrong after verification of {outcome.verified_urns} entities:[/]")
            for c in outcome.still_wrong[:20]:
                console.print(f"  {c.subkind} ", end="", highlight=False, markup=False)
                console.print(console_text(c.finding.urn), markup=False, highlight=False)
            for urn in outcome.failed[:20]:
                why = f" ({outcome.why[urn]})" if urn in outcome.why else ""
                console.print("  write failed: " + console_text(urn + why), markup=False, highlight=False)
        if outcome.consumer_caught_up is False:
            _not_applied(outcome, console)
        elif not (outcome.still_wrong or outcome.failed):
            console.print(_verified(outcome), highlight=False)
    for note in outcome.notes:
        console.print(f"  {console_markup(note)}", highlight=False)
    if outcome.checkpoint:
        console.print(
            f"  checkpoint {console_markup(outcome.checkpoint)} (--resume continues)", highlight=False
        )
    if outcome.journal:
        run = console_markup(outcome.journal)
        console.print(f"  journaled as {run} (auditor rebuild undo {run} takes it back)", highlight=False)
    for w in outcome.warnings:
        console.print(f"[yellow]warning:[/] {console_markup(w)}", highlight=False)


def _verified(outcome: RebuildOutcome) -> str:
    """The verification's line. Nothing verified while actions were left to a person or another
    mode is not "consistent": the findings those actions name are still there."""
    left = sum(outcome.elsewhere.values())
    if outcome.verified_urns == 0 and left:
        return (
            f"[yellow]nothing repaired here: the {left} actions above are not this repair's (still to do)[/]"
        )
    if left:
        return (
            f"[green]verified: {outcome.verified_urns} entities consistent[/] [yellow](and the {left} "
            "actions above still to do)[/]"
        )
    return f"[green]verified: {outcome.verified_urns} entities consistent[/]"


def _not_applied(outcome: RebuildOutcome, console: Console) -> None:
    """A replay the MAE consumer has not applied: what still waits on it, never "consistent"."""
    urns = sorted({c.finding.urn for c in outcome.waiting})
    console.print(
        f"[yellow]not verified: the MAE consumer has not applied the replay; {len(urns)} of the "
        f"{outcome.verified_urns} entities still wait on it (run `auditor scan` once it has)[/]",
        highlight=False,
    )
    first: dict[str, Classified] = {}
    for c in outcome.waiting:  # one line per entity: its first finding's verdict and reason
        first.setdefault(c.finding.urn, c)
    for urn in urns[:20]:
        c = first[urn]
        console.print(f"  {c.verdict.value} ", end="", highlight=False, markup=False)
        console.print(console_text(f"{urn}: {c.evidence.reason}"), markup=False, highlight=False)
    if len(urns) > 20:
        console.print(f"  ... and {len(urns) - 20} more (`waiting` in --json)", highlight=False)


def to_json(outcome: RebuildOutcome) -> str:
    dummy = Report(started_at=_now())
    data: dict[str, Any] = {
        "mode": outcome.mode,
        "applied": outcome.applied,
        "exit_code": outcome.exit_code,
        "plan": [plain(asdict(a)) for a in outcome.plan.actions],
        "rows": outcome.rows,
        "estimate_seconds": outcome.estimate_seconds,
        "counts": outcome.counts,
        "failed": outcome.failed,
        "failed_why": outcome.why,
        "elsewhere": outcome.elsewhere,
        "consumer_caught_up": outcome.consumer_caught_up,
        "verified_urns": outcome.verified_urns,
        "still_wrong": [finding_json(c, dummy) for c in outcome.still_wrong],
        "waiting": [finding_json(c, dummy) for c in outcome.waiting],
        "checkpoint": outcome.checkpoint,
        "journal": outcome.journal,
        "notes": outcome.notes,
        "warnings": outcome.warnings,
    }
    if outcome.shard is not None:  # a shard's outcome: `auditor rebuild merge` combines them
        data["shard"] = f"{outcome.shard[0]}/{outcome.shard[1]}"
        data["urn_range"] = list(outcome.urn_range) if outcome.urn_range is not None else None
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)
