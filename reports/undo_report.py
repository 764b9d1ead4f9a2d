"""An undo's outcome and a journal's runs, for the console and as JSON (data text escaped)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from rich.console import Console

from auditor.core.undo import Taken, UndoOutcome
from auditor.reports.escape import console_markup, console_text

SHOWN = 50  # documents listed per kind on the console (JSON lists them all)


def _doc(t: Taken) -> str:
    where = f"{t.index}/{t.doc_id}" if t.doc_id else f"alias {t.index}"
    return where + (f" ({t.urn})" if t.urn and t.urn != t.doc_id else "")


def render_console(outcome: UndoOutcome, console: Console) -> None:
    head = "applied" if outcome.applied else "dry run (nothing written; add --apply)"
    console.print(f"[bold]rebuild undo {console_markup(outcome.run)}[/]: {head}", highlight=False)
    if outcome.torn:
        console.print(
            f"[yellow]  the journal stops early: {console_markup(outcome.torn)}[/]", highlight=False
        )
    elif not outcome.ended:
        console.print("[yellow]  the repair did not close its journal (killed, or still running)[/]")
    would = "" if outcome.applied else "would be "
    kinds = [("put back", [t for t in outcome.restored if t.action == "put back"])]
    kinds += [("deleted (absent before the repair)", [t for t in outcome.restored if t.action == "deleted"])]
    kinds += [("left alone", outcome.unchanged)]
    for name, taken in kinds:
        if taken:
            console.print(
                f"  {len(taken):6d}  {would if name != 'left alone' else ''}{name}", highlight=False
            )
    for t in outcome.aliases:
        line = f"  alias {t.index}: {t.action}" + (f": {t.why}" if t.why else "")
        console.print(console_text(line), markup=False, highlight=False)
    for label, taken in (("refused", outcome.refused), ("failed", outcome.failed)):
        if taken:
            console.print(f"[red]  {len(taken)} {label}, left as they are:[/]", highlight=False)
        for t in taken[:SHOWN]:
            console.print(console_text(f"    {_doc(t)}: {t.why}"), markup=False, highlight=False)
    if outcome.undo_run:
        console.print(
            f"  journaled as {console_markup(outcome.undo_run)} "
            f"(auditor rebuild undo {console_markup(outcome.undo_run)} takes it back)",
            highlight=False,
        )


def to_json(outcome: UndoOutcome) -> str:
    data: dict[str, Any] = {"exit_code": int(outcome.exit_code), **asdict(outcome)}
    return json.dumps(data, indent=2, ensure_ascii=False)


def render_runs(runs: list[dict[str, Any]], console: Console) -> None:
    if not runs:
        console.print("no journaled runs")
        return
    for r in runs:
        what = (
            f"undo of {r['undoes']}"
            if r.get("undoes")
            else f"{r.get('mode')}{' --full' if r.get('full') else ''}"
        )
        state = "" if r["ended"] else " (not closed: killed or running)"
        torn = f"; torn: {r['torn']}" if r.get("torn") else ""
        line = f"{r['run']}  {r.get('at') or ''}  {what}: {r['written']} documents written"
        line += f", {r['swaps']} alias swap(s){state}{torn}" if r["swaps"] else f"{state}{torn}"
        if r.get("verified") is not None:
            line += "; verified" if r["verified"].get("ok") else f"; NOT verified: {r['verified'].get('why')}"
        if r.get("undone_by"):
            line += f"; undone by {', '.join(r['undone_by'])}"
        console.print(console_text(line), markup=False, highlight=False)
    console.print(f"undo one with: auditor rebuild undo {console_markup(runs[-1]['run'])} (--apply to write)")
