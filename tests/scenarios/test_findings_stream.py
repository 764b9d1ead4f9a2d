"""Every finding as JSON Lines, end to end: a scan keeps the worst `--max-findings` in its report
yet counts and writes them all, and `rebuild reindex --from-report` of the JSON Lines repairs them
all (the situation after a search restore: more findings than a report should hold)."""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_rebuild import resumed_clean, wait_for_checkpoint
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


def test_an_index_behind_is_said_once_and_its_repair_from_json_lines_resumes_after_a_kill(
    emptied: tuple[World, set[str]], tmp_path: Path
) -> None:
    """Most of the dataset index gone: the plan says so once, with the counts and the one repair,
    not a line per document; the repair of the JSON Lines (one window over the type's rows),
    killed after a batch, resumes from its checkpoint and leaves the index clean."""
    world, urns = emptied
    out = tmp_path / "findings.jsonl"
    scan(world, "--findings-out", str(out))
    planned = cli(world, "rebuild", "plan", "--from-report", str(out))
    assert planned.returncode == 0, planned.stdout[-2000:] + planned.stderr[-2000:]
    said = [line for line in planned.stdout.splitlines() if "most of the index is behind" in line]
    index = entity_index("dataset", world.prefix)
    assert len(said) == 1, planned.stdout
    entities = json.loads(out.read_text(encoding="utf-8").splitlines()[0])["entities"]["dataset"]
    assert f"index {index}: {len(urns)} missing documents against {entities} dataset entities" in said[0]
    assert "`auditor rebuild reindex -t dataset`" in said[0]
    args = [sys.executable, "-m", "auditor.cli", "rebuild", "reindex", "--from-report", str(out)]
    args += ["--apply", "--json", "--rate", "5", "--batch-size", "5"]
    env = world.cli_env()
    first = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_checkpoint(tmp_path, lambda ck: ck["counts"].get("entities", 0) >= 5, run=first)
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    killed = json.loads(next(tmp_path.glob("rebuild-*.json")).read_text())
    assert killed["last_urn"] and not killed["done"], killed
    assert killed["touched"] == [], "a window is verified by a scan of it, not urn by urn"
    outcome, after = resumed_clean(world, args, env)
    # the window walks every dataset of the store, each once over both runs
    assert outcome["counts"]["entities"] == entities, outcome["counts"]
    assert not [c for c in after.findings if c.verdict.value == "diverged"], after.findings[:5]
