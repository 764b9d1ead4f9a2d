"""Every finding as JSON Lines, end to end: a scan keeps the worst `--max-findings` in its report
yet counts and writes them all, and `rebuild reindex --from-report` of the JSON Lines repairs them
all (the situation after a search restore: more findings than a report should hold)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from world import World

from sandbox.naming import entity_doc_id, entity_index

pytestmark = pytest.mark.integration


@pytest.fixture
def emptied(tmp_path: Path) -> Iterator[tuple[World, set[str]]]:
    """Every live dataset's document gone from its index, as a restore of an older index leaves it."""
    world = World("postgres", "opensearch", tmp_path)
    try:
        index = entity_index("dataset", world.prefix)
        urns = {e.urn for e in world.of_type("dataset")}
        for urn in urns:
            assert world.search.delete(index, entity_doc_id(urn))
        world.refresh()
        yield world, urns
    finally:
        world.close()


def cli(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "auditor.cli", *args],
        env=world.cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def scan(world: World, *more: str) -> dict:
    done = cli(world, "scan", "--no-state", "-f", "json", "--settle", "0.5", "--sample-window", "1", *more)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return json.loads(done.stdout)


def test_every_finding_is_written_as_json_lines_and_repaired_from_them(
    emptied: tuple[World, set[str]], tmp_path: Path
) -> None:
    world, urns = emptied
    assert len(urns) > 5
    out = tmp_path / "findings.jsonl.gz"
    report = scan(world, "--max-findings", "5", "--findings-out", str(out))
    total = sum(row["count"] for row in report["counts"])
    assert len(report["findings"]) == 5 and report["findings_dropped"] == total - 5
    with gzip.open(out, "rt", encoding="utf-8") as lines:
        header, *rows = (json.loads(line) for line in lines)
    assert header["findings_total"] == len(rows) == total and "findings" not in header
    assert header["counts"] == report["counts"]
    missing = {r["urn"] for r in rows if r["kind"] == "missing_document" and r["verdict"] == "diverged"}
    assert missing == urns  # all of them, not the 5 the report kept
    rendered = cli(world, "report", "render", str(out), "-f", "json")  # read as a stream too
    assert rendered.returncode == 1, rendered.stderr[-2000:]
    assert json.loads(rendered.stdout)["counts"] == report["counts"]
    assert len(json.loads(rendered.stdout)["findings"]) == total  # fewer than it keeps: all of them
    done = cli(world, "rebuild", "reindex", "--from-report", str(out), "--apply", "--json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    world.refresh()
    after = scan(world)
    assert not [f for f in after["findings"] if f["verdict"] == "diverged"], after["findings"]
