"""What every command shares: options, settings, output, and the one place errors become exit codes."""

from __future__ import annotations

import contextlib
import os
import sys
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from auditor.errors import AuditorError, ConfigError
from auditor.exit_codes import ExitCode

if TYPE_CHECKING:
    from rich.console import Console


class _Stderr:
    """rich's Console on stderr, made when first used: a command that prints nothing there (a
    triage with --format json) never imports rich (~0.15 s of every start)."""

    _console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if _Stderr._console is None:
            from rich.console import Console

            # an error is one line, also in a log (the terminal wraps)
            _Stderr._console = Console(stderr=True, soft_wrap=True)
        return getattr(_Stderr._console, name)


err: Any = _Stderr()


class Format(StrEnum):
    console = "console"
    json = "json"
    markdown = "markdown"
    html = "html"


class OutFormat(StrEnum):
    """What a command that prints one result (not a report) writes: a table or JSON."""

    console = "console"
    json = "json"


OutFormatOpt = Annotated[
    OutFormat,
    typer.Option("--format", "-f", help="console (tables on a terminal) or json (--json: the same)."),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="The same as -f json.")]


def since_of(value: str | None) -> datetime | None:
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


def shard_of(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        i, n = (int(x) for x in value.split("/"))
    except ValueError:
        raise ConfigError(f"--shard {value!r}: use i/N, e.g. 0/4") from None
    if not 0 <= i < n:
        raise ConfigError(f"--shard {value!r}: need 0 <= i < N")
    return i, n


def shard_range(path: Path | None, shard: tuple[int, int] | None) -> tuple[str | None, str | None] | None:
    """Shard i's urn range [lo, hi) from a shard plan (`auditor scan --plan-shards N`)."""
    if path is None:
        return None
    from auditor.scan.shards import ShardPlan

    if shard is None:
        raise ConfigError("--shard-plan needs --shard i/N: which of the plan's shards to cover")
    plan = ShardPlan.load(path)
    i, n = shard
    if plan.shards != n:
        raise ConfigError(f"--shard {i}/{n}, but the plan {path} has {plan.shards} shards")
    return plan.urn_range(i)


def stdout_console() -> Console:
    """A terminal's own width; 140 columns when piped to a file or a log."""
    from rich.console import Console

    probe = Console()
    return probe if probe.is_terminal else Console(width=140, soft_wrap=True)


def write(path: Path | None, text: str) -> None:
    """`text` to stdout, or to `path` whole (a textfile collector never reads half a file). A
    path that cannot be written is an error that loses nothing: the text is kept in a temporary
    file, and the error says where (a scan's hour of work is not thrown away for a typo in -o)."""
    if path is None or str(path) == "-":
        sys.stdout.write(text)
        return
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        kept = _keep(text, path.suffix)
        raise ConfigError(
            f"cannot write {path}: {exc.strerror or exc}",
            hint=f"the output was kept in {kept}"
            if kept
            else "check that the directory exists and is writable",
        ) from None


def _keep(text: str, suffix: str) -> str | None:
    """`text` in a new file of the temporary directory (None: that failed too)."""
    import tempfile

    try:
        fd, name = tempfile.mkstemp(prefix="auditor-output-", suffix=suffix)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError:
        return None
    return name


def json_on_stdout(fmt: Any, json_out: bool = False, output: Path | None = None) -> bool:
    """Whether a command was asked for JSON on stdout (`-f json` or `--json`, no `-o`): what
    `run`'s `json_errors` takes, the same test for every command."""
    return (json_out or getattr(fmt, "value", fmt) == "json") and output is None


def run(debug: bool, fn: Any, json_errors: bool = False) -> None:
    """Run a command's body: its exit code, or an error said on stderr with its exit code.

    `json_errors`: the command was asked for JSON on stdout, so an error is said there too, as
    one JSON object (`error`, `hint`, `exit_code`): a scheduler parsing stdout gets an answer
    instead of nothing."""
    import logging

    logging.basicConfig(level=logging.DEBUG if debug else logging.CRITICAL, format="%(name)s: %(message)s")
    if not debug:  # librdkafka logs its fatal errors as CRITICAL: the one error line says them
        logging.getLogger("auditor.kafka").setLevel(logging.CRITICAL + 1)
    try:
        code = fn()
    except AuditorError as exc:
        from auditor.reports.escape import console_markup, visible

        if debug:  # the traceback, then the same exit code as without --debug
            import traceback

            for line in traceback.format_exc().splitlines():
                print(visible(line), file=sys.stderr)

        err.print(f"[red]error:[/] {console_markup(str(exc))}", highlight=False, emoji=False)
        if exc.hint:
            err.print(f"[dim]hint: {console_markup(exc.hint)}[/]", highlight=False, emoji=False)
        if json_errors:
            import json

            said = {"error": str(exc), "hint": exc.hint, "exit_code": int(exc.exit_code)}
            sys.stdout.write(json.dumps(said, ensure_ascii=False) + "\n")
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        err.print("[red]interrupted[/]")
        raise typer.Exit(ExitCode.INCOMPLETE) from None
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
IndexPrefixOpt = Annotated[
    str | None,
    typer.Option(
        "--index-prefix",
        envvar="INDEX_PREFIX",
        show_envvar=True,
        help="DataHub's INDEX_PREFIX: indices are <prefix>_<name> (a --from-report repair: the report's).",
    ),
]
TopicOpt = Annotated[
    str | None,
    typer.Option(
        "--topic",
        help="The versioned change-log topic [default: MetadataChangeLog_Versioned_v1; env "
        "METADATA_CHANGE_LOG_VERSIONED_TOPIC_NAME] (a --from-report repair: the report's).",
    ),
]
TimeseriesTopicOpt = Annotated[
    str | None,
    typer.Option(
        "--timeseries-topic",
        help="The timeseries change-log topic [default: MetadataChangeLog_Timeseries_v1; env "
        "METADATA_CHANGE_LOG_TIMESERIES_TOPIC_NAME].",
    ),
]
ConsumerGroupOpt = Annotated[
    str | None,
    typer.Option(
        "--consumer-group",
        "--mae-group",
        help="The MAE consumer's group [default: generic-mae-consumer-job-client; env "
        "METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID] (a --from-report repair: the report's).",
    ),
]
Stores = Annotated[
    list[str] | None,
    typer.Option(
        "--store",
        help="A federation: NAME=URL of one of several stores feeding one index (repeatable; "
        "env AUDITOR_STORES='a=URL b=URL'; see docs/federation.md).",
    ),
]
PlatformOpt = Annotated[
    str | None,
    typer.Option(
        "--platform",
        envvar="AUDITOR_PLATFORM",
        show_envvar=True,
        help="Whose tables and indices to audit: datahub (default), openmetadata, or any platform "
        "installed (`auditor platforms` lists them).",
    ),
]
PlatformVersionOpt = Annotated[
    str | None,
    typer.Option(
        "--platform-version",
        envvar="AUDITOR_PLATFORM_VERSION",
        show_envvar=True,
        help="The platform release that wrote the data (e.g. 1.4.0): judge documents by its index rules "
        "instead of the release found in the data (GMS's /config with AUDITOR_GMS_URL, DataHub's "
        "upgrade rows; docs/versions.md).",
    ),
]
TransportOpt = Annotated[
    str | None,
    typer.Option(
        "--transport",
        envvar="AUDITOR_TRANSPORT",
        show_envvar=True,
        help="Where DataHub's change log and consumer offsets are: kafka, or pgqueue (DataHub without "
        "Kafka: its PostgreSQL queue tables; DATAHUB_MESSAGING_TRANSPORT; docs/pgqueue.md).",
    ),
]
ClusterAliasOpt = Annotated[
    str | None,
    typer.Option(
        "--cluster-alias",
        envvar=["AUDITOR_CLUSTER_ALIAS", "ELASTICSEARCH_CLUSTER_ALIAS"],
        show_envvar=True,
        help="OpenMetadata's elasticsearch.clusterAlias: its indices are <alias>_<entity>_search_index.",
    ),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", envvar="AUDITOR_CONFIG", help="TOML file ([store] url=..., [search] ...)."),
]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks.")]

# The connection vocabulary: every command that reads or writes the indices takes these flags
# (tests/unit/test_cli_vocabulary.py runs each command's --help through this list).
CONNECTION_FLAGS = (
    "--config",
    "--store-url",
    "--search-url",
    "--index-prefix",
    "--kafka",
    "--schema-registry",
    "--topic",
    "--timeseries-topic",
    "--consumer-group",
)


def load(
    config: Path | None,
    store_url: str | None,
    search_url: str | None,
    kafka: str | None,
    schema_registry: str | None,
    index_prefix: str | None,
    **more: Any,
) -> Any:
    """The settings: flags > environment > the config file > defaults. The topics and the group
    come as `topic`, `timeseries_topic`, `group` (the flags' names)."""
    from auditor.settings import load_settings

    for flag, key in (
        ("topic", "mcl_versioned_topic"),
        ("timeseries_topic", "mcl_timeseries_topic"),
        ("group", "mae_consumer_group"),
    ):
        if flag in more:
            more[key] = more.pop(flag)
    return load_settings(
        config,
        store_url=store_url,
        search_url=search_url,
        kafka_bootstrap=kafka,
        schema_registry_url=schema_registry,
        index_prefix=index_prefix,
        **more,
    )


def emit(report: Any, fmt: Format, output: Path | None, metrics_file: Path | None) -> None:
    """Render a report in the format asked for (and the Prometheus textfile when asked)."""
    from auditor.reports import RENDERERS
    from auditor.reports import console as console_report

    if metrics_file:
        write(metrics_file, RENDERERS["prometheus"](report))
    if fmt == Format.console:
        if output:
            with open(output, "w", encoding="utf-8") as handle:
                console_report.render(report, Console(file=handle, width=160))
        else:
            console_report.render(report, stdout_console())
    else:
        write(output, RENDERERS[fmt.value](report))
