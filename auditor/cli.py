"""The `auditor` command line: a thin typer layer over auditor.api; the only place that exits."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from auditor import __version__
from auditor.errors import AuditorError, ConfigError

EXIT_CODES = """Exit codes: 0 no persistent divergence (in-flight findings allowed); 1 persistent
divergence (or unreadable rows) found; 2 usage or configuration error; 3 could not complete (a
backend down or failing); 4 the MAE consumer is stalled (findings wait on it, none diverged)."""

app = typer.Typer(
    help="Keeps DataHub honest: audits the search indices and the MAE consumer against the "
    "aspect table (metadata_aspect_v2) and tells propagation delay from persistent divergence.\n\n"
    + EXIT_CODES,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
report_app = typer.Typer(help="Work with saved JSON reports.", no_args_is_help=True)
app.add_typer(report_app, name="report")

err = Console(stderr=True)


class Format(StrEnum):
    console = "console"
    json = "json"
    markdown = "markdown"


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


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if value[-1:] in units and value[:-1].isdigit():
        return datetime.now(UTC) - timedelta(seconds=int(value[:-1]) * units[value[-1]])
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"--since {value!r}: use an ISO time or a duration like 30m, 6h, 2d") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _shard(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        i, n = (int(x) for x in value.split("/"))
    except ValueError:
        raise ConfigError(f"--shard {value!r}: use i/N, e.g. 0/4") from None
    if not 0 <= i < n:
        raise ConfigError(f"--shard {value!r}: need 0 <= i < N")
    return i, n


def _stdout_console() -> Console:
    """A terminal's own width; 140 columns when piped to a file or a log."""
    probe = Console()
    return probe if probe.is_terminal else Console(width=140, soft_wrap=True)


def _write(path: Path | None, text: str) -> None:
    if path is None or str(path) == "-":
        sys.stdout.write(text)
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # a textfile collector never reads half a file


def _run(debug: bool, fn: Any) -> None:
    import logging

    logging.basicConfig(level=logging.DEBUG if debug else logging.CRITICAL, format="%(name)s: %(message)s")
    try:
        code = fn()
    except AuditorError as exc:
        if debug:
            raise
        from auditor.reports.escape import console_markup

        err.print(f"[red]error:[/] {console_markup(str(exc))}", highlight=False, emoji=False)
        if exc.hint:
            err.print(f"[dim]hint: {console_markup(exc.hint)}[/]", highlight=False, emoji=False)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        err.print("[red]interrupted[/]")
        raise typer.Exit(3) from None
    raise typer.Exit(code)


StoreUrl = Annotated[
    str | None,
    typer.Option(
        "--store-url",
        envvar="AUDITOR_STORE_URL",
        show_envvar=True,
        help="SQLAlchemy URL of the aspect table's database, e.g. "
        "mysql+pymysql://user:pw@host:3306/datahub or postgresql+psycopg://user:pw@host/datahub.",
    ),
]
SearchUrl = Annotated[
    str | None,
    typer.Option(
        "--search-url",
        envvar="AUDITOR_SEARCH_URL",
        show_envvar=True,
        help="OpenSearch or Elasticsearch URL (kind auto-detected).",
    ),
]
KafkaOpt = Annotated[
    str | None,
    typer.Option(
        "--kafka",
        envvar=["AUDITOR_KAFKA_BOOTSTRAP", "KAFKA_BOOTSTRAP_SERVER"],
        show_envvar=True,
        help="Kafka bootstrap servers (omit: weaker verdicts).",
    ),
]
RegistryOpt = Annotated[
    str | None,
    typer.Option(
        "--schema-registry",
        envvar=["AUDITOR_SCHEMA_REGISTRY_URL", "KAFKA_SCHEMAREGISTRY_URL"],
        show_envvar=True,
        help="Schema registry URL (lets the scan read MCL contents).",
    ),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", envvar="AUDITOR_CONFIG", help="TOML file ([store] url=..., [search] ...)."),
]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks.")]


