"""The terminal report: rich tables of verdicts per entity type, the consumer and what to run."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from auditor.core.model import Classified, Report, Verdict
from auditor.reports.escape import console_markup, console_text
from auditor.reports.summary import (
    STORE_COLUMNS,
    by_store,
    eta_text,
    lost_text,
    observed_text,
    outdated_lines,
    reobservation_text,
    repair_commands,
    restore_lines,
    restore_text,
    sorted_findings,
    totals,
    weak_evidence_text,
    worst,
    written_span,
)

STYLE = {
    "invalid": "magenta",
    "diverged": "red",
    "stalled": "yellow",
    "outdated": "blue",
    "store_behind": "bright_blue",
    "in_flight": "cyan",
}
VERDICTS = ("in_flight", "outdated", "store_behind", "stalled", "diverged", "invalid")


def _say(console: Console, text: str, style: str = "", soft_wrap: bool | None = None) -> None:
    """Data on a line of its own: no rich markup, emoji codes (":smile:") or highlighting, one line."""
    console.print(
        console_text(text), style=style, markup=False, emoji=False, highlight=False, soft_wrap=soft_wrap
    )


def _cell(value: str) -> Text:
    """Data in a table cell: as _say."""
    return Text(console_text(value))


def _topic(name: str) -> str:
    # MetadataChangeLog_Versioned_v1 -> Versioned (the table stays narrow)
    return name.removeprefix("MetadataChangeLog_").removesuffix("_v1")


def _headline(report: Report) -> str:
    return {
        0: "[green]no persistent divergence[/]",
        1: "[red bold]persistent divergence found[/]",
        4: "[yellow bold]the MAE consumer is stalled[/]",
        5: "[blue bold]documents written by an older release: a reindex is due[/]",
        8: "[red bold]the store is far smaller than the index[/]",
        9: "[bright_blue bold]the store is behind the index (a lagging replica, a restored database)[/]",
    }.get(report.exit_code, f"[red]incomplete (exit {report.exit_code})[/]")


def _outdated_table(lines: list[dict[str, Any]]) -> Table:
    """Documents an older release wrote: per type, field and release, with the one repair."""
    table = Table(
        title="Written by an older release (not a divergence: a reindex is due)", title_justify="left"
    )
    for name in ("entity type", "field", "written by", "documents", "e.g.", "repair"):
        table.add_column(name, justify="right" if name == "documents" else "left")
    for line in lines:
        examples = line.get("examples") or []
        table.add_row(
            _cell(str(line.get("entity_type"))),
            _cell(str(line.get("field"))),
            _cell(f"{written_span(line)} (judged as {line.get('judged_by')})"),
            str(line.get("documents", 0)),
            _cell(str(examples[0]) if examples else ""),
            _cell(f"{line.get('repair')}  # or: {line.get('native')}"),
        )
    return table


def _types_table(report: Report) -> Table:
    per_type: dict[str, Counter[str]] = defaultdict(Counter)
    causes: dict[str, Counter[str]] = defaultdict(Counter)
    for (etype, verdict, subkind), n in report.counts.items():
        per_type[etype][verdict] += n
        if verdict in ("diverged", "invalid"):
            causes[etype][subkind] += n
    table = Table(title="Findings per entity type", title_justify="left")
    table.add_column("entity type")
    table.add_column("entities", justify="right")
    for verdict in VERDICTS:
        table.add_column(verdict, justify="right", style=STYLE[verdict])
    table.add_column("why (diverged)")
    for etype in sorted(set(report.entities) | set(per_type)):
        counts = per_type.get(etype, Counter())
        why = ", ".join(f"{k} {n}" for k, n in causes[etype].most_common())
        table.add_row(
            _cell(etype),
            str(report.entities.get(etype, 0)),
            *[str(counts[v]) if counts[v] else "" for v in VERDICTS],
            _cell(why),
        )
    return table


def _stores_table(report: Report) -> Table:
    table = Table(title="Per store (federation)", title_justify="left")
    table.add_column("store")
    for column in STORE_COLUMNS:
        table.add_column(column, justify="right")
    for name, values in by_store(report):
        table.add_row(_cell(name), *(str(v) for v in values))
    return table


def _partitions_table(report: Report) -> Table:
    table = Table(title=f"MAE consumer ({console_markup(report.consumer_group)})", title_justify="left")
    for col in ("partition", "committed", "end", "lag", "status", "rate/s", "ETA", "at"):
        table.add_column(col, justify="right" if col in ("committed", "end", "lag", "rate/s") else "left")
    for p in report.partitions:
        style = {"stalled": "yellow", "stopped": "red", "rewound": "red", "lagging": "cyan"}.get(
            p.health.value, ""
        )
        table.add_row(
            _cell(f"{_topic(p.topic)}[{p.partition}]"),
            str(p.committed),
            str(p.end),
            str(p.lag),
            (f"[{style}]{p.health.value}[/]" if style else p.health.value) + lost_text(p),
            f"{p.rate:.1f}" if p.rate else "-",
            eta_text(p.eta_seconds) if p.lag else "-",
            p.position_time.strftime("%H:%M:%S") if p.position_time else "-",
        )
    return table


def _by_urn(findings: list[Classified]) -> list[tuple[Classified, Counter[str]]]:
    """One entry per urn: its most important finding, and a count of the others by subkind."""
    groups: dict[str, list[Classified]] = {}
    for c in sorted_findings(findings):
        groups.setdefault(c.finding.urn, []).append(c)
    out = []
    for items in groups.values():
        head, rest = items[0], items[1:]
        out.append((head, Counter(f"{c.verdict.value}/{c.subkind}" for c in rest)))
    return out


def render(report: Report, console: Console, limit: int = 15) -> None:
    duration = (report.finished_at - report.started_at).total_seconds() if report.finished_at else 0.0
    console.print(f"Drift scan: {_headline(report)}  ({duration:.1f}s)")
    if report.store_smaller is not None:  # the systemic cause first: its orphans follow from it
        _say(console, f"  {report.store_smaller.text}.", style="red bold")
        for index, (n, of) in report.store_smaller.indices.items():
            _say(console, f"    {index}: {n} of its {of} documents have no row", style="red")
    for name, value in report.sources.items():
        _say(console, f"  {name}: {value}", style="dim")
    console.print(_types_table(report))
    if report.stores:
        console.print(_stores_table(report))
    if report.partitions:
        console.print(_partitions_table(report))
    elif note := weak_evidence_text(report):
        console.print(f"[yellow]{note}.[/]")

    if line := reobservation_text(report):
        _say(console, line, style="dim")
    counts = totals(report)
    groups = _by_urn(report.findings)
    if groups:
        console.print(
            f"[bold]Findings[/] ({sum(counts.values())} on {len(groups)} entities; "
            f"first {min(limit, len(groups))} entities):"
        )
        for head, rest in groups[:limit]:
            f = head.finding
            style = STYLE.get(head.verdict.value, "")
            what = console_markup(f"{head.verdict.value}/{head.subkind}")
            where = f" {f.aspect}" if f.aspect else ""
            eta = f" ETA {eta_text(head.evidence.eta_seconds)}" if head.verdict == Verdict.IN_FLIGHT else ""
            console.print(f"  [{style}]{what}[/]{eta} ", end="", highlight=False, emoji=False)
            _say(console, f"{f.urn}{where}" + (f"  (store {','.join(f.stores)})" if f.stores else ""))
            if f.details.get("fields"):
                names = [d["field"] if isinstance(d, dict) else str(d) for d in f.details["fields"]]
                _say(console, f"      fields: {', '.join(names)}", style="dim")
            _say(console, f"      {head.evidence.reason}", style="dim")
            if head.verdict != Verdict.IN_FLIGHT and (seen := observed_text(head)):
                _say(console, f"      {seen}", style="dim")
            if rest:
                more = ", ".join(f"{k} {n}" for k, n in rest.most_common())
                _say(console, f"      and: {more}", style="dim")
    offenders = [(urn, n) for urn, n in worst(report, 5) if n > 1]
    if offenders:
        console.print("[bold]Worst offenders:[/]")
        for urn, n in offenders:
            _say(console, f"  {n:4d}  {urn}")
    if report.converged_total:
        console.print(f"[green]{report.converged_total} in-flight findings converged during --confirm[/]")
    if outdated := outdated_lines(report):
        console.print(_outdated_table(outdated))
    for restored in restore_lines(report):  # once per index, however many findings it holds
        repair = restored.get("repair")
        _say(console, f"Behind a restore: {restore_text(restored)}; repair: {repair}", style="red")
    commands = repair_commands(report)
    if commands:
        console.print("[bold]To repair:[/]")
        for command in commands:
            _say(console, f"  {command}", soft_wrap=True)
    if report.unknown:
        skew = ", ".join(f"{k}: {v}" for k, v in sorted(report.unknown.items()))
        console.print(
            f"[yellow]Unknown to the registry (skipped):[/] {console_markup(skew)}",
            highlight=False,
            emoji=False,
        )
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/] {console_markup(warning)}", highlight=False, emoji=False)
