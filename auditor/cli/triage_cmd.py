"""`auditor triage URN`: one entity's boundaries, row to index, and the first that breaks."""

from __future__ import annotations

from typing import Annotated

import typer

from auditor.cli import app
from auditor.cli.common import (
    ConfigOpt,
    DebugOpt,
    KafkaOpt,
    RegistryOpt,
    SearchUrl,
    StoreUrl,
    load,
    run,
    stdout_console,
)


@app.command()
def triage(
    urn: Annotated[
        str,
        typer.Argument(help="The urn to trace, e.g. 'urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)'."),
    ],
    store_url: StoreUrl = None,
    search_url: SearchUrl = None,
    kafka: KafkaOpt = None,
    schema_registry: RegistryOpt = None,
    config: ConfigOpt = None,
    index_prefix: Annotated[
        str | None, typer.Option(envvar="INDEX_PREFIX", help="DataHub's INDEX_PREFIX.")
    ] = None,
    debug: DebugOpt = False,
) -> None:
    """ "I can't find my dataset": walk one entity from its rows to its search doc.

    Checks, in order: the version-0 rows, its MCLs on the urn's partition, the MAE group's
    position, the entity document, its searchable fields, system metadata and edges; prints
    the first boundary where the expected state is missing. Read-only. Exit code 0 if every
    boundary holds, 1 if one breaks.
    """

    def go() -> int:
        from auditor.api import triage as run_triage
        from auditor.reports.commands import finding_commands, finding_rebuild
        from auditor.reports.escape import console_markup, console_text, shell_line

        settings = load(config, store_url, search_url, kafka, schema_registry, index_prefix)
        result = run_triage(settings, urn)
        console = stdout_console()
        console.print(f"[bold]{console_markup(urn)}[/]", highlight=False, emoji=False)
        for step in result.steps:
            mark = {True: "[green]ok[/]  ", False: "[red]BROKEN[/]", None: "[dim]--[/]  "}[step.ok]
            console.print(f"  {mark} {console_markup(step.name)}: ", end="", highlight=False, emoji=False)
            console.print(console_text(step.detail), markup=False, highlight=False, emoji=False)
        broken = result.first_break
        if broken is None:
            console.print("[green]every boundary holds[/]")
            return 0
        console.print(
            f"[red bold]first break: {console_markup(broken.name)}[/]", highlight=False, emoji=False
        )
        for c in result.findings:
            commands = [finding_rebuild(c)] + finding_commands(c, group=settings.mae_consumer_group)
            shown = [console_text(shell_line(command)) for command in commands if command]
            for label, command in zip(("to repair:", "or:"), shown, strict=False):
                console.print(f"  {label} {command}", markup=False, highlight=False, emoji=False)
            if shown:
                break
        return 1

    run(debug, go)
