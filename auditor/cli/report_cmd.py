"""`auditor report merge`: one report from the JSON reports of sharded scans."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from auditor.cli import report_app
from auditor.cli.common import (
    DebugOpt,
    Format,
    emit,
    run,
)
from auditor.errors import ConfigError


@report_app.command("merge")
def report_merge(
    reports: Annotated[
        list[Path], typer.Argument(help="JSON reports of `auditor scan --shard i/N -f json`.")
    ],
    fmt: Annotated[Format, typer.Option("--format", "-f")] = Format.console,
    output: Annotated[Path | None, typer.Option("--output", "-o")] = None,
    metrics_file: Annotated[Path | None, typer.Option(help="Also write a Prometheus textfile here.")] = None,
    debug: DebugOpt = False,
) -> None:
    """Combine the JSON reports of sharded scans into one report (same exit codes as scan)."""

    def go() -> int:
        from auditor.reports.merge import from_dict, merge

        parts = []
        for path in reports:
            try:
                parts.append(from_dict(json.loads(path.read_text(encoding="utf-8"))))
            except (OSError, ValueError, KeyError) as exc:
                raise ConfigError(f"cannot read report {path}: {exc}") from None
        merged = merge(parts)
        emit(merged, fmt, output, metrics_file)
        return merged.exit_code

    run(debug, go)
