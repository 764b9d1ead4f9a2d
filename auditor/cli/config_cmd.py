"""`auditor config init`: writes the configuration a platform plans from its own server's
environment variables (each platform's `config_init` module tells where each is read)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from auditor.cli import app
from auditor.cli.common import DebugOpt, PlatformOpt, run
from auditor.cli.exits import exits
from auditor.errors import ConfigError
from auditor.exit_codes import ExitCode

config_app = typer.Typer(help="Write configuration files.", no_args_is_help=True)
app.add_typer(config_app, name="config")


def _check(text: str) -> None:
    """The file loads with the auditor's own loader (every key known), environment ignored."""
    from auditor.settings import load_settings

    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "auditor.toml"
        probe.write_text(text, encoding="utf-8")
        load_settings(probe, env={})


def _write(path: Path, text: str, force: bool) -> None:
    if path.is_dir():
        raise ConfigError(f"{path} is a directory: name the file to write with -o")
    if not path.parent.is_dir():
        raise ConfigError(f"cannot write {path}: {path.parent} does not exist")
    if not force:
        try:
            with open(path, "x", encoding="utf-8") as handle:
                handle.write(text)
        except FileExistsError:
            raise ConfigError(f"{path} exists: not overwritten", hint="pass --force to replace it") from None
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


@config_app.command("init")
@exits({ExitCode.OK: "written", ExitCode.USAGE: "the file exists, or a variable cannot be read"})
def config_init(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Write the configuration here ('-': stdout).")
    ] = Path("auditor.toml"),
    force: Annotated[bool, typer.Option("--force", help="Replace the file if it exists.")] = False,
    platform: PlatformOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Write a commented TOML configuration from DataHub's (or OpenMetadata's) environment variables.

    Reads what GMS / the upgrade job are given: EBEAN_DATASOURCE_URL (a JDBC URL, turned into a
    SQLAlchemy URL with its TLS parameters carried), EBEAN_DATASOURCE_USERNAME / _DRIVER,
    ELASTICSEARCH_HOST / _PORT / _USE_SSL / _USERNAME / _PATH_PREFIX, KAFKA_BOOTSTRAP_SERVER,
    KAFKA_SCHEMAREGISTRY_URL, INDEX_PREFIX, METADATA_CHANGE_LOG_{VERSIONED,TIMESERIES}_TOPIC_NAME,
    METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID and UPDATE_INDICES_CONSUMER_GROUP_SUFFIX. A variable
    not set falls back to the example configuration's value, and the file says so.

    Passwords are never written: the file names the variables read at run time
    (EBEAN_DATASOURCE_PASSWORD, ELASTICSEARCH_PASSWORD, ...). An existing file is kept unless
    --force.

    With --platform openmetadata: the server's DB_SCHEME, DB_HOST, DB_PORT, OM_DATABASE, DB_PARAMS
    (awsRegion there: RDS IAM), DB_USER, ELASTICSEARCH_SCHEME / _HOST / _PORT / _USER /
    _CLUSTER_ALIAS / _TRUST_STORE_PATH, SEARCH_TYPE, SEARCH_AWS_IAM_AUTH_ENABLED,
    SEARCH_AWS_SERVICE_NAME and AWS_DEFAULT_REGION (docs/openmetadata.md).

    \b
    Examples:
      auditor config init -o /etc/auditor/auditor.toml
      EBEAN_DATASOURCE_PASSWORD=... auditor scan --config /etc/auditor/auditor.toml
      auditor config init --platform openmetadata -o om.toml
    """

    def go() -> int:
        from auditor import platforms

        text, lines = platforms.get(platform).config_from_environment(os.environ)
        _check(text)
        to_stdout = str(output) == "-"
        if to_stdout:
            typer.echo(text, nl=False)
        else:
            _write(output, text, force)
        where = "stdout" if to_stdout else str(output.resolve())
        typer.echo(f"wrote {where}; {lines[0]}", err=True)
        for line in lines[1:]:
            typer.echo(line, err=True)
        return 0

    run(debug, go)
