"""`auditor serve`: the on-call console, a resident read-only HTTP service (docs/serve.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from auditor.cli import app
from auditor.cli.common import (
    DebugOpt,
    run,
)
from auditor.cli.exits import exits
from auditor.cli.options import CONNECTION, settings_of, with_options
from auditor.exit_codes import ExitCode

CODES = {
    ExitCode.OK: "stopped (SIGTERM, Ctrl-C)",
    ExitCode.USAGE: "usage or configuration error (nothing listened)",
    ExitCode.INCOMPLETE: "a backend failed at start",
}


@app.command()
@exits(CODES)
@with_options(CONNECTION)
def serve(
    host: Annotated[
        str, typer.Option(help="Address to listen on. Beyond loopback a token or a proxy header is required.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    token_file: Annotated[
        Path | None,
        typer.Option(
            help="A file whose first line is the bearer token non-loopback clients must send "
            "(or env AUDITOR_SERVE_TOKEN). Never logged.",
        ),
    ] = None,
    trusted_proxy_header: Annotated[
        str | None,
        typer.Option(
            help="Behind an authenticating proxy: the header it sets on every request it let "
            "through (e.g. X-Forwarded-User); only the proxy must reach the port.",
        ),
    ] = None,
    reports: Annotated[
        Path | None,
        typer.Option(
            help="The folder of JSON scan reports scheduled runs write (deploy/), listed at /reports."
        ),
    ] = None,
    journal_dir: Annotated[
        Path | None,
        typer.Option(
            envvar="AUDITOR_JOURNAL_DIR",
            help="The repairs' write journal, listed at /journal (default: `journal` beside the state file).",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option(help="Seconds a request may take: a slow or down backend gets a clear page then.")
    ] = 10.0,
    sessions: Annotated[
        int, typer.Option(min=1, help="Warm backend sessions (triages at once; more requests wait).")
    ] = 8,
    grace: Annotated[
        float | None,
        typer.Option(
            help="Seconds a change may take to reach the index without Kafka evidence (default: settings)."
        ),
    ] = None,
    settle: Annotated[
        float,
        typer.Option(help="Seconds after a write during which a missing MCL may still be on its way."),
    ] = 10.0,
    access_log: Annotated[bool, typer.Option(help="One line per request on stderr.")] = True,
    debug: DebugOpt = False,
    **opts: Any,
) -> None:
    """The on-call console: triage in a browser (and as JSON under /api/triage), the latest
    scan reports, /healthz and /readyz, on warm connection pools.

    Read-only: no endpoint writes (repairs stay with `auditor rebuild ... --apply`). Listens on
    127.0.0.1 unless --host says otherwise; then every client but a loopback one needs the
    bearer token (AUDITOR_SERVE_TOKEN or --token-file) or the trusted proxy's header.
    """

    def go() -> int:
        from auditor.serve.app import Guard, Options, build
        from auditor.serve.console import Console
        from auditor.serve.run import check_exposure, read_token
        from auditor.serve.run import serve as serve_forever

        settings = settings_of(opts)
        guard = Guard(read_token(token_file), trusted_proxy_header)
        check_exposure(host, guard)
        if reports is not None and not reports.is_dir():
            from auditor.errors import ConfigError

            raise ConfigError(f"--reports {reports}: not a folder")
        console = Console(settings, sessions=sessions, grace=grace, settle=settle)
        journal = journal_dir or Path(settings.state_file).parent / "journal"  # as `rebuild undo`'s
        options = Options(
            timeout=timeout, reports=reports, guard=guard, workers=sessions + 4, journal=journal,
            journal_named=journal_dir is not None,
        )  # fmt: skip
        application = build(console, options)
        shown = "localhost" if host in ("127.0.0.1", "::1") else host
        auth = (
            "loopback only"
            if not (guard.token or guard.proxy_header)
            else "token/proxy header beyond loopback"
        )
        serve_forever(
            application, host, port, debug, access_log,
            f"auditor serve: http://{shown}:{port}/ ({console.platform}; {auth}; read-only)",
        )  # fmt: skip
        return 0

    run(debug, go)
