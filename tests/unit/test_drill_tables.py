"""A drill's tables are namespaced by platform: `--table` chooses among the active platform's
(`--platform`), a fork's table of the same name never overrides DataHub's, and a platform that
names a table twice is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor import platforms
from auditor.drill.run import drill_platform
from auditor.drill.spec import Column, TableSpec
from auditor.drill.tables import platform_tables, table_specs
from auditor.errors import ConfigError
from auditor.platforms.datahub.platform import DataHub
from auditor.settings import load_settings

# a fork of DataHub that keeps its aspects in a table of the same name, with another key
FORKED = TableSpec("metadata_aspect_v2", ("id",), (Column("id"), Column("metadata")))
EXTRA = TableSpec("fork_extra", ("id",), (Column("id"),))
PG = "postgresql+psycopg://u@h/db"


class Fork(DataHub):
    name = "fork"
    title = "Fork"
    tables: tuple[TableSpec, ...] = (FORKED, EXTRA)

    def drill_tables(self) -> tuple[TableSpec, ...]:
        return self.tables


@pytest.fixture
def fork() -> Iterator[Fork]:
    made = Fork()
    platforms.register("fork", lambda: made)
    try:
        yield made
    finally:
        platforms.unregister("fork")


def _names(specs: tuple[TableSpec, ...]) -> list[str]:
    return [t.name for t in specs]


def test_each_platform_selects_among_its_own_tables() -> None:
    assert _names(table_specs([])) == ["metadata_aspect_v2"]  # DataHub, the default
    assert table_specs(["metadata_aspect_v2"], "datahub") == table_specs([])
    om = platform_tables("openmetadata")
    assert "table_entity" in om and "metadata_aspect_v2" not in om
    every = table_specs([], "openmetadata")
    assert _names(every) == sorted(om) and table_specs(["openmetadata"], "openmetadata") == every
    assert _names(table_specs(["table_entity", "tag", "table_entity"], "openmetadata")) == [
        "table_entity",
        "tag",
    ]


@pytest.mark.parametrize(
    ("names", "platform", "hint"),
    [
        (["table_entity"], None, "table_entity is a table of OpenMetadata's: add --platform openmetadata"),
        (["openmetadata"], "datahub", "add --platform openmetadata for OpenMetadata's tables"),
        (["metadata_aspect_v2"], "openmetadata", "a table of DataHub's: add --platform datahub"),
        (["nope"], "openmetadata", "openmetadata for every table of it, or one of: chart_entity"),
    ],
)
def test_another_platform_s_table_is_refused_naming_its_platform(
    names: list[str], platform: str | None, hint: str
) -> None:
    with pytest.raises(ConfigError, match=f"--table '{names[0]}': not one of") as refused:
        table_specs(names, platform)
    assert hint in (refused.value.hint or "")


def test_a_fork_s_table_of_the_same_name_never_overrides_datahub_s(fork: Fork) -> None:
    (datahub,) = table_specs(["metadata_aspect_v2"])
    assert datahub is not FORKED and datahub.key == ("urn", "aspect", "version")
    assert table_specs(["metadata_aspect_v2"], "fork") == (FORKED,)
    assert table_specs([], "fork") == (EXTRA, FORKED)  # every table of it, by name
    with pytest.raises(ConfigError, match="not one of DataHub's tables") as refused:
        table_specs(["fork_extra"])
    assert refused.value.hint == "fork_extra is a table of Fork's: add --platform fork"


def test_a_name_given_twice_by_one_platform_is_refused(fork: Fork) -> None:
    fork.tables = (FORKED, EXTRA, TableSpec("fork_extra", ("k",), (Column("k"),)))
    with pytest.raises(ConfigError, match="Fork gives the drill table 'fork_extra' twice"):
        table_specs(["metadata_aspect_v2"], "fork")
    assert _names(table_specs(["metadata_aspect_v2"])) == ["metadata_aspect_v2"]  # DataHub's unharmed


def test_both_sides_are_one_platform(tmp_path: Path) -> None:
    om = tmp_path / "om.toml"
    om.write_text(f'platform = "openmetadata"\n[store]\nurl = "{PG}"\n')
    datahub = load_settings(None, env={}, store_url=PG)
    assert drill_platform(datahub, datahub) == "datahub"
    assert drill_platform(load_settings(str(om), env={}), load_settings(str(om), env={})) == "openmetadata"
    with pytest.raises(ConfigError, match="the source is openmetadata and the target datahub"):
        drill_platform(load_settings(str(om), env={}), datahub)


def test_the_command_scopes_table_to_platform_before_connecting(tmp_path: Path) -> None:
    from auditor.cli import app
    from auditor.cli.drill_cmd import _side

    assert _side("source", PG, None, None, None, "openmetadata").platform == "openmetadata"
    runner = CliRunner()
    done = runner.invoke(app, ["drill", "compare", PG, PG, "--table", "table_entity"])
    assert done.exit_code == 2 and "add --platform openmetadata" in done.output, done.output
    done = runner.invoke(
        app, ["drill", "compare", PG, PG, "--platform", "openmetadata", "--table", "metadata_aspect_v2"]
    )
    assert done.exit_code == 2 and "not one of OpenMetadata's tables" in done.output, done.output
    om = tmp_path / "om.toml"
    om.write_text(f'platform = "openmetadata"\n[store]\nurl = "{PG}"\n')
    done = runner.invoke(app, ["drill", "compare", str(om), PG, "--table", "table_entity"])
    assert done.exit_code == 2 and "of one platform" in done.output, done.output
