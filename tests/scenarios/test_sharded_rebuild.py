"""Sharded repairs against the real stack: 4 shards over a scan's shard plan, one SIGKILLed and
resumed; every urn rebuilt by exactly one shard; the merge; a clean re-scan; `--workers`."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from test_rebuild import ROOT, diverged, lose_index_writes, rebuild_cli
from world import World

from sandbox.naming import ASPECT_TABLE

SHARDS = 4
KILLED = 1  # the shard SIGKILLed mid-run


def rows_per_urn(world: World) -> Counter[str]:
    with world.engine.connect() as conn:
        found = conn.execute(text(f"SELECT urn, COUNT(*) FROM {ASPECT_TABLE} WHERE version = 0 GROUP BY urn"))
        return Counter({str(urn): int(n) for urn, n in found})


def in_range(urn: str, lo: str | None, hi: str | None) -> bool:
    return (lo is None or urn >= lo) and (hi is None or urn < hi)


def plan_shards(world: World, tmp: Path) -> Path:
    plan = tmp / "shards.json"
    made = subprocess.run(
        [sys.executable, "-m", "auditor.cli", "scan", "--plan-shards", str(SHARDS), "-o", str(plan)],
        cwd=ROOT,
        env=world.cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    return plan


def wait_for_shard_checkpoint(
    tmp: Path, shard: int, key: str, at_least: int, proc: subprocess.Popen[str]
) -> Path:
    """Until shard `shard`'s checkpoint counts `at_least` of `key` (as the running shard writes it)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        for path in tmp.glob(f"rebuild-*-shard{shard}of{SHARDS}.json"):
            try:
                if json.loads(path.read_text())["counts"].get(key, 0) >= at_least:
                    return path
            except ValueError:  # replaced as we read it
                continue
        time.sleep(0.1)
    raise AssertionError(f"shard {shard}'s checkpoint did not get to {at_least} {key} (exit {proc.poll()})")


def shard_args(base: list[str], i: int, plan: Path) -> list[str]:
    return [*base, "--shard", f"{i}/{SHARDS}", "--shard-plan", str(plan)]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("mode", "pair"), [("replay", "mariadb/opensearch"), ("reindex", "postgres/elasticsearch")]
)
def test_four_shards_rebuild_every_urn_once_with_one_killed_and_resumed(
    mode: str, pair: str, tmp_path: Path
) -> None:
    world = World(*pair.split("/"), tmp_path, n=120)
    try:
        rows = rows_per_urn(world)
        lose_index_writes(world, 30)
        assert sum(diverged(world.scan()).values()) >= 30
        plan = plan_shards(world, tmp_path)
        wait = ["--wait", "120"] if mode == "replay" else []
        base, env = rebuild_cli(world, tmp_path, mode, "--all", "--batch-size", "10", *wait)
        rate = "15" if mode == "replay" else "5"  # rows / entities a second
        procs = {
            i: subprocess.Popen(
                # the shard to be killed is throttled so that the kill lands mid-run
                [*shard_args(base, i, plan), *(["--rate", rate] if i == KILLED else [])],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(SHARDS)
        }
        done = "produced" if mode == "replay" else "entities"
        try:
            killed_path = wait_for_shard_checkpoint(tmp_path, KILLED, done, 10, procs[KILLED])
        except AssertionError as exc:  # say why: what the shards printed
            for proc in procs.values():
                proc.kill()
            raise AssertionError(f"{exc}: {[p.communicate()[1][-600:] for p in procs.values()]}") from None
        procs[KILLED].send_signal(signal.SIGKILL)
        procs[KILLED].wait(30)
        killed = json.loads(killed_path.read_text())  # as the kill left it
        outcomes: dict[int, dict[str, Any]] = {}
        for i, proc in procs.items():
            if i == KILLED:
                continue
            out, errors = proc.communicate(timeout=600)
            assert proc.returncode == 0, errors[-2000:]
            outcomes[i] = json.loads(out)
        resumed = subprocess.run(
            [*shard_args(base, KILLED, plan), "--resume", "--break-stale-lock"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
        outcomes[KILLED] = json.loads(resumed.stdout)
        for i, outcome in outcomes.items():
            (tmp_path / f"outcome-{i}.json").write_text(json.dumps(outcome))
        merge = subprocess.run(
            [sys.executable, "-m", "auditor.cli", "rebuild", "merge", "--shards", str(SHARDS), "--json"]
            + [str(tmp_path / f"outcome-{i}.json") for i in range(SHARDS)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert world.consumer.drain(120)
        after = world.scan()
    finally:
        world.close()
    assert killed["last_urn"] and not killed["done"], killed
    # each shard's urns from its range (as the database holds them): together every urn, once
    shares = [{u for u in rows if in_range(u, *outcomes[i]["urn_range"])} for i in range(SHARDS)]
    assert set().union(*shares) == set(rows)
    assert sum(len(s) for s in shares) == len(rows), "the shards' ranges overlap"
    assert all(shares), [len(s) for s in shares]
    for i, outcome in outcomes.items():
        assert outcome["shard"] == f"{i}/{SHARDS}" and outcome["exit_code"] == 0, outcome
        assert outcome["still_wrong"] == [] and outcome["failed"] == []
        counts = outcome["counts"]
        if mode == "replay":  # every row of the shard produced once (plus what the guard redid)
            want = sum(rows[u] for u in shares[i])
            assert outcome["rows"] == want
            assert counts["produced"] == want + counts.get("produced_again", 0), (i, counts, want)
        else:  # every urn of the shard rebuilt once, over both runs for the killed one
            assert counts["entities"] == len(shares[i]), (i, counts, len(shares[i]))
    assert killed["counts"][done] < outcomes[KILLED]["counts"][done]  # it was stopped mid-run
    merged = json.loads(merge.stdout)
    assert merge.returncode == 0 and merged["exit_code"] == 0, merge.stdout[-2000:] + merge.stderr
    assert merged["counts"][done] == sum(o["counts"][done] for o in outcomes.values())
    assert not diverged(after) and after.exit_code == 0, [str(c) for c in after.findings][:5]


@pytest.mark.integration
def test_workers_run_the_shards_as_processes_and_merge_them(tmp_path: Path) -> None:
    world = World("mariadb", "elasticsearch", tmp_path, n=60)
    try:
        rows = rows_per_urn(world)
        lose_index_writes(world, 15)
        base, env = rebuild_cli(world, tmp_path, "reindex", "--all", "--batch-size", "10")
        run = subprocess.run(
            [*base, "--workers", "3"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
        after = world.scan()
    finally:
        world.close()
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    merged = json.loads(run.stdout)
    assert [s["shard"] for s in merged["shards"]] == ["0/3", "1/3", "2/3"]
    assert all(s["exit_code"] == 0 for s in merged["shards"]), merged["shards"]
    assert merged["counts"]["entities"] == len(rows) and merged["still_wrong"] == []
    assert len(list(tmp_path.glob("rebuild-*.lock"))) == 0  # every shard released its lock
    assert not diverged(after) and after.exit_code == 0, [str(c) for c in after.findings][:5]
