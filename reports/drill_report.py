"""A restore drill's result as console text, JSON, Markdown, and the files of its evidence bundle."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.table import Table

from auditor.core.drill import CountDiff, DrillResult, RowDiff
from auditor.reports.escape import console_markup, md_code, md_text, visible

SHOWN = 50  # differences listed on the console / in the summary (all of them in the JSON)


def _key(diff: RowDiff) -> str:
    return " ".join(visible(str(k)) for k in diff.key)


def _columns(diff: RowDiff) -> str:
    """The columns that changed, a JSON column compared by value with its changed paths."""
    text = ", ".join(diff.columns)
    return text + (f" ({', '.join(diff.paths)})" if diff.paths else "")


def to_dict(result: DrillResult) -> dict[str, Any]:
    """The whole result, JSON-ready: every difference with its `explanation` slot."""
    return {
        "result": result.verdict,
        "source": result.source,
        "target": result.target,
        "started": result.started,
        "finished": result.finished,
        "thresholds": asdict(result.thresholds),
        "versions": result.versions,
        "tables": [asdict(t) for t in result.tables],
        "warnings": result.warnings,
        "failures": {
            "rows": result.row_failures(),
            "counts": [_count(c) for c in result.count_failures()],
        },
        "row_differences": [
            {
                "table": d.table,
                "key": list(d.key),
                "change": d.change.value,
                "columns": list(d.columns),
                "paths": list(d.paths),
                "source": d.source,
                "target": d.target,
                "explanation": d.explanation,
            }
            for d in result.rows
        ],
        "count_differences": [_count(c) for c in result.counts if c.delta != 0],
        "counts": [_count(c) for c in result.counts],
    }


def _count(c: CountDiff) -> dict[str, Any]:
    return {
        "kind": c.kind,
        "name": c.name,
        "source": c.source,
        "target": c.target,
        "delta": c.delta,
        "explanation": "",
    }


def render_json(result: DrillResult) -> str:
    return json.dumps(to_dict(result), indent=2, ensure_ascii=False, default=str) + "\n"


def render_console(result: DrillResult, console: Console) -> None:
    colour = "green" if result.passed else "red"
    console.print(
        f"[bold {colour}]{result.verdict}[/]  source {console_markup(result.source)}  "
        f"target {console_markup(result.target)}",
        highlight=False,
    )
    for t in result.tables:
        console.print(
            f"{console_markup(t.table)}: {t.source_rows} / {t.target_rows} rows, {t.segments} segments "
            f"checksummed, {t.leaf_rows} row hashes fetched, {t.seconds:.2f} s",
            highlight=False,
        )
    for w in result.warnings:
        console.print(f"[yellow]warning:[/] {console_markup(w)}", highlight=False)
    if result.rows:
        table = Table(title=f"row differences ({len(result.rows)})", title_justify="left")
        for name in ("table", "key", "change", "columns"):
            table.add_column(name, overflow="fold")
        for d in result.rows[:SHOWN]:
            table.add_row(
                console_markup(d.table),
                console_markup(_key(d)),
                d.change.value,
                console_markup(_columns(d)),
            )
        console.print(table)
        if len(result.rows) > SHOWN:
            console.print(f"... {len(result.rows) - SHOWN} more in the JSON")
    failing = {(c.kind, c.name) for c in result.count_failures()}
    differing = [c for c in result.counts if c.delta != 0]
    if differing:
        table = Table(title=f"counts that differ ({len(differing)})", title_justify="left")
        for name in ("kind", "name", "source", "target", "delta", ""):
            table.add_column(name, overflow="fold")
        for c in differing[:SHOWN]:
            mark = "[red]over threshold[/]" if (c.kind, c.name) in failing else "within threshold"
            table.add_row(c.kind, console_markup(c.name), _n(c.source), _n(c.target), _n(c.delta), mark)
        console.print(table)
    same = len(result.counts) - len(differing)
    console.print(
        f"{same} counts equal; thresholds: rows {result.thresholds.max_row_diffs} per table, "
        f"counts {result.thresholds.max_count_delta}"
        + "".join(f", {k} {v}" for k, v in sorted(result.thresholds.per_kind.items())),
        highlight=False,
    )


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def render_markdown(result: DrillResult) -> str:
    """The bundle's summary.md: verdict, servers, tables, differences (first SHOWN)."""
    lines = [
        f"# Restore drill: {result.verdict}",
        "",
        f"- source: {md_code(result.source)}",
        f"- target: {md_code(result.target)}",
        f"- started {result.started}, finished {result.finished}",
        "",
    ]
    lines += ["## Servers", "", "| side | server | version |", "|---|---|---|"]
    for side, found in result.versions.items():
        for server, value in found.items():
            if not server.endswith("_url"):
                lines.append(f"| {side} | {server} | {md_code(json.dumps(value, default=str), table=True)} |")
    lines += [
        "",
        "## Tables",
        "",
        "| table | source rows | target rows | segments | row hashes | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for t in result.tables:
        lines.append(
            f"| {md_text(t.table)} | {t.source_rows} | {t.target_rows} | {t.segments} | {t.leaf_rows} | "
            f"{t.seconds:.2f} |"
        )
    if result.warnings:
        lines += ["", "## Warnings", ""] + [f"- {md_text(w)}" for w in result.warnings]
    lines += ["", f"## Row differences ({len(result.rows)})", ""]
    if result.rows:
        lines += ["| table | key | change | columns |", "|---|---|---|---|"]
        for d in result.rows[:SHOWN]:
            lines.append(
                f"| {md_text(d.table)} | {md_code(_key(d), table=True)} | {d.change.value} | "
                f"{md_text(_columns(d))} |"
            )
    failing = {(c.kind, c.name) for c in result.count_failures()}
    differing = [c for c in result.counts if c.delta != 0]
    lines += ["", f"## Counts that differ ({len(differing)} of {len(result.counts)})", ""]
    if differing:
        lines += ["| kind | name | source | target | delta | threshold |", "|---|---|---|---|---|---|"]
        for c in differing:
            verdict = "over" if (c.kind, c.name) in failing else "within"
            lines.append(
                f"| {c.kind} | {md_code(c.name, table=True)} | {_n(c.source)} | {_n(c.target)} | "
                f"{_n(c.delta)} | {verdict} |"
            )
    lines += ["", "Every difference, with an `explanation` slot to fill in, is in `differences.json`.", ""]
    return "\n".join(lines)


def bundle_files(result: DrillResult) -> dict[str, str]:
    """The evidence bundle: file name -> text."""
    data = to_dict(result)
    return {
        "log.txt": "\n".join(visible(line) for line in result.log) + "\n",
        "versions.json": json.dumps(result.versions, indent=2, ensure_ascii=False, default=str) + "\n",
        "differences.json": json.dumps(
            {"rows": data["row_differences"], "counts": data["count_differences"]},
            indent=2,
            ensure_ascii=False,
            default=str,
        )
        + "\n",
        "summary.md": render_markdown(result),
        "result.json": render_json(result),
        "RESULT": result.verdict + "\n",
    }
