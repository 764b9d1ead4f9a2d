"""`auditor triage URN`: one entity's boundaries, row to index, and the first that breaks."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from auditor.cli import app
from auditor.cli.common import (
    DebugOpt,
    OutFormat,
    OutFormatOpt,
    json_on_stdout,
    run,
    stdout_console,
    write,
)
from auditor.cli.exits import exits
from auditor.cli.options import CONNECTION, settings_of, with_options
from auditor.exit_codes import ExitCode

CODES = {
    ExitCode.OK: "consistent or in flight",
    ExitCode.PERSISTENT: "diverged or unreadable rows",
    ExitCode.USAGE: "not a urn, or a usage or configuration error",
    ExitCode.INCOMPLETE: None,
    ExitCode.STALLED: "the consumer is stalled",
    ExitCode.OUTDATED: "only a document an older release wrote (a reindex of its type is due)",
    ExitCode.UNKNOWN_URN: "unknown urn: neither the table nor the index knows it (near matches "
    "are shown; OpenMetadata: nothing has that name or id)",
    ExitCode.STORE_BEHIND: "the store is behind: the document holds a later write than the row",
}


@app.command()
@exits(CODES)
@with_options(CONNECTION)
def triage(
    urn: Annotated[
        str,
        typer.Argument(
            help="The urn to trace, e.g. 'urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)'; "
            "quoted, URL-encoded, with stray whitespace or as a DataHub URL is fine. With "
            "--platform openmetadata: the entity's fully qualified name or its id."
        ),
    ],
    fmt: OutFormatOpt = OutFormat.console,
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
    entity_type: Annotated[
        list[str] | None,
        typer.Option(help="OpenMetadata: the entity types to look in (repeatable; default every one)."),
    ] = None,
    debug: DebugOpt = False,
    **opts: Any,
) -> None:
    """ "I can't find my dataset": walk one entity from its rows to its search document.

    Boundaries, in order: the version-0 rows (versions, createdon, createdby, runId,
    soft delete); the MCL of each aspect's latest change (found from the change time with
    offsets-for-times on the urn's partition); the MAE group's position there (status, ETA);
    the entity document field by field; its system-metadata docs; its edges. The first
    broken boundary is named with the scan's verdicts, with the `auditor rebuild` command
    that repairs it. An unknown urn gets near matches (case, URL-encoding, whitespace, another
    platform or origin). Works with only the database and the index reachable and says what
    it could not check. Read-only (the state file is read, never written).

    OpenMetadata (--platform openmetadata): the entity by its fully qualified name or id; its
    row, the server's search_index_retry_queue, its document (docs/openmetadata.md).
    """

    def go() -> int:
        from auditor import platforms
        from auditor.errors import ConfigError

        def settings_() -> Any:
            return settings_of(opts)

        platform = opts.get("platform")

        settings = None
        try:  # refused before anything heavy is imported or connected
            platforms.get(platform).check_name(urn)
        except ConfigError:
            settings = settings_()  # unless the configuration names another platform
            if platforms.get(settings.platform).name == platforms.get(platform).name:
                raise
        from auditor.api import triage as run_triage
        from auditor.reports.triage_report import render_console, render_json

        settings = settings or settings_()
        result = run_triage(settings, urn, grace, settle, entity_types=tuple(entity_type or ()))
        if fmt == OutFormat.json:
            write(None, render_json(result, settings.mae_consumer_group))
        else:
            render_console(result, stdout_console(), settings.mae_consumer_group)
        return result.exit_code

    run(debug, go, json_errors=json_on_stdout(fmt))
