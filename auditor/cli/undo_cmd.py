"""`auditor rebuild undo RUN` and `auditor rebuild journal`: a repair's journaled writes, taken back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from auditor.cli.common import (
    DebugOpt,
    JsonFlag,
    OutFormat,
    OutFormatOpt,
    json_on_stdout,
    run,
    stdout_console,
    write,
)
from auditor.cli.exits import exits
from auditor.cli.options import CONNECTION, DEBUG, settings_of, with_options
from auditor.cli.rebuild_cmd import BreakLock, JournalDirOpt, Output, rebuild_app
from auditor.errors import ConfigError
from auditor.exit_codes import ExitCode


def journal_dir(given: Path | None, settings: Any) -> Path:
    """--journal-dir, or `journal` beside the state file (where a repair journals by default)."""
    return given if given is not None else Path(settings.state_file).parent / "journal"


def _as_json(fmt: Any, json_out: bool, output: Path | None) -> bool:
    return bool(json_out or output or fmt == OutFormat.json)


@rebuild_app.command("undo")
@exits(
    {
        ExitCode.OK: "every document the run wrote is as it was before it (or would be: a dry run)",
        ExitCode.UNDO_PARTIAL: "some documents were written since by someone else: refused and "
        "left as they are, each listed with why (the rest put back)",
        ExitCode.USAGE: "no such run, or not a journal",
        ExitCode.INCOMPLETE: None,
        ExitCode.LOCKED: "a repair of the run's target is running: undo once it ends",
    }
)
@with_options(CONNECTION, DEBUG)
def undo_cmd(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN", help="The run to undo (`auditor rebuild journal`).")
    ],
    apply: Annotated[bool, typer.Option("--apply", help="Write. Without it nothing is written.")] = False,
    journal: JournalDirOpt = None,
    break_stale_lock: BreakLock = False,
    fmt: OutFormatOpt = OutFormat.console,
    json_out: JsonFlag = False,
    output: Output = None,
    **opts: Any,
) -> None:
    """Put back what a repair's run wrote or deleted: each document as it was before the run.

    A document is put back only where the run's own write is still its latest (the engine's
    seq_no check); one written since by someone else is refused, named with why, and left as it
    is. A full rebuild's alias goes back to the index it pointed at, when that index was kept.
    The undo holds the lock of the target the run repaired.
    The undo is journaled too (undo it to take it back); run again, it writes nothing twice.
    """

    def go() -> int:
        from auditor.backends.connect import open_search
        from auditor.backends.journal import find
        from auditor.rebuild.undo import undo
        from auditor.reports.undo_report import render_console, to_json

        settings = settings_of(opts)
        directory = journal_dir(journal, settings)
        path = find(directory, run_id)
        if path is None:
            raise ConfigError(
                f"no journaled run {run_id!r} in {directory}", hint="`auditor rebuild journal` lists them"
            )
        search = open_search(settings)
        try:
            outcome = undo(search, path, apply, directory, break_stale_lock)
        finally:
            search.close()
        if _as_json(fmt, json_out, output):
            write(output, to_json(outcome) + "\n")
        else:
            render_console(outcome, stdout_console())
        return int(outcome.exit_code)

    run(opts["debug"], go, json_errors=json_on_stdout(fmt, json_out, output))


@rebuild_app.command("journal")
@exits({ExitCode.OK: "the runs listed", ExitCode.USAGE: None})
def journal_cmd(
    journal: JournalDirOpt = None,
    state_file: Annotated[
        Path | None, typer.Option(envvar="AUDITOR_STATE_FILE", help="Its directory holds `journal`.")
    ] = None,
    fmt: OutFormatOpt = OutFormat.console,
    json_out: JsonFlag = False,
    output: Output = None,
    debug: DebugOpt = False,
) -> None:
    """The journaled runs, oldest first: what each repair (or undo) wrote, and whether it ended."""

    def go() -> int:
        from auditor.rebuild.journal_survey import list_runs
        from auditor.reports.undo_report import render_runs
        from auditor.settings import Settings

        state = state_file or Path(Settings.model_fields["state_file"].default)
        directory = journal if journal is not None else state.parent / "journal"
        runs = list_runs(directory)
        if _as_json(fmt, json_out, output):
            write(output, json.dumps(runs, indent=2, ensure_ascii=False) + "\n")
        else:
            render_runs(runs, stdout_console())
        return 0

    run(debug, go, json_errors=json_on_stdout(fmt, json_out, output))
