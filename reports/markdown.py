"""The Markdown report: a summary to paste into a ticket."""

from __future__ import annotations

from auditor.core.model import Report, Verdict
from auditor.reports.escape import md_code, md_code_block, md_text
from auditor.reports.summary import (
    STORE_COLUMNS,
    by_store,
    by_type,
    describe,
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
    written_span,
)


def render(report: Report, limit: int = 50) -> str:
    lines = [f"# Drift scan {report.started_at.isoformat(timespec='seconds')}", ""]
    verdict = {
        0: "no persistent divergence",
        1: "**persistent divergence found**",
        5: "documents written by an older release: a reindex is due",
        8: "**the store is far smaller than the index**",
        9: "the store is behind the index (a lagging replica, a restored database)",
    }.get(report.exit_code, f"exit code {report.exit_code}")
    lines += [f"Result: {verdict} (exit code {report.exit_code}).", ""]
    if report.store_smaller is not None:
        lines += [md_text(f"{report.store_smaller.text}."), ""]
    for name, value in report.sources.items():
        lines.append(f"- {md_text(name)}: {md_code(value)}")
    if note := weak_evidence_text(report):
        lines.append(f"- {note}")
    lines.append("")
    counts = totals(report)
    if counts:
        lines += ["| verdict | findings |", "|---|---:|"]
        lines += [f"| {md_text(k)} | {n} |" for k, n in sorted(counts.items())]
        lines.append("")
    lines += ["## Per entity type", "", "| entity type | entities | findings |", "|---|---:|---|"]
    for etype, n, found in by_type(report):
        text = ", ".join(f"{k}: {v}" for k, v in sorted(found.items())) or "consistent"
        lines.append(f"| {md_text(etype)} | {n} | {md_text(text)} |")
    if report.stores:
        lines += ["", "## Per store", "", "| store | " + " | ".join(STORE_COLUMNS) + " |"]
        lines.append("|---|" + "---:|" * len(STORE_COLUMNS))
        for name, values in by_store(report):
            lines.append(f"| {md_text(name)} | " + " | ".join(map(str, values)) + " |")
    if report.partitions:
        lines += [
            "",
            f"## MAE consumer ({md_code(report.consumer_group)})",
            "",
            "| partition | committed | end | lag | status | rate/s | ETA |",
            "|---|---:|---:|---:|---|---:|---:|",
        ]
        for p in report.partitions:
            rate = f"{p.rate:.1f}" if p.rate else "-"
            lines.append(
                f"| {md_text(p.topic)}[{p.partition}] | {p.committed} | {p.end} | {p.lag} | "
                f"{md_text(p.health.value + lost_text(p))} | {rate} | {eta_text(p.eta_seconds)} |"
            )
    if outdated := outdated_lines(report):
        lines += [
            "",
            "## Written by an older release (not a divergence: a reindex is due)",
            "",
            "| entity type | field | written by | documents | e.g. | repair |",
            "|---|---|---|---:|---|---|",
        ]
        for old in outdated:
            example = (old.get("examples") or [""])[0]
            lines.append(
                f"| {md_text(str(old.get('entity_type')))} | {md_text(str(old.get('field')))} | "
                f"{md_text(written_span(old))} | {old.get('documents', 0)} | "
                f"{md_code(str(example)) if example else ''} | {md_code(str(old.get('repair')))} |"
            )
    if behind := restore_lines(report):
        lines += ["", "## Behind a restore (one line per index)", ""]
        for index in behind:
            lines.append(f"- {md_text(restore_text(index))}: {md_code(str(index.get('repair')))}")
    findings = sorted_findings(report.findings)
    if findings:
        lines += ["", "## Findings", ""]
        if line := reobservation_text(report):
            lines += [md_text(line), ""]
        for c in findings[:limit]:
            eta = f" (ETA {eta_text(c.evidence.eta_seconds)})" if c.verdict == Verdict.IN_FLIGHT else ""
            seen = observed_text(c)
            seen = f" ({md_text(seen)})" if seen else ""
            lines.append(f"- {md_code(describe(c))}{eta}: {md_text(c.evidence.reason)}{seen}")
        more = len(findings) - limit + report.findings_dropped
        if more > 0:
            lines.append(f"- ... and {more} more (see the JSON report)")
    commands = repair_commands(report)
    if commands:
        lines += ["", "## To repair", ""] + md_code_block(commands)
    if report.warnings:
        lines += ["", "## Warnings", ""] + [f"- {md_text(w)}" for w in report.warnings]
    return "\n".join(lines) + "\n"
