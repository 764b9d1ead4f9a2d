"""`auditor probe`: a canary write timed end to end (DB -> MCL -> index), for a CronJob."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from auditor.cli import app
from auditor.cli.common import (
    JsonFlag,
    OutFormat,
    OutFormatOpt,
    json_on_stdout,
    run,
    stdout_console,
    write,
)
from auditor.cli.exits import exits
from auditor.cli.options import DEBUG, PROBING, settings_of, with_options
from auditor.exit_codes import ExitCode

CODES = {
    ExitCode.OK: "the canary showed within --slo",
    ExitCode.PERSISTENT: "over the SLO (late or not at all)",
    ExitCode.USAGE: None,
    ExitCode.INCOMPLETE: "could not complete (a write or a backend failed)",
}


@app.command()
@exits(CODES, "Exit codes (for a CronJob):")
@with_options(PROBING, DEBUG)
def probe(
    apply: Annotated[
        bool, typer.Option("--apply", help="Really write (or remove) the canary. Without it: refused.")
    ] = False,
    gms_url: Annotated[
        str | None,
        typer.Option(
            envvar="DATAHUB_GMS_URL", help="DataHub GMS URL: write through its REST API (preferred)."
        ),
    ] = None,
    gms_token: Annotated[
        str | None, typer.Option(envvar="DATAHUB_GMS_TOKEN", help="A personal access token for GMS.")
    ] = None,
    via_store: Annotated[
        bool,
        typer.Option(
            "--via-store",
            help="No GMS (a sandbox): write the row into the aspect table, then produce its MCL, like GMS.",
        ),
    ] = False,
    remove: Annotated[bool, typer.Option("--remove", help="Delete the canary entity instead.")] = False,
    slo: Annotated[float, typer.Option(help="Seconds the canary may take to show in the index.")] = 60.0,
    timeout: Annotated[
        float | None, typer.Option(help="Seconds to wait for the index (default: twice --slo).")
    ] = None,
    interval: Annotated[float, typer.Option(help="Seconds between reads: the latency's resolution.")] = 0.5,
    metrics_file: Annotated[Path | None, typer.Option(help="Prometheus textfile of the result.")] = None,
    fmt: OutFormatOpt = OutFormat.console,
    json_out: JsonFlag = False,
    **opts: Any,
) -> None:
    """Write a synthetic canary aspect and time it end to end: the write, its MCL on Kafka, and
    the first read that shows it in search. The canary is one documented entity,
    urn:li:dataset:(urn:li:dataPlatform:auditor,canary,PROD) (its datasetProperties);
    `auditor probe --remove --apply` deletes it. See docs/watch.md.

    Writes through GMS (`POST /aspects?action=ingestProposal`) with --gms-url; with --via-store
    (no GMS, e.g. the sandbox) it writes the row and produces the MCL itself. Nothing is
    written without --apply.
    """

    def go() -> int:
        from auditor.errors import ConfigError

        if not apply:
            raise ConfigError(
                "the probe writes a canary entity: refused without --apply",
                hint="add --apply (the canary is removable: auditor probe --remove --apply)",
            )
        if bool(gms_url) == via_store:
            raise ConfigError("choose the write path: --gms-url URL (DataHub GMS) or --via-store (no GMS)")
        settings = settings_of(opts)
        from auditor.api import platform_of
        from auditor.platforms.base import Capability

        platform = platform_of(settings)
        platform.require(Capability.PROBE)  # (a platform from the config or env)
        topic = opts.get("topic")
        with platform.open_canary(settings, gms_url, gms_token, topic) as writer:
            if remove:
                writer.remove_canary()
                stdout_console().print("canary removed (its docs go when the consumer applies the delete)")
                return 0
            result = platform.probe(settings, writer, slo, timeout or 2 * slo, interval, topic)
        from auditor.reports.watch_console import probe_summary, render_probe
        from auditor.reports.watch_metrics import render_probe as probe_metrics

        if metrics_file:
            write(metrics_file, probe_metrics(result))
        if json_out or fmt == OutFormat.json:
            sys.stdout.write(json.dumps(probe_summary(result)) + "\n")
        else:
            render_probe(result, stdout_console())
        return 0 if result.within_slo else 1

    run(opts["debug"], go, json_errors=json_on_stdout(fmt, json_out))
