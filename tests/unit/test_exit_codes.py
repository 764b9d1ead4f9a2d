"""One meaning per exit code (auditor/exit_codes.py): every command's --help lists exactly the
codes it can return, each in the enum's words or the command's own; a target locked by another
repair (6) and an unknown urn (7) have codes of their own, no longer usage's 2."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from auditor.cli import app
from auditor.cli.common import run
from auditor.exit_codes import MEANINGS, ExitCode, worst
from auditor.rebuild.checkpoint import Lock
from auditor.rebuild.openmetadata import resolve_ids

ROOT = Path(__file__).resolve().parents[2]
ALL = set(range(12))
SCAN = {0, 1, 2, 3, 4, 5, 8, 9}
# what each command can return, written here apart from the commands' own declarations
EXPECTED: dict[tuple[str, ...], set[int]] = {
    (): ALL,
    ("scan",): SCAN,
    ("report", "merge"): SCAN,
    ("report", "render"): SCAN,
    ("triage",): {0, 1, 2, 3, 4, 5, 7, 9},
    ("registry",): {0, 2},
    ("platforms",): {0, 2},
    ("rebuild", "plan"): {0, 2, 3, 7},
    ("rebuild", "replay"): {0, 1, 2, 3, 4, 6, 7},
    ("rebuild", "reindex"): {0, 1, 2, 3, 6, 7, 8},
    ("rebuild", "after-restore"): {0, 1, 2, 3, 4, 6, 8},
    ("rebuild", "merge"): {0, 1, 2, 3, 4, 8},
    ("rebuild", "undo"): {0, 2, 3, 6, 10},
    ("rebuild", "journal"): {0, 2},
    ("heal",): {0, 1, 2, 3, 5, 6, 8, 9, 11},
    ("config", "init"): {0, 2},
    ("drill", "compare"): {0, 1, 2, 3},
    ("watch",): {0, 1, 2, 3},
    ("probe",): {0, 1, 2, 3},
    ("serve",): {0, 2, 3},
}


def declared(group: typer.Typer = app, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Every command's path and its callback (the function `@exits` marked)."""
    out = {}
    for info in group.registered_commands:
        assert info.callback is not None
        out[(*path, info.name or info.callback.__name__)] = info.callback
    for sub in group.registered_groups:
        assert sub.typer_instance is not None and sub.name is not None
        out |= declared(sub.typer_instance, (*path, sub.name))
    return out


def exit_block(path: tuple[str, ...]) -> dict[int, str]:
    """The codes in a command's --help at 80 columns, each with its words (lines joined)."""
    done = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("Exit codes"))
    codes: dict[int, str] = {}
    for line in lines[start + 1 :]:
        assert len(line) <= 80, line
        if entry := re.fullmatch(r" {4}(\d+) (.+)", line):
            last = int(entry[1])
            codes[last] = entry[2]
        elif line.startswith(" " * 6) and codes:
            codes[last] += " " + line.strip()
        else:
            break
    return codes


def test_every_command_says_its_exit_codes() -> None:
    commands = declared()
    assert set(commands) == set(EXPECTED) - {()}, "a new command: list its codes here and with @exits"
    for path, callback in commands.items():
        assert set(callback.exit_codes) == EXPECTED[path], path


@pytest.mark.parametrize("path", sorted(EXPECTED), ids=lambda p: " ".join(p) or "auditor")
def test_the_help_lists_exactly_the_codes_in_the_enums_words_or_its_own(path: tuple[str, ...]) -> None:
    shown = exit_block(path)
    assert set(shown) == EXPECTED[path]
    own = declared()[path].exit_codes if path else {}
    for code, said in shown.items():
        assert said == (own.get(ExitCode(code)) or MEANINGS[ExitCode(code)]), (path, code)


def test_each_code_has_one_meaning_and_the_old_ones_are_kept() -> None:
    assert [int(c) for c in ExitCode] == sorted(ALL) and set(MEANINGS) == set(ExitCode)
    assert "usage" in ExitCode.USAGE.meaning and "lock" not in ExitCode.USAGE.meaning
    assert "urn" not in ExitCode.USAGE.meaning
    assert (ExitCode.INCOMPLETE, ExitCode.STALLED, ExitCode.OUTDATED) == (3, 4, 5)  # schedulers'


def test_the_worst_code_speaks_for_shards() -> None:
    assert worst([0, 5, 4, 1]) == 1 and worst([1, 3]) == 3 and worst([0, 6, 1]) == 6
    assert worst([7, 1]) == 7 and worst([2, 6]) == 2 and worst([]) == 3 and worst([0, 42]) == 42
    assert worst([1, 8, 0]) == 8 and worst([8, 7]) == 7  # a refused deletion outranks what others found
    assert worst([5, 9, 0]) == 9 and worst([9, 4]) == 4 and worst([9, 1]) == 1  # the store behind
    assert worst([9, 8]) == 8  # a store far smaller outranks one behind


def exit_of(fn: Any) -> int:
    """The exit code the CLI gives what `fn` raises or returns (auditor.cli.common.run)."""
    with pytest.raises(typer.Exit) as done:
        run(False, fn)
    return done.value.exit_code


def test_a_target_locked_by_another_repair_exits_6(tmp_path: Path) -> None:
    held = Lock(tmp_path, "target")
    held.acquire()
    try:
        assert exit_of(lambda: Lock(tmp_path, "target").acquire()) == ExitCode.LOCKED == 6
        shard = Lock(tmp_path, "target", (0, 2))  # a shard beside the whole target's repair
        assert exit_of(shard.acquire) == 6
    finally:
        held.release()


class NoEntities:
    def find_by_fqn(self, entity: object, names: list[str]) -> dict[str, str]:
        return {}


def test_an_unknown_urn_exits_7() -> None:
    asked = ("svc.db.schema.nope",)
    assert exit_of(lambda: resolve_ids(NoEntities(), [object()], asked)) == ExitCode.UNKNOWN_URN == 7  # type: ignore[arg-type, list-item]


def test_the_docs_table_has_every_code() -> None:
    text = (ROOT / "docs" / "report.md").read_text(encoding="utf-8")
    section = text.split("## Output formats and exit codes, every command", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (\d+) \| (.+) \|$", section, re.M))
    assert set(map(int, rows)) == ALL, sorted(rows)
