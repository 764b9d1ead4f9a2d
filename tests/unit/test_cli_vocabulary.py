"""One CLI vocabulary: every command that reads or writes the indices takes the same connection
flags (one list, CONNECTION_FLAGS), and a repair from a report takes the report's own scope."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from auditor.cli import app
from auditor.cli.common import CONNECTION_FLAGS
from auditor.cli.scope import report_scope, with_report_scope
from auditor.core.model import Report, Selection
from auditor.errors import ConfigError
from auditor.reports.json_report import render
from auditor.settings import load_settings

# every command that reads or writes the indices
COMMANDS = [
    ["scan"],
    ["triage"],
    ["rebuild", "plan"],
    ["rebuild", "replay"],
    ["rebuild", "reindex"],
    ["rebuild", "after-restore"],
    ["watch"],
    ["probe"],
]
VALUES = {
    "--config": "auditor.toml",
    "--store-url": "postgresql+psycopg://u@h/db",
    "--search-url": "http://os:9200",
    "--index-prefix": "hidden",
    "--kafka": "k:9092",
    "--schema-registry": "http://sr:8081",
    "--topic": "MCL_v1",
    "--timeseries-topic": "MCL_ts",
    "--consumer-group": "mae",
}


def leaf(path: list[str]) -> object:
    command = typer.main.get_command(app)
    ctx = command.context_class(command, info_name="auditor")
    for name in path:
        command = command.get_command(ctx, name)  # type: ignore[attr-defined]
        ctx = command.context_class(command, info_name=name, parent=ctx)  # type: ignore[attr-defined]
    return command, ctx


FEDERATION_COMMANDS = [
    ["scan"],
    ["triage"],
    ["rebuild", "plan"],
    ["rebuild", "replay"],
    ["rebuild", "reindex"],
]


@pytest.mark.parametrize("path", FEDERATION_COMMANDS, ids=" ".join)
def test_every_command_that_works_on_a_federation_takes_its_stores(path: list[str]) -> None:
    shown = CliRunner().invoke(app, [*path, "--help"], terminal_width=250, env={"COLUMNS": "250"})
    assert shown.exit_code == 0 and "--store " in shown.output and "NAME=URL" in shown.output, shown.output


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_command_that_touches_the_indices_takes_the_connection_flags(path: list[str]) -> None:
    shown = CliRunner().invoke(app, [*path, "--help"], terminal_width=250, env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    missing = [flag for flag in CONNECTION_FLAGS if flag not in shown.output]
    assert not missing, f"auditor {' '.join(path)} --help lacks {missing}"
    # and each parses with a value, as one list given to every command
    command, ctx = leaf(path)
    args = [token for flag in CONNECTION_FLAGS for token in (flag, VALUES[flag])]
    if path == ["triage"]:
        args.append("urn:li:corpuser:x")
    command.make_context(ctx.info_name, args, parent=ctx.parent)  # type: ignore[attr-defined]


def test_the_list_is_the_vocabulary_the_issue_names() -> None:
    assert set(VALUES) == set(CONNECTION_FLAGS)


def report_file(tmp: Path, prefix: str = "hidden", group: str = "mae-a", topic: str = "MCL_a") -> Path:
    report = Report(
        started_at=datetime.now(UTC),
        scope=Selection(),
        index_prefix=prefix,
        consumer_group=group,
        sources={"versioned_topic": topic, "timeseries_topic": "TS_a"},
    )
    path = tmp / "scan.json"
    path.write_text(render(report))
    return path


def test_a_reports_scope_is_the_default_of_its_repair(tmp_path: Path) -> None:
    data = json.loads(report_file(tmp_path).read_text())
    scope = report_scope(data)
    assert scope == {
        "index_prefix": "hidden",
        "mcl_versioned_topic": "MCL_a",
        "mcl_timeseries_topic": "TS_a",
        "mae_consumer_group": "mae-a",
    }
    settings = with_report_scope(load_settings(env={}), scope, Path("scan.json"))
    assert (settings.index_prefix, settings.mcl_versioned_topic, settings.mae_consumer_group) == (
        "hidden",
        "MCL_a",
        "mae-a",
    )
    same = load_settings(env={"INDEX_PREFIX": "hidden"}, mae_consumer_group="mae-a")
    assert with_report_scope(same, scope, Path("scan.json")).index_prefix == "hidden"  # agreeing: fine


@pytest.mark.parametrize(
    ("given", "flag", "values"),
    [
        ({"index_prefix": "other"}, "--index-prefix", ("'other'", "'hidden'")),
        ({"mcl_versioned_topic": "MCL_b"}, "--topic", ("'MCL_b'", "'MCL_a'")),
        ({"mae_consumer_group": "mae-b"}, "--consumer-group", ("'mae-b'", "'mae-a'")),
    ],
)
def test_a_scope_given_otherwise_is_an_error_naming_both(
    tmp_path: Path, given: dict[str, str], flag: str, values: tuple[str, str]
) -> None:
    scope = report_scope(json.loads(report_file(tmp_path).read_text()))
    with pytest.raises(ConfigError) as caught:
        with_report_scope(load_settings(env={}, **given), scope, Path("scan.json"))
    text = str(caught.value)
    assert flag in text and all(v in text for v in values), text


def test_the_cli_refuses_a_repair_of_another_index_than_the_reports(tmp_path: Path) -> None:
    path = report_file(tmp_path)
    for mode in ("plan", "replay", "reindex"):
        done = CliRunner().invoke(
            app,
            [
                "rebuild",
                mode,
                "--from-report",
                str(path),
                "--index-prefix",
                "other",
                "--store-url",
                "postgresql+psycopg://u@127.0.0.1:1/none",
            ],  # fmt: skip
            env={"AUDITOR_STATE_FILE": str(tmp_path / "s.sqlite")},
        )
        assert done.exit_code == 2, done.output
        assert "'other'" in done.output and "'hidden'" in done.output, done.output


def test_an_openmetadata_report_sets_no_datahub_scope() -> None:
    assert report_scope({"sources": {"platform": "openmetadata"}, "scope": {"index_prefix": "prod"}}) == {}


def test_the_transport_is_a_flag_too() -> None:
    """pgQueue without an environment variable: `--transport pgqueue` (a wrong one is exit 2)."""
    from auditor.cli.options import settings_of

    assert settings_of({"transport": "pgqueue"}).transport == "pgqueue"
    assert settings_of({}).transport == "kafka"
    done = CliRunner().invoke(
        app, ["scan", "--transport", "carrier-pigeon", "--no-state"], env={"AUDITOR_CONFIG": ""}
    )
    assert done.exit_code == 2 and "transport" in done.output, done.output
