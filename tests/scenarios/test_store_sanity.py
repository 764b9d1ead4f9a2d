"""Sanity before deletion on DataHub (PostgreSQL + OpenSearch 2): the store emptied under a
healthy index (a restore that brought back no rows, or a store URL naming the wrong database).
The scan says so as its headline (exit 8), its orphans still in the JSON report; a repair of
that report, of the orphans' urns, a full rebuild of a type, or `after-restore`, deletes
nothing without `--allow-delete N` (exit 8, every document still there); with the number given
it deletes them. (A database holding none of DataHub's tables: tests/integration/
test_om_store_sanity.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text
from test_rebuild import ROOT, rebuild_cli
from world import World

from sandbox.naming import ASPECT_TABLE, entity_index

pytestmark = pytest.mark.integration


def _counts(world: World) -> dict[str, int]:
    """Every index of the world's prefix and its documents (entity, system metadata, graph)."""
    world.refresh()
    return {i: world.search.count(i) for i in world.search.list_indices(f"{world.prefix}_*")}


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_an_emptied_store_is_the_headline_and_its_repair_deletes_nothing_unasked(tmp_path: Path) -> None:
    world = World("postgres", "opensearch", tmp_path, n=24)
    try:
        with world.engine.begin() as conn:  # the restore brought back no rows
            conn.execute(text(f"DELETE FROM {ASPECT_TABLE}"))
        before = _counts(world)
        entity_docs = sum(n for i, n in before.items() if i.endswith("index_v2"))
        assert entity_docs >= 20, before
        report = tmp_path / "scan.json"
        scan = [sys.executable, "-m", "auditor.cli", "scan", "--grace", "0", "--sample-window", "1"]
        env = world.cli_env()
        console = _run(scan, env)
        assert console.returncode == 8, console.stdout[-2000:] + console.stderr[-2000:]
        head = console.stdout.splitlines()[:3]
        assert "far smaller than the index" in head[0], head
        assert "the store holds no entity" in head[1] and f"{entity_docs} documents" in head[1], head
        done = _run([*scan, "-f", "json", "-o", str(report)], env)
        assert done.returncode == 8, done.stderr[-2000:]
        data = json.loads(report.read_text())
        assert data["exit_code"] == 8 and data["store_smaller"]["rows"] == 0
        assert data["store_smaller"]["orphans"] == entity_docs, data["store_smaller"]
        orphans = [f for f in data["findings"] if f["kind"] == "orphan_document"]
        assert len(orphans) == entity_docs  # still listed, for whoever decides
        # the repair of the report: refused before any write
        args, renv = rebuild_cli(world, tmp_path, "reindex", "--from-report", str(report))
        refused = _run(args, renv)
        assert refused.returncode == 8, refused.stdout[-2000:] + refused.stderr[-2000:]
        assert "--allow-delete" in refused.stderr and "Nothing was deleted" in refused.stderr
        assert _counts(world) == before
        # the orphans named one by one (--urn): refused as well
        urns = [f["urn"] for f in orphans[:12]]
        args, renv = rebuild_cli(world, tmp_path, "reindex", *(a for u in urns for a in ("--urn", u)))
        refused = _run(args, renv)
        assert refused.returncode == 8, refused.stdout[-2000:] + refused.stderr[-2000:]
        assert _counts(world) == before
        # a full rebuild from the empty table: its fresh index is never swapped in for the live one
        args, renv = rebuild_cli(
            world, tmp_path, "reindex", "--full", "-t", "dataset", "--replace-concrete-index"
        )
        refused = _run(args, renv)
        assert refused.returncode == 8, refused.stdout[-2000:] + refused.stderr[-2000:]
        assert {i: n for i, n in _counts(world).items() if i in before} == before
        # after a restore: its first scan sees the store far smaller, and nothing is repaired
        restore = [
            sys.executable,
            "-m",
            "auditor.cli",
            "rebuild",
            "after-restore",
            "--mode",
            "reindex",
            "--apply",
        ]
        refused = _run([*restore, "--evidence", str(tmp_path / "after")], env)
        assert refused.returncode == 8, refused.stdout[-2000:] + refused.stderr[-2000:]
        assert "the store holds no entity" in refused.stderr, refused.stderr[-2000:]
        assert {i: n for i, n in _counts(world).items() if i in before} == before
        # a dry run says it would be refused
        args, renv = rebuild_cli(world, tmp_path, "reindex", "--from-report", str(report))
        planned = _run([a for a in args if a != "--apply"], renv)
        assert planned.returncode == 0 and "--allow-delete" in planned.stdout, planned.stdout[-2000:]
        # the number given: the orphans go
        allowed = _run([*args, "--allow-delete", str(entity_docs)], renv)
        assert allowed.returncode == 0, allowed.stdout[-2000:] + allowed.stderr[-2000:]
        after = _counts(world)
        assert after[entity_index("dataset", world.prefix)] == 0, after
    finally:
        world.close()
