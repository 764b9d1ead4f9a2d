"""A heal's outcome: for the console, as JSON, and as Prometheus textfile metrics (data text
escaped in each)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console

from auditor.heal.guards import NAMES
from auditor.heal.loop import HealOutcome, Left
from auditor.reports.escape import console_markup, console_text, prom_label

SHOWN = 50  # findings listed on the console (JSON lists them all)


def render_console(outcome: HealOutcome, console: Console) -> None:
    head = "dry run (nothing written)" if outcome.dry_run else "applied"
    console.print(
        f"[bold]heal {console_markup(outcome.run_id)}[/]: {head}; policy {console_markup(outcome.policy)}",
        highlight=False,
    )
    if not outcome.enabled:
        console.print("  the policy does not enable healing: the scan only", highlight=False)
    for r in outcome.refused:
        console.print(f"[red]  REFUSED by guard {r.guard}[/]: {console_markup(r.why)}", highlight=False)
    if outcome.refused:
        console.print("[red]  nothing written: a person is paged[/]", highlight=False)
    verb = "would heal" if outcome.dry_run else "healed"
    if outcome.healed:
        console.print(f"  {len(outcome.healed_urns)} entities {verb}:", highlight=False)
        for urn in outcome.healed_urns[:SHOWN]:
            console.print(console_text(f"    {urn}"), markup=False, highlight=False)
    repair = outcome.repair
    if repair is not None and repair.applied:
        state = "verified clean" if outcome.verified else "[red]still wrong after verification[/]"
        console.print(f"  repair {repair.mode}: {state}", highlight=False)
        if repair.journal:
            console.print(
                f"  journaled as {console_markup(repair.journal)} "
                f"(auditor rebuild undo {console_markup(repair.journal)} --apply takes it back)",
                highlight=False,
            )
    if outcome.left:
        by_urn: dict[str, list[Left]] = {}
        for x in outcome.left:  # an entity's findings stay together (and leave together)
            by_urn.setdefault(x.finding.finding.urn, []).append(x)
        console.print(f"  {len(by_urn)} entities not healed ({len(outcome.left)} findings):", highlight=False)
        for urn, xs in list(by_urn.items())[:SHOWN]:
            kinds = Counter(x.finding.finding.kind.value for x in xs)
            said = ", ".join(k if n == 1 else f"{k} x{n}" for k, n in kinds.items())
            line = f"    {urn} ({said}): {xs[0].why}"
            console.print(console_text(line), markup=False, highlight=False)
    for note in outcome.notes:
        console.print(console_text(f"  {note}"), markup=False, highlight=False)
    console.print(
        f"  hourly budget left: {outcome.budget_left} entities; exit {outcome.exit_code}", highlight=False
    )


def to_dict(outcome: HealOutcome) -> dict[str, Any]:
    repair = outcome.repair
    return {
        "run": outcome.run_id,
        "exit_code": int(outcome.exit_code),
        "started_at": outcome.started_at.isoformat(),
        "finished_at": outcome.finished_at.isoformat() if outcome.finished_at else None,
        "policy": outcome.policy,
        "dry_run": outcome.dry_run,
        "enabled": outcome.enabled,
        "scan_exit_code": outcome.scan_exit_code,
        "diverged": outcome.diverged,
        "refused": [r.to_json() for r in outcome.refused],
        "healed": outcome.healed_urns,
        "left": [x.to_json() for x in outcome.left],
        "repair": None
        if repair is None
        else {
            "mode": repair.mode,
            "applied": repair.applied,
            "exit_code": int(repair.exit_code),
            "counts": repair.counts,
            "failed": repair.failed,
            "still_wrong": [c.finding.urn for c in repair.still_wrong],
            "journal": repair.journal,
        },
        "verified": outcome.verified,
        "budget_left": outcome.budget_left,
        "notes": outcome.notes,
    }


def to_json(outcome: HealOutcome) -> str:
    return json.dumps(to_dict(outcome), indent=2, ensure_ascii=False)


def metrics(outcome: HealOutcome, undo_runs: int) -> str:
    """The heal's textfile: healed, refused by guard, left, budget left, undo runs (docs/metrics.md)."""
    refused = Counter(r.guard for r in outcome.refused)
    left = Counter(x.why.split(":")[0].split(" (")[0] for x in outcome.left)
    out = [
        "# HELP auditor_heal_healed Entities the last heal repaired (verified or not).",
        "# TYPE auditor_heal_healed gauge",
        f"auditor_heal_healed {0 if outcome.dry_run else len(outcome.healed_urns)}",
        "# HELP auditor_heal_verified 1 if the last heal's repair verified clean (or wrote nothing).",
        "# TYPE auditor_heal_verified gauge",
        f"auditor_heal_verified {int(outcome.verified)}",
        "# HELP auditor_heal_refused 1 if the guard refused the last heal (a person is paged).",
        "# TYPE auditor_heal_refused gauge",
        *(f'auditor_heal_refused{{guard="{g}"}} {int(refused[g] > 0)}' for g in NAMES),
        "# HELP auditor_heal_left Findings the last heal left, by why.",
        "# TYPE auditor_heal_left gauge",
        *(f'auditor_heal_left{{why="{prom_label(w)}"}} {n}' for w, n in sorted(left.items())),
        "# HELP auditor_heal_budget_left Entities the hourly budget allows after the last heal.",
        "# TYPE auditor_heal_budget_left gauge",
        f"auditor_heal_budget_left {outcome.budget_left}",
        "# HELP auditor_heal_undo_runs Undo runs in the journal (retention's window).",
        "# TYPE auditor_heal_undo_runs gauge",
        f"auditor_heal_undo_runs {undo_runs}",
        "# HELP auditor_heal_last_run_timestamp_seconds When the last heal ran.",
        "# TYPE auditor_heal_last_run_timestamp_seconds gauge",
        f"auditor_heal_last_run_timestamp_seconds {outcome.started_at.timestamp():.0f}",
        "# HELP auditor_heal_exit_code The last heal's exit code (11: a guard refused).",
        "# TYPE auditor_heal_exit_code gauge",
        f"auditor_heal_exit_code {int(outcome.exit_code)}",
    ]
    return "\n".join(out) + "\n"


def undo_runs(directory: Path) -> int:
    """Undo runs journaled in `directory` (an undo's journal names the run it undoes)."""
    from auditor.rebuild.journal_survey import list_runs

    return sum(1 for run in list_runs(directory) if run.get("undoes")) if directory.is_dir() else 0
