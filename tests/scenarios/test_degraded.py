"""The schema registry unreachable: the scan still runs and says its evidence is weaker; a
replay refuses to start (it would have to encode MCLs without DataHub's registered schema)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from faults import drop_mcl
from world import World

pytestmark = pytest.mark.integration

NOWHERE = "http://127.0.0.1:9"  # nothing listens on the discard port


def test_without_the_registry_the_scan_degrades_and_a_replay_refuses(tmp_path: Path) -> None:
    world = World("mariadb", "opensearch", tmp_path, n=30)
    try:
        (dropped,) = drop_mcl(world)
        e = world.endpoints
        base = [
            "--store-url", e.store_url(world.store_name), "--search-url", e.search_url(world.search_name),
            "--kafka", e.kafka, "--schema-registry", NOWHERE,
        ]  # fmt: skip
        env = {
            **os.environ,
            "INDEX_PREFIX": world.prefix,
            "AUDITOR_STATE_FILE": str(tmp_path / "state.sqlite"),
            **world.kafka_env(),
        }
        scan = subprocess.run(
            [sys.executable, "-m", "auditor.cli", "scan", "--format", "json", "--grace", "0", *base],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        replay = subprocess.run(
            [sys.executable, "-m", "auditor.cli", "rebuild", "replay", "--urn", dropped, "--apply", *base],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        world.close()
    assert scan.returncode == 1, scan.stderr[-2000:]
    report = json.loads(scan.stdout)
    assert report["complete"] and any(f["urn"] == dropped for f in report["findings"])
    assert any("could not be decoded" in w and "schema registry" in w for w in report["warnings"]), report[
        "warnings"
    ]
    assert replay.returncode == 3, replay.stdout + replay.stderr
    assert "schema registry" in replay.stderr and "refusing to replay" in replay.stderr, replay.stderr
