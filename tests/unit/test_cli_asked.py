"""A cold command builds only its own parameters: `auditor triage` does not parse the other 18
commands' signatures first, and says the same as the whole app."""

from __future__ import annotations

import typer.main
from typer.testing import CliRunner

from auditor.cli import app, asked


def test_only_the_command_asked_for_is_built_and_it_says_the_same() -> None:
    solo = typer.main.get_command(asked(app, ["triage"]))
    assert sorted(solo.commands) == ["triage"]  # type: ignore[attr-defined]
    assert len(typer.main.get_command(app).commands) > 10  # type: ignore[attr-defined]
    runner = CliRunner()
    for args in (["triage", "--help"], ["triage"], ["triage", "--no-such-option", "x"]):
        alone, whole = runner.invoke(asked(app, args[:1]), args), runner.invoke(app, args)
        assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output), args


def test_anything_but_one_command_gets_the_whole_app() -> None:
    for first in ([], ["--help"], ["--version"], ["report"], ["triag"]):
        assert asked(app, first) is app, first
