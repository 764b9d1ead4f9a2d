"""The Markdown report: a summary to paste into a ticket."""

from __future__ import annotations

from auditor.core.model import Report, Verdict
from reports.summary import by_type, describe, eta_text, repair_commands, sorted_findings, totals


def render(report: Report, limit: int = 50) -> str:
    lines = [f"# Drift scan {report.started_at.isoformat(timespec='seconds')}", ""]
    verdict = {0: "no persistent divergence", 1: "**persistent divergence found**"}.get(
        report.exit_code, f"exit code {report.exit_code}"
    )
    lines += [f"Result: {verdict} (exit code {report.exit_code}).", ""]
    for name, value in report.sources.items():
        lines.append(f"- {name}: `{value}`")
    if not report.kafka_available:
        lines.append("- Kafka: not available, verdicts are weaker (time and history only)")
    lines.append("")
    counts = totals(report)
    if counts:
        lines += ["| verdict | findings |", "|---|---:|"]
        lines += [f"| {k} | {n} |" for k, n in sorted(counts.items())]
        lines.append("")
    lines += ["## Per entity type", "", "| entity type | entities | findings |", "|---|---:|---|"]
    for etype, n, found in by_type(report):
        text = ", ".join(f"{k}: {v}" for k, v in sorted(found.items())) or "consistent"
        lines.append(f"| {etype} | {n} | {text} |")
    if report.partitions:
        lines += [
            "",
            "## MAE consumer",
            "",
            "| partition | committed | end | lag | status | rate/s | ETA |",
            "|---|---:|---:|---:|---|---:|---:|",
        ]
        for p in report.partitions:
            rate = f"{p.rate:.1f}" if p.rate else "-"
            lines.append(
                f"| {p.topic}[{p.partition}] | {p.committed} | {p.end} | {p.lag} | "
                f"{p.health.value} | {rate} | {eta_text(p.eta_seconds)} |"
            )
    findings = sorted_findings(report.findings)
    if findings:
        lines += ["", "## Findings", ""]
        for c in findings[:limit]:
            eta = f" (ETA {eta_text(c.evidence.eta_seconds)})" if c.verdict == Verdict.IN_FLIGHT else ""
            lines.append(f"- `{describe(c)}`{eta}: {c.evidence.reason}")
        more = len(findings) - limit + report.findings_dropped
        if more > 0:
            lines.append(f"- ... and {more} more (see the JSON report)")
    commands = repair_commands(report)
    if commands:
        lines += ["", "## To repair", "", "```"] + commands + ["```"]
    if report.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in report.warnings]
    return "\n".join(lines) + "\n"
