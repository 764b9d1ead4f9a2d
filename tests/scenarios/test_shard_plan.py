"""Pushed-down shards end to end (MariaDB + Elasticsearch, PostgreSQL + OpenSearch): a plan made
by `auditor scan --plan-shards N`, one `--shard i/N --shard-plan` scan per shard, merged with
`auditor report merge`, finds exactly what one full scan finds (the same findings, entities and
documents) while the shards together read each row and each document about once. A bound set
right beside urns that PAD SPACE orders apart ('x\\t' before 'x') keeps them in their own shard
on both sides, and the orphan among them is still found."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from faults import drop_mcl, skip_index_write
from world import World

from auditor.scan.shards import ShardPlan

pytestmark = pytest.mark.integration

FAST = ["--grace", "300", "--settle", "0.5", "--sample-window", "1", "--no-state"]
ODD = ["odd", "odd\t", "odd \x01", "odd!", "odd\x1f", "odder"]


def cli(world: World, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "auditor.cli", *args],
        env=world.cli_env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def findings(report: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    return {(f["urn"], f["kind"], f.get("aspect") or "", f["verdict"]) for f in report["findings"]}


def sharded(world: World, tmp: Path, plan: Path, n: int) -> dict[str, Any]:
    """Scan every shard of the plan, merge, return the merged report."""
    parts = []
    for i in range(n):
        out = tmp / f"s{i}.json"
        done = cli(world, tmp, "scan", "--shard", f"{i}/{n}", "--shard-plan", str(plan), "-f", "json",
                   "-o", str(out), *FAST)  # fmt: skip
        assert done.returncode in (0, 1), done.stderr[-2000:]
        parts.append(json.loads(out.read_text()))
    merged = cli(world, tmp, "report", "merge", *(str(tmp / f"s{i}.json") for i in range(n)), "-f", "json")
    assert merged.returncode in (0, 1), merged.stderr[-2000:]
    report = json.loads(merged.stdout)
    report["parts"] = parts
    return report


@pytest.mark.parametrize("pair", ["mariadb/elasticsearch", "postgres/opensearch"])
def test_shards_of_a_plan_find_what_one_scan_finds_reading_everything_once(pair: str, tmp_path: Path) -> None:
    world = World(*pair.split("/"), tmp_path, n=60)
    try:
        odd = [f"urn:li:tag:{world.prefix}-{name}" for name in ODD]
        for urn in odd:
            world.writer.write(urn, "tagKey", {"name": urn.split(":", 3)[3]})
            world.writer.write(urn, "tagProperties", {"name": urn.split(":", 3)[3], "description": "odd"})
        assert world.consumer.drain(60)
        broken = drop_mcl(world) | skip_index_write(world)
        assert world.writer.hard_delete_rows(odd[1]) > 0  # 'odd\t': an orphan PAD SPACE sorts early
        for index in world.search.list_indices(f"{world.prefix}_*"):
            world.search.refresh(index)
        full = cli(world, tmp_path, "scan", "-f", "json", *FAST)
        assert full.returncode == 1, full.stderr[-2000:]
        whole = json.loads(full.stdout)
        assert broken | {odd[1]} <= {f["urn"] for f in whole["findings"]}

        made = cli(world, tmp_path, "scan", "--plan-shards", "4", "-o", "shards.json")
        assert made.returncode == 0 and "4 shards of" in made.stderr, made.stderr[-2000:]
        plan = ShardPlan.load(tmp_path / "shards.json")
        assert sum(plan.rows) == whole["read"]["rows"]
        # a hand-made plan whose bound is 'odd' itself: 'odd\t' and 'odd \x01' follow it by code
        # point (shard 1) but precede it under PAD SPACE
        by_hand = tmp_path / "by-hand.json"
        by_hand.write_text(ShardPlan(2, [odd[0]], [0, 0], [0, 0]).to_json())
        runs = [
            (sharded(world, tmp_path, tmp_path / "shards.json", 4), 4),
            (sharded(world, tmp_path, by_hand, 2), 2),
        ]
    finally:
        world.close()
    for merged, n in runs:
        assert merged["complete"] and not any("tile" in w for w in merged["warnings"]), merged["warnings"]
        assert findings(merged) == findings(whole), (n, findings(merged) ^ findings(whole))
        assert merged["entities"] == whole["entities"] and merged["documents"] == whole["documents"]
        assert merged["counts"] == whole["counts"]
        # each shard read its own range: together about one full scan's rows and documents
        rows = [p["read"]["rows"] for p in merged["parts"]]
        docs = [p["read"]["documents"] for p in merged["parts"]]
        assert whole["read"]["rows"] <= sum(rows) <= 1.1 * whole["read"]["rows"], (rows, whole["read"])
        assert whole["read"]["documents"] <= sum(docs) <= 1.1 * whole["read"]["documents"], (
            docs,
            whole["read"],
        )
    four = runs[0][0]["parts"]
    assert max(p["read"]["rows"] for p in four) <= 1.2 * min(p["read"]["rows"] for p in four)
