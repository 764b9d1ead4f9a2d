"""`auditor drill compare SOURCE TARGET`: a restore drill between two environments, with evidence."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from auditor.cli import app
from auditor.cli.common import DebugOpt, Format, err, json_on_stdout, run, stdout_console, write
from auditor.cli.exits import exits
from auditor.exit_codes import ExitCode

CODES = {
    ExitCode.OK: "PASS",
    ExitCode.PERSISTENT: "FAIL (differences past the thresholds)",
    ExitCode.USAGE: None,
    ExitCode.INCOMPLETE: "could not complete (a server unreachable or lost mid-run: named, and "
    "the bundle's RESULT says INCOMPLETE)",
}

drill_app = typer.Typer(
    help="Restore drills: compare two environments after a restore test (read-only on both).",
    no_args_is_help=True,
)
app.add_typer(drill_app, name="drill")


def _side(
    role: str,
    value: str,
    search: str | None,
    kafka: str | None,
    prefix: str | None,
    platform: str | None = None,
) -> Any:
    """A side from a TOML file (`auditor scan --config`'s format) or a store URL; the process's
    environment is not read (it would apply the same AUDITOR_* values to both sides)."""
    from auditor.errors import ConfigError
    from auditor.settings import load_settings

    flags: dict[str, Any] = {
        "search_url": search,
        "kafka_bootstrap": kafka,
        "index_prefix": prefix,
        "platform": platform,
    }
    flags = {k: v for k, v in flags.items() if v is not None}
    if "://" in value:
        return load_settings(None, env={}, store_url=value, **flags)
    if not Path(value).is_file():
        raise ConfigError(
            f"{role}: {value!r} is neither a store URL nor a configuration file",
            hint="pass a TOML file as `auditor scan --config` reads, or a URL like postgresql+psycopg://u:pw@host/db",
        )
    return load_settings(value, env={}, **flags)


def _limits(values: list[str]) -> dict[str, int]:
    from auditor.errors import ConfigError

    out = {}
    for value in values:
        kind, sep, limit = value.partition("=")
        if not sep or not limit.isdigit():
            raise ConfigError(f"--max-delta {value!r}: use KIND=N, e.g. documents=10")
        out[kind.strip()] = int(limit)
    return out


@drill_app.command()
@exits(CODES)
def compare(
    source: Annotated[
        str, typer.Argument(help="The environment restored from: a TOML config file or a store URL.")
    ],
    target: Annotated[
        str, typer.Argument(help="The restored environment: a TOML config file or a store URL.")
    ],
    source_search: Annotated[
        str | None, typer.Option(help="The source's search cluster URL (overrides its file).")
    ] = None,
    target_search: Annotated[
        str | None, typer.Option(help="The target's search cluster URL (overrides its file).")
    ] = None,
    source_kafka: Annotated[
        str | None, typer.Option(help="The source's Kafka bootstrap servers (versions only).")
    ] = None,
    target_kafka: Annotated[
        str | None, typer.Option(help="The target's Kafka bootstrap servers (versions only).")
    ] = None,
    source_prefix: Annotated[str | None, typer.Option(help="The source's INDEX_PREFIX.")] = None,
    target_prefix: Annotated[str | None, typer.Option(help="The target's INDEX_PREFIX.")] = None,
    max_row_diffs: Annotated[int, typer.Option(min=0, help="Row differences accepted per table.")] = 0,
    max_count_delta: Annotated[int, typer.Option(min=0, help="|target - source| accepted per count.")] = 0,
    max_delta: Annotated[
        list[str] | None,
        typer.Option(
            help="Per kind of count, KIND=N (kinds: rows, entities, aspects, lineage, documents, "
            "edges); repeatable."
        ),
    ] = None,
    bundle: Annotated[
        Path | None,
        typer.Option(
            help="Write the evidence bundle here: log.txt, versions.json, differences.json, summary.md, "
            "result.json, RESULT."
        ),
    ] = None,
    fmt: Annotated[
        Format, typer.Option("--format", "-f", help="console, json or markdown.")
    ] = Format.console,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the report here (default stdout).")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, max=16, help="Queries at once per database.")] = 2,
    segment_rows: Annotated[
        int, typer.Option(min=100, help="Rows per first-level checksum segment (sampled boundaries).")
    ] = 16_384,
    threshold: Annotated[
        int,
        typer.Option(
            min=1,
            help="A differing bucket (1/32 of a segment, by MD5 of the urn) of at most this many rows "
            "is diffed row by row (its keys and row hashes fetched); a bigger one has its segment "
            "cut into 32 ranges, checksummed again.",
        ),
    ] = 2_048,
    table: Annotated[
        list[str] | None,
        typer.Option(
            help="Table of the platform's to compare (repeatable; default: all of them): DataHub's "
            "metadata_aspect_v2; with --platform openmetadata an entity table such as table_entity, "
            "or openmetadata for all of them (across engines their JSON is compared by value, "
            "outside the databases)."
        ),
    ] = None,
    platform: Annotated[
        str | None,
        typer.Option(
            help="Whose tables --table names and whose search counts are made: datahub (default), "
            "openmetadata or any platform installed (`auditor platforms`; both sides' files may name "
            "it instead)."
        ),
    ] = None,
    no_counts: Annotated[
        bool, typer.Option("--no-counts", help="Skip the entity, aspect and lineage counts.")
    ] = False,
    debug: DebugOpt = False,
) -> None:
    """Compare two environments after a restore test: every row of metadata_aspect_v2 (bisecting
    checksums computed inside each database, PostgreSQL and MySQL/MariaDB alike, then the rows
    that differ, column by column), entities per type, aspects per name, lineage edges, and with
    search URLs the documents per index and the graph's edges per relationshipType.

    PASS when every table's row differences and every count's |delta| are within the thresholds.
    """

    def go() -> int:
        from auditor.core.drill import Thresholds
        from auditor.drill.bisect import BisectOptions
        from auditor.drill.run import Drill, DrillOptions, drill_platform
        from auditor.drill.tables import table_specs
        from auditor.errors import AuditorError
        from auditor.reports import drill_report
        from auditor.reports.escape import console_markup

        sides = (
            _side("source", source, source_search, source_kafka, source_prefix, platform),
            _side("target", target, target_search, target_kafka, target_prefix, platform),
        )
        options = DrillOptions(
            tables=table_specs(table or [], drill_platform(*sides)),
            thresholds=Thresholds(max_row_diffs, max_count_delta, _limits(max_delta or [])),
            bisect=BisectOptions(segment_rows=segment_rows, threshold=threshold),
            workers=workers,
            counts=not no_counts,
        )

        def echo(line: str) -> None:  # progress on stderr on a terminal run; data escaped
            if fmt is Format.console:
                err.print(f"[dim]{console_markup(line)}[/]", highlight=False)

        drill = Drill(*sides, options, echo=echo)
        try:
            result = drill.run()
        except AuditorError:
            if bundle is not None:
                _write_bundle(bundle, drill_report.bundle_files(drill.result) | {"RESULT": "INCOMPLETE\n"})
            raise
        if bundle is not None:
            _write_bundle(bundle, drill_report.bundle_files(result))
        if fmt is Format.json:
            write(output, drill_report.render_json(result))
        elif fmt is Format.markdown:
            write(output, drill_report.render_markdown(result))
        else:
            drill_report.render_console(result, stdout_console())
        return 0 if result.passed else 1

    run(debug, go, json_errors=json_on_stdout(fmt, output=output))


def _write_bundle(directory: Path, files: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        tmp = directory / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, directory / name)
