"""The triage of one urn: a rich panel on a terminal, JSON (schema `triage/1`) for machines.

Everything that comes from the data (urns, field values, error texts) is escaped: markup off
for data, control characters spelled out.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from auditor.core.model import Classified, Report, Selection
from auditor.core.triage import Status, TriageResult, boundary_of
from auditor.reports.commands import finding_commands, finding_rebuild
from auditor.reports.escape import console_text
from auditor.reports.json_report import finding_json, plain

if TYPE_CHECKING:  # rich is loaded by the console output only (`--format json` does without it)
    from rich.console import Console

SCHEMA = "triage/1"
MARKS = {
    Status.OK: ("ok", "green"),
    Status.BROKEN: ("BROKEN", "bold red"),
    Status.PENDING: ("pending", "yellow"),
    Status.UNCHECKED: ("--", "dim"),
    Status.INFO: ("info", "cyan"),
}


def repairs(result: TriageResult, group: str) -> list[str]:
    """The commands that repair the first break: `auditor rebuild ...`, then DataHub's own."""
    first = result.first_break
    if first is None or first.status != Status.BROKEN:
        return []
    here = [c for c in result.findings if boundary_of(c) == first.boundary]
    out: list[str] = []
    for c in sorted(here or result.findings, key=lambda c: c.verdict.rank):
        for command in [finding_rebuild(c), *finding_commands(c, group=group)]:
            if command and command not in out:
                out.append(command)
    return out


def _headline(result: TriageResult) -> tuple[str, str]:
    first = result.first_break
    verdict = result.verdict
    if verdict == "consistent":
        return "every boundary holds: the index agrees with the rows", "bold green"
    if verdict == "unknown":
        return "unknown urn: neither the table nor the index knows it", "bold red"
    worst = result.worst
    sub = f"/{worst.subkind}" if worst is not None else ""
    where = f" at {first.boundary}" if first is not None else ""
    style = "bold yellow" if verdict == "in_flight" else "bold red"
    label = "in flight" if verdict == "in_flight" else "first break"
    return f"{label}{where}: {verdict}{sub}", style


def render_console(result: TriageResult, console: Console, group: str) -> None:
    from rich.table import Table
    from rich.text import Text

    console.print(Text(console_text(result.urn), style="bold"))
    if result.read_as:
        console.print(Text(f"read as a urn: {', '.join(result.read_as)}", style="dim"))
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("", no_wrap=True)
    table.add_column("boundary", no_wrap=True)
    table.add_column("what was seen", overflow="fold")
    for step in result.steps:
        mark, style = MARKS[step.status]
        cell = Text(console_text(step.detail))
        for problem in step.problems:
            cell.append("\n" + console_text(problem), style=style if step.status != Status.OK else "")
        table.add_row(Text(mark, style=style), Text(step.boundary.value), cell)
    console.print(table)
    headline, style = _headline(result)
    console.print(Text(headline, style=style))
    for i, command in enumerate(repairs(result, group)):
        console.print(Text(("to repair: " if i == 0 else "       or: ") + console_text(command)))
    if result.near:
        console.print(Text("near matches:", style="bold"))
        for m in result.near:
            console.print(Text(f"  {console_text(m.urn)}  ({m.how}; in the {m.where})"))
    for line in result.unchecked:
        console.print(Text(f"not checked: {console_text(line)}", style="dim"))
    for line in result.warnings:
        console.print(Text(f"warning: {console_text(line)}", style="yellow"))
    at = result.checked_at.isoformat(timespec="seconds") if result.checked_at else "?"
    console.print(
        Text(f"checked at {at} in {result.seconds:.2f}s; exit code {result.exit_code}", style="dim")
    )


def to_dict(result: TriageResult, group: str) -> dict[str, Any]:
    first = result.first_break
    report = Report(
        started_at=result.checked_at or datetime.now(UTC), scope=Selection(), consumer_group=group
    )
    worst: Classified | None = result.worst
    return {
        "schema": SCHEMA,
        "asked": result.asked,
        "urn": result.urn,
        "read_as": result.read_as,
        "verdict": result.verdict,
        "subkind": worst.subkind if worst is not None else None,
        "first_break": None
        if first is None
        else {"boundary": first.boundary.value, "status": first.status.value},
        "boundaries": [
            {
                "boundary": s.boundary.value,
                "status": s.status.value,
                "detail": s.detail,
                "problems": s.problems,
                "facts": plain(s.facts),
            }
            for s in result.steps
        ],
        "findings": [finding_json(c, report) for c in result.findings],
        "repair": repairs(result, group),
        "near_matches": [plain(m) for m in result.near],
        "unchecked": result.unchecked,
        "warnings": result.warnings,
        "checked_at": plain(result.checked_at),
        "seconds": round(result.seconds, 3),
        "exit_code": result.exit_code,
    }


def render_json(result: TriageResult, group: str) -> str:
    data = to_dict(result, group)
    try:  # a cold triage's last step: orjson writes the report in a fraction of json's indent path
        import orjson

        return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n"
    except (ImportError, TypeError):  # what orjson refuses (a lone surrogate, an int past 64 bits)
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
