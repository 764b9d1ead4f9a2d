"""`auditor report merge`: one report from the JSON reports of sharded scans."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from auditor.cli import report_app
from auditor.cli.common import (
    DebugOpt,
    Format,
    emit,
    json_on_stdout,
    run,
)
from auditor.cli.exits import SCAN, exits
from auditor.errors import ConfigError
from auditor.exit_codes import ExitCode

# the scan's codes, the report's own; 2 also when a file is not a report
REPORT = {**SCAN, ExitCode.USAGE: "a file is not a scan's JSON report, or a usage error"}


@report_app.command("merge")
@exits(REPORT, "Exit codes (as one scan of every shard's entities):")
def report_merge(
    reports: Annotated[
        list[Path], typer.Argument(help="JSON reports of `auditor scan --shard i/N -f json`.")
    ],
    fmt: Annotated[Format, typer.Option("--format", "-f")] = Format.console,
    output: Annotated[Path | None, typer.Option("--output", "-o")] = None,
    metrics_file: Annotated[Path | None, typer.Option(help="Also write a Prometheus textfile here.")] = None,
    debug: DebugOpt = False,
) -> None:
    """Combine the JSON reports of sharded scans into one report."""

    def go() -> int:
        from auditor.reports.merge import merge

        merged = merge([_read(path) for path in reports])
        emit(merged, fmt, output, metrics_file)
        return merged.exit_code

    run(debug, go, json_errors=json_on_stdout(fmt, output=output))


@report_app.command("render")
@exits(REPORT, "Exit codes (as the scan that wrote the report):")
def report_render(
    report: Annotated[
        Path,
        typer.Argument(
            help="A JSON report of `auditor scan -f json`, or the JSON Lines of `scan --findings-out` "
            "(read as a stream: its worst 10,000 findings shown, all counted)."
        ),
    ],
    fmt: Annotated[Format, typer.Option("--format", "-f")] = Format.html,
    output: Annotated[Path | None, typer.Option("--output", "-o")] = None,
    metrics_file: Annotated[Path | None, typer.Option(help="Also write a Prometheus textfile here.")] = None,
    debug: DebugOpt = False,
) -> None:
    """Render a saved JSON report again, as HTML (the default), Markdown or a console table.

    \b
    Example:
      auditor scan -f json -o scan.json && auditor report render scan.json -o scan.html
    """

    def go() -> int:
        loaded = _read(report)
        emit(loaded, fmt, output, metrics_file)
        return loaded.exit_code

    run(debug, go, json_errors=json_on_stdout(fmt, output=output))


def _read(path: Path) -> Any:
    from auditor.reports.jsonl import load

    try:
        return load(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot read report {path}: {exc}") from None
