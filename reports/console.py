"""The terminal report: rich tables of verdicts per entity type, the consumer and what to run."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from auditor.core.model import Report, Verdict
from reports.summary import (
    by_type,
    describe,
    eta_text,
    repair_commands,
    sorted_findings,
    totals,
    worst,
)

STYLE = {"invalid": "magenta", "diverged": "red", "stalled": "yellow", "in_flight": "cyan"}


def _style(label: str) -> str:
    return STYLE.get(label.split("/")[0], "")


def render(report: Report, console: Console, limit: int = 20) -> None:
    code = report.exit_code
    headline = {
        0: "[green]no persistent divergence[/]",
        1: "[red bold]persistent divergence found[/]",
        4: "[yellow bold]the MAE consumer is stalled[/]",
    }.get(code, f"[red]incomplete (exit {code})[/]")
    duration = (report.finished_at - report.started_at).total_seconds() if report.finished_at else 0.0
    console.print(f"Drift scan: {headline}  ({duration:.1f}s)")
    for name, value in report.sources.items():
        console.print(f"  {name}: {value}", style="dim", markup=False, highlight=False)

    counts = totals(report)
    table = Table(title="Findings per entity type", title_justify="left")
    table.add_column("entity type")
    table.add_column("entities", justify="right")
    labels = sorted(
        counts, key=lambda k: (list(STYLE).index(k.split("/")[0]) if k.split("/")[0] in STYLE else 9, k)
    )
    for label in labels:
        table.add_column(label, justify="right", style=_style(label))
    for etype, n, found in by_type(report):
        if n or found:
            table.add_row(etype, str(n), *[str(found.get(label, "")) for label in labels])
    console.print(table)

    if report.partitions:
        parts = Table(title="MAE consumer (generic-mae-consumer-job-client)", title_justify="left")
        for col in ("partition", "committed", "end", "lag", "status", "rate/s", "ETA", "position time"):
            parts.add_column(col, justify="right" if col in ("committed", "end", "lag", "rate/s") else "left")
        for p in report.partitions:
            style = {"stalled": "yellow", "stopped": "red", "rewound": "red", "lagging": "cyan"}.get(
                p.health.value, ""
            )
            parts.add_row(
                f"{p.topic}[{p.partition}]",
                str(p.committed),
                str(p.end),
                str(p.lag),
                f"[{style}]{p.health.value}[/]" if style else p.health.value,
                f"{p.rate:.1f}" if p.rate else "-",
                eta_text(p.eta_seconds),
                p.position_time.isoformat(timespec="seconds") if p.position_time else "-",
            )
        console.print(parts)
    elif not report.kafka_available:
        console.print("[yellow]Kafka not available: verdicts rest on time and history only.[/]")

    findings = sorted_findings(report.findings)
    if findings:
        console.print(f"[bold]Findings[/] (first {min(limit, len(findings))} of {sum(counts.values())}):")
        for c in findings[:limit]:
            eta = f" ETA {eta_text(c.evidence.eta_seconds)}" if c.verdict == Verdict.IN_FLIGHT else ""
            console.print(f"  [{STYLE.get(c.verdict.value, '')}]{describe(c)}[/]{eta}", highlight=False)
            console.print(f"      {c.evidence.reason}", style="dim", highlight=False, markup=False)
    offenders = [(urn, n) for urn, n in worst(report, 5) if n > 1]
    if offenders:
        console.print("[bold]Worst offenders:[/]")
        for urn, n in offenders:
            console.print(f"  {n:4d}  {urn}", markup=False, highlight=False)
    if report.converged:
        console.print(f"[green]{len(report.converged)} in-flight findings converged during --confirm[/]")
    commands = repair_commands(report)
    if commands:
        console.print("[bold]To repair:[/]")
        for command in commands:
            console.print(f"  {command}", markup=False, highlight=False)
    if report.unknown:
        skew = ", ".join(f"{k}: {v}" for k, v in sorted(report.unknown.items()))
        console.print(f"[yellow]Unknown to the registry (skipped):[/] {skew}", highlight=False)
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
