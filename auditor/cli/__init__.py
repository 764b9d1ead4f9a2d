"""The `auditor` command line: a thin typer layer over auditor.api; the only place that exits."""

from __future__ import annotations

import copy
from typing import Annotated, Any, NoReturn

import typer

from auditor import __version__
from auditor.cli.exits import paragraph
from auditor.exit_codes import ExitCode

app = typer.Typer(
    help="Keeps DataHub honest: audits the search indices and the MAE consumer against the "
    "aspect table (metadata_aspect_v2) and tells propagation delay from persistent divergence.\n\n"
    + paragraph(dict.fromkeys(ExitCode), "Exit codes (each command's --help lists those it returns):"),
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
report_app = typer.Typer(help="Work with saved JSON reports.", no_args_is_help=True)
app.add_typer(report_app, name="report")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"auditor {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Run `auditor COMMAND --help` for each command's options."""


def main() -> None:
    import faulthandler
    import sys

    from auditor.backends.lean import quick_start

    quick_start()  # no unused asyncio transports, no collector passes over the imports
    sys.unraisablehook = _log_unraisable
    # a crash inside a native library (a database driver, librdkafka) says where on stderr,
    # each thread's Python stack, instead of a bare "Segmentation fault"
    faulthandler.enable()
    try:
        asked(app, sys.argv[1:2])()
    except SystemExit as exc:
        if sys.argv[1:2] != ["triage"]:
            raise
        leave(exc.code)
    finally:  # what was printed is out before the interpreter's teardown, whatever happens in it
        _flush()


def _flush() -> None:
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing left to save
            pass


def leave(code: object) -> NoReturn:
    """End the process with `code` as `sys.exit` would, without the interpreter's teardown: a cold
    `auditor triage` (its answer printed, its clients closed) spent 0.21-0.24 s freeing every
    module and object of a process about to end, 0.03-0.04 s without. What an exit does that
    matters is done first: the `atexit` handlers (logging's flush, temporary directories, child
    processes) and the streams flushed. Only for a command that writes nothing but its output
    (triage), and only when no other non-daemon thread runs (a normal exit would wait for it):
    else `sys.exit`."""
    import atexit
    import os
    import sys
    import threading

    main = threading.main_thread()
    if any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate()):
        raise SystemExit(code)
    if code is None or isinstance(code, int):
        status = code or 0
    else:  # as the interpreter does with a message
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    _flush()
    os._exit(status)


def asked(whole: typer.Typer, first: list[str]) -> typer.Typer:
    """The app with only the command `first` names (the app itself for anything else: a group,
    an option, a mistyped name, --help). Typer builds every command's parameters from its
    function's signature before it runs one: 19 commands, 0.04-0.18 s of a cold `auditor
    triage` measured, where the one asked for takes a few milliseconds."""
    from typer.main import get_command_name

    chosen = [
        c
        for c in whole.registered_commands
        if c.callback is not None and first and (c.name or get_command_name(c.callback.__name__)) == first[0]
    ]
    if len(chosen) != 1:
        return whole
    solo = copy.copy(whole)
    solo.registered_commands, solo.registered_groups = chosen, []
    return solo


def _log_unraisable(unraisable: Any) -> None:
    """A driver's cleanup failing after its connection was lost (PyMySQL's cursor finaliser,
    say) goes to the log (`--debug`), not onto the screen: the error itself was reported."""
    import logging

    logging.getLogger("auditor.cleanup").debug(
        "ignored in %r: %s", unraisable.object, unraisable.exc_value, exc_info=None
    )


# the commands register themselves on `app` / `report_app`, listed in --help in this order
# isort: off
from auditor.cli import scan_cmd  # noqa: E402, F401
from auditor.cli import report_cmd  # noqa: E402, F401
from auditor.cli import triage_cmd  # noqa: E402, F401
from auditor.cli import registry_cmd  # noqa: E402, F401
from auditor.cli import platforms_cmd  # noqa: E402, F401
from auditor.cli import rebuild_cmd  # noqa: E402, F401
from auditor.cli import undo_cmd  # noqa: E402, F401
from auditor.cli import heal_cmd  # noqa: E402, F401
from auditor.cli import config_cmd  # noqa: E402, F401
from auditor.cli import drill_cmd  # noqa: E402, F401
from auditor.cli import watch_cmd  # noqa: E402, F401
from auditor.cli import probe_cmd  # noqa: E402, F401
from auditor.cli import serve_cmd  # noqa: E402, F401
# isort: on
