"""An output path that cannot be written (-o, --metrics-file) is one clear error that loses
nothing: the text is kept in a temporary file the error names, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from auditor.cli.common import write
from auditor.core.model import Report, Selection
from auditor.errors import ConfigError
from auditor.exit_codes import ExitCode
from auditor.reports.json_report import render


def kept_in(hint: str) -> Path:
    return Path(hint.rsplit(" ", 1)[-1])


def test_a_path_written_whole(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    write(out, "{}\n")
    assert out.read_text() == "{}\n" and [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_a_missing_directory_is_an_error_and_the_text_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "no-such-dir" / "report.json"
    with pytest.raises(
        ConfigError, match=r"cannot write .*report\.json: No such file or directory"
    ) as caught:
        write(out, "the whole report\n")
    assert caught.value.exit_code == ExitCode.USAGE
    assert caught.value.hint and caught.value.hint.startswith("the output was kept in ")
    kept = kept_in(caught.value.hint)
    try:
        assert kept.read_text(encoding="utf-8") == "the whole report\n" and kept.suffix == ".json"
    finally:
        kept.unlink()


def test_the_command_line_says_it_in_one_error_and_exits_2(tmp_path: Path) -> None:
    report = Report(started_at=datetime(2026, 1, 1, tzinfo=UTC), scope=Selection())
    saved = tmp_path / "scan.json"
    saved.write_text(render(report), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "auditor.cli", "report", "render", str(saved), "-f", "markdown",
         "-o", str(tmp_path / "gone" / "scan.md")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert "Traceback" not in done.stderr and "error: cannot write" in done.stderr, done.stderr
    hint = next(line for line in done.stderr.splitlines() if "kept in" in line)
    kept = kept_in(hint.strip())
    try:
        assert kept.read_text(encoding="utf-8").startswith("#")  # the Markdown report, whole
    finally:
        kept.unlink()


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command line in an empty directory, no AUDITOR_ settings inherited."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
    return subprocess.run(
        [sys.executable, "-m", "auditor.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp,
        env=env,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("scan", "--shard", "5/2", "-f", "json"),
        ("rebuild", "reindex", "--json"),  # nothing selected
        ("rebuild", "merge", "--json", "no-such-outcome.json"),
        ("report", "render", "no-such-report.json", "-f", "json"),
    ],
)
def test_an_error_asked_for_as_json_on_stdout_is_one_json_object_there(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    import json

    done = _cli(tmp_path, *args)
    assert done.returncode == ExitCode.USAGE and "error:" in done.stderr, (done.stdout, done.stderr)
    said = json.loads(done.stdout)
    assert said["exit_code"] == done.returncode and said["error"] and "Traceback" not in done.stderr
    assert " ".join(said["error"].split()) in " ".join(done.stderr.split())  # the same error, both places


@pytest.mark.parametrize(
    "args",
    [("scan", "--shard", "5/2"), ("scan", "--shard", "5/2", "-f", "json", "-o", "scan.json")],
)
def test_an_error_not_asked_for_as_json_on_stdout_leaves_stdout_empty(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    done = _cli(tmp_path, *args)
    assert done.returncode == ExitCode.USAGE and "error:" in done.stderr and done.stdout == "", done.stdout
    assert not (tmp_path / "scan.json").exists()
