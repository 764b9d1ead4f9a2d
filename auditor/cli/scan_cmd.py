"""`auditor scan`: the drift scan, with a progress bar on a terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from auditor.cli import app
from auditor.cli.common import (
    ClusterAliasOpt,
    DebugOpt,
    Format,
    PlatformOpt,
    emit,
    err,
    json_on_stdout,
    run,
    shard_of,
    since_of,
)
from auditor.cli.exits import SCAN, exits
from auditor.cli.options import CONNECTION, settings_of, with_options

__all__ = ["ClusterAliasOpt", "PlatformOpt", "scan"]  # the OpenMetadata options, as B's modules import them


@app.command()
@exits(SCAN)
@with_options(CONNECTION)
def scan(
    entity_type: Annotated[
        list[str] | None, typer.Option("--entity-type", "-t", help="Only these entity types (repeatable).")
    ] = None,
    urn_like: Annotated[
        str | None, typer.Option(help="SQL LIKE pattern on the urn, e.g. 'urn:li:dataset:%hive%'.")
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Only entities changed since (ISO time, or 30m / 6h / 2d).")
    ] = None,
    shard: Annotated[
        str | None, typer.Option(help="Scan shard i of N (i/N); merge with `auditor report merge`.")
    ] = None,
    shard_plan: Annotated[
        Path | None,
        typer.Option(
            envvar="AUDITOR_SHARD_PLAN",
            help="With --shard: read only shard i's urn range from this plan (database and indices).",
        ),
    ] = None,
    plan_shards: Annotated[
        int | None,
        typer.Option(help="Write a plan of N urn ranges of about equal rows (to -o), and scan nothing."),
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
    findings_out: Annotated[
        Path | None,
        typer.Option(
            help="Also write every finding here as JSON Lines (a name ending .gz: compressed), not only "
            "the worst --max-findings: `rebuild --from-report` reads it as a stream (docs/report.md)."
        ),
    ] = None,
    debug: DebugOpt = False,
    **opts: Any,
) -> None:
    """Compare the aspect table with the search indices and the MAE consumer; judge every difference.

    Read-only: a scan never writes to the database, the indices or Kafka. Each finding gets one
    verdict: in_flight (will converge; ETA given), stalled (waits on a consumer that does not
    move), diverged (will not converge; subkind says why, the report says what to run),
    invalid (a row that cannot be read) or outdated (written by an older release of the
    platform, judged by the release the data names: --platform-version, docs/versions.md).

    \b
    Examples:
      auditor scan --store-url 'mysql+pymysql://datahub:PW@mysql/datahub' \\
          --search-url http://opensearch:9200 --kafka broker:9092 \\
          --schema-registry http://schema-registry:8081 -f markdown -o drift.md
      auditor scan -t dataset --since 6h --confirm 60       # a slice, re-checking delays
      auditor scan --shard 0/4 -f json -o s0.json           # then: auditor report merge s*.json
      auditor scan --plan-shards 4 -o shards.json           # once; then in each job i:
      auditor scan --shard 0/4 --shard-plan shards.json -f json -o s0.json
      auditor scan --platform openmetadata --cluster-alias prod \\
          --store-url 'postgresql+psycopg://om:PW@pg/openmetadata_db' --search-url http://os:9200

    Without a plan, shard i is the urns whose crc32 is i modulo N: every job reads the whole
    table and every index. With one, each job reads only its urn range.
    """

    def go() -> int:
        from auditor.api import ScanOptions
        from auditor.core.model import Selection

        settings = settings_of(opts, state_file=state_file)
        if plan_shards is not None:
            return _plan_shards(settings, plan_shards, tuple(entity_type or ()), output)
        shard_i_n = shard_of(shard)
        selection = Selection(
            entity_types=tuple(entity_type or ()),
            urn_like=urn_like,
            since=since_of(since),
            shard=shard_i_n,
            urn_range=_range_of(shard_plan, shard_i_n),
        )
        if selection.shard and not state_file and not no_state:
            i, n = selection.shard  # each shard job keeps its own history
            settings = settings.model_copy(update={"state_file": f"{settings.state_file}.shard{i}of{n}"})
        options = ScanOptions(
            grace=grace,
            settle=settle,
            sample_window=sample_window,
            confirm=confirm,
            max_findings=max_findings,
            use_state=not no_state,
            findings_out=_jsonl(findings_out),
        )
        report = _scan(settings, selection, options)
        emit(report, fmt, output, metrics_file)
        return report.exit_code

    run(debug, go, json_errors=json_on_stdout(fmt, output=output))


def _jsonl(path: Path | None) -> Any:
    """Every finding as JSON Lines at `path` (None: only the report's)."""
    if path is None:
        return None
    from functools import partial

    from auditor.reports.jsonl import FindingsWriter

    return partial(FindingsWriter, path)


def _range_of(path: Path | None, shard: tuple[int, int] | None) -> tuple[str | None, str | None] | None:
    if path is None:
        return None
    from auditor.errors import ConfigError
    from auditor.scan.shards import ShardPlan

    if shard is None:
        raise ConfigError("--shard-plan needs --shard i/N: which of the plan's shards to scan")
    plan = ShardPlan.load(path)
    i, n = shard
    if plan.shards != n:
        raise ConfigError(f"--shard {i}/{n}, but the plan {path} has {plan.shards} shards")
    return plan.urn_range(i)


def _plan_shards(settings: Any, n: int, entity_types: tuple[str, ...], output: Path | None) -> int:
    from auditor.api import plan_shards

    plan = plan_shards(settings, n, entity_types)
    text = plan.to_json()
    if output is None:
        print(text, end="")
    else:
        output.write_text(text, encoding="utf-8")
    spread = max(plan.rows) / max(1, min(plan.rows))
    err.print(
        f"{n} shards of {sum(plan.rows):,} rows, {sum(plan.entities):,} entities: "
        f"{min(plan.rows):,} to {max(plan.rows):,} rows a shard (largest/smallest {spread:.2f})"
        + (f"; written to {output}" if output else ""),
        highlight=False,
        markup=False,
    )
    return 0


def _scan(settings: Any, selection: Any, options: Any) -> Any:
    """The scan, with a progress bar on stderr when it is a terminal."""
    from auditor.api import scan as run_scan

    if not err.is_terminal:
        return run_scan(settings, selection, options)
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn())
    counter = (TextColumn("{task.completed:,} entities"), TimeElapsedColumn())
    with Progress(*columns, *counter, console=err, transient=True) as bar:
        task = bar.add_task("scanning", total=None)
        return run_scan(
            settings,
            selection,
            options,
            progress=lambda n: bar.update(task, completed=n),
            log=lambda msg: bar.update(task, description=msg),
        )