@app.command()
def scan(
    store_url: StoreUrl = None,
    search_url: SearchUrl = None,
    kafka: KafkaOpt = None,
    schema_registry: RegistryOpt = None,
    config: ConfigOpt = None,
    entity_type: Annotated[
        list[str] | None, typer.Option("--entity-type", "-t", help="Only these entity types (repeatable).")
    ] = None,
    urn_like: Annotated[
        str | None, typer.Option(help="SQL LIKE pattern on the urn, e.g. 'urn:li:dataset:%hive%'.")
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Only entities changed since (ISO time, or 30m / 6h / 2d).")
    ] = None,
    index_prefix: Annotated[
        str | None, typer.Option(envvar="INDEX_PREFIX", help="DataHub's INDEX_PREFIX.")
    ] = None,
    shard: Annotated[
        str | None, typer.Option(help="Scan shard i of N (i/N); merge with `auditor report merge`.")
    ] = None,
    grace: Annotated[
        float | None,
        typer.Option(help="Seconds a fresh change may take to show up without Kafka evidence [default 300]."),
    ] = None,
    settle: Annotated[
        float, typer.Option(help="Seconds between a row write and its MCL being produced.")
    ] = 10.0,
    sample_window: Annotated[
        float | None, typer.Option(help="Minimum seconds between the two offset samples [default 10].")
    ] = None,
    confirm: Annotated[
        float, typer.Option(help="Wait this many seconds, then re-check in-flight findings.")
    ] = 0.0,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.console,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the report here (default stdout).")
    ] = None,
    metrics_file: Annotated[Path | None, typer.Option(help="Also write a Prometheus textfile here.")] = None,
    state_file: Annotated[str | None, typer.Option(help="SQLite file kept across scans.")] = None,
    no_state: Annotated[
        bool, typer.Option("--no-state", help="Neither read nor write the state file.")
    ] = False,
    max_findings: Annotated[int, typer.Option(help="Findings kept in detail (all are counted).")] = 10_000,
    debug: DebugOpt = False,
) -> None:
    """Compare the aspect table with the search indices and the MAE consumer; judge every difference.

    Read-only: a scan never writes to the database, the indices or Kafka. Each finding gets one
    verdict: in_flight (will converge; ETA given), stalled (waits on a consumer that does not
    move), diverged (will not converge; subkind says why, the report says what to run) or
    invalid (a row that cannot be read).

    Exit codes: 0 no persistent divergence (in-flight allowed); 1 persistent divergence or
    unreadable rows; 2 usage or configuration error; 3 could not complete; 4 the MAE consumer
    is stalled.

    \b
    Examples:
      auditor scan --store-url 'mysql+pymysql://datahub:PW@mysql/datahub' \\
          --search-url http://opensearch:9200 --kafka broker:9092 \\
          --schema-registry http://schema-registry:8081 -f markdown -o drift.md
      auditor scan -t dataset --since 6h --confirm 60       # a slice, re-checking delays
      auditor scan --shard 0/4 -f json -o s0.json           # then: auditor report merge s*.json
    """

    def go() -> int:
        from auditor.api import ScanOptions
        from auditor.api import scan as run_scan
        from auditor.core.model import Selection
        from auditor.reports import RENDERERS
        from auditor.reports import console as console_report
        from auditor.settings import load_settings

        settings = load_settings(
            config,
            store_url=store_url,
            search_url=search_url,
            kafka_bootstrap=kafka,
            schema_registry_url=schema_registry,
            index_prefix=index_prefix,
            state_file=state_file,
        )
        selection = Selection(
            entity_types=tuple(entity_type or ()),
            urn_like=urn_like,
            since=_since(since),
            shard=_shard(shard),
        )
        if selection.shard and not state_file and not no_state:
            i, n = selection.shard
            settings = settings.model_copy(update={"state_file": f"{settings.state_file}.shard{i}of{n}"})
        options = ScanOptions(
            grace=grace,
            settle=settle,
            sample_window=sample_window,
            confirm=confirm,
            max_findings=max_findings,
            use_state=not no_state,
        )
        tty = err.is_terminal
        if tty:
            from rich.progress import (
                BarColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            with Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.completed:,} entities"),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            ) as bar:
                task = bar.add_task("scanning", total=None)
                report = run_scan(
                    settings,
                    selection,
                    options,
                    progress=lambda n: bar.update(task, completed=n),
                    log=lambda msg: bar.update(task, description=msg),
                )
        else:
            report = run_scan(settings, selection, options)
        if metrics_file:
            _write(metrics_file, RENDERERS["prometheus"](report))
        if fmt == Format.console:
            if output:
                with open(output, "w", encoding="utf-8") as handle:
                    console_report.render(report, Console(file=handle, width=160))
            else:
                console_report.render(report, _stdout_console())
        else:
            _write(output, RENDERERS[fmt.value](report))
        return report.exit_code

    _run(debug, go)


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
        from auditor.reports import RENDERERS
        from auditor.reports import console as console_report
        from auditor.reports.merge import from_dict, merge

        parts = []
        for path in reports:
            try:
                parts.append(from_dict(json.loads(path.read_text(encoding="utf-8"))))
            except (OSError, ValueError, KeyError) as exc:
                raise ConfigError(f"cannot read report {path}: {exc}") from None
        merged = merge(parts)
        if metrics_file:
            _write(metrics_file, RENDERERS["prometheus"](merged))
        if fmt == Format.console:
            console_report.render(merged, _stdout_console())
        else:
            _write(output, RENDERERS[fmt.value](merged))
        return merged.exit_code

    _run(debug, go)


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
        from auditor.reports.commands import finding_commands
        from auditor.reports.escape import console_markup, console_text, shell_line
        from auditor.settings import load_settings

        settings = load_settings(
            config,
            store_url=store_url,
            search_url=search_url,
            kafka_bootstrap=kafka,
            schema_registry_url=schema_registry,
            index_prefix=index_prefix,
        )
        result = run_triage(settings, urn)
        console = _stdout_console()
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
            commands = finding_commands(c, group=settings.mae_consumer_group)
            if commands:
                repair = console_text(shell_line(commands[0]))
                console.print(f"  to repair: {repair}", markup=False, highlight=False, emoji=False)
                break
        return 1

    _run(debug, go)


@app.command()
def registry(
    entity_type: Annotated[
        str | None, typer.Argument(help="Show this entity's aspects and searchable fields.")
    ] = None,
) -> None:
    """List the entity types, aspects and search indices DataHub's own schemas define."""

    def go() -> int:
        from rich.table import Table

        from auditor.core.naming import entity_index
        from auditor.core.registry import Registry

        reg = Registry.load()
        console = Console()
        if entity_type is None:
            table = Table("entity type", "key aspect", "aspects", "index")
            for spec in sorted(reg.entities(), key=lambda e: e.name):
                table.add_row(spec.name, spec.key_aspect, str(len(spec.aspects)), entity_index(spec.name))
            console.print(table)
            return 0
        if not reg.has_entity(entity_type):
            raise ConfigError(f"unknown entity type {entity_type!r}")
        table = Table("aspect", "timeseries", "searchable fields")
        for aspect in reg.entity_aspects(entity_type):
            fields = ", ".join(s.field_name for s in aspect.searchable)
            table.add_row(aspect.name, "yes" if aspect.timeseries else "", fields)
        console.print(table)
        return 0

    _run(False, go)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
