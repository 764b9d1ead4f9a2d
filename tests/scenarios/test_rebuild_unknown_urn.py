"""`rebuild --urn` with a urn no entity has (no row, no document): refused with exit 7 naming it,
nothing written, in every mode (a plan, and the shards of `--workers` each); a urn with rows and
no document is known by its rows; a urn with documents and no rows is still repaired (its
documents removed), and a known urn beside an unknown one is not repaired on its own."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from faults import _datasets, hard_delete
from test_rebuild import ROOT, rebuild_cli
from world import World

from sandbox.naming import entity_doc_id, entity_doc_id_v3, entity_index, entity_index_v3

pytestmark = pytest.mark.integration

TYPO = "urn:li:dataset:(urn:li:dataPlatform:hive,no_such_db.no_such_table,PROD)"


def test_a_urn_no_entity_has_is_refused_and_one_with_documents_only_is_cleaned(tmp_path: Path) -> None:
    world = World("postgres", "opensearch", tmp_path, n=20)
    try:
        orphan = next(iter(hard_delete(world)))  # its rows gone, its documents left
        known = next(u for u in _datasets(world, 3) if u != orphan)
        index = entity_index("dataset", world.prefix)
        assert world.search.get(index, entity_doc_id(orphan)) is not None
        for mode, more in (("reindex", ()), ("replay", ("--wait", "30"))):
            args, env = rebuild_cli(world, tmp_path, mode, "--urn", TYPO, *more)
            refused = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
            assert refused.returncode == 7, (mode, refused.stdout[-1500:], refused.stderr[-1500:])
            assert TYPO in refused.stderr and "nothing to repair" in refused.stderr, refused.stderr
            assert not list(tmp_path.glob("rebuild-*.json")), "a refused repair left a checkpoint"
        args, env = rebuild_cli(world, tmp_path, "plan", "--urn", TYPO)
        args.remove("--apply")  # a plan writes nothing anyway
        refused = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert refused.returncode == 7 and TYPO in refused.stderr, refused.stderr[-1500:]
        # rows and no document at all (written with no change-log event): known by its rows
        fresh = f"urn:li:tag:{world.prefix}-rows-only"
        world.writer.write(fresh, "tagKey", {"name": f"{world.prefix}-rows-only"}, drop_mcl=True)
        args, env = rebuild_cli(world, tmp_path, "plan", "--urn", fresh)
        args.remove("--apply")
        planned = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert planned.returncode == 0 and json.loads(planned.stdout)["rows"] == 1, planned.stderr[-1500:]
        args, env = rebuild_cli(world, tmp_path, "reindex", "--urn", TYPO, "--workers", "2")
        refused = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        merged = json.loads(refused.stdout)  # each shard refused it, in the merged outcome
        assert refused.returncode == 7 and merged["exit_code"] == 7, refused.stdout[-1500:]
        assert [s["exit_code"] for s in merged["shards"]] == [7, 7]
        assert all(TYPO in s["error"] for s in merged["shards"]), merged["shards"]
        # one typo among known urns: the whole repair is refused (fix the list, run it again)
        args, env = rebuild_cli(world, tmp_path, "reindex", "--urn", known, "--urn", TYPO, "--urn", orphan)
        refused = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert refused.returncode == 7 and TYPO in refused.stderr, refused.stderr[-1500:]
        world.refresh()
        assert world.search.get(index, entity_doc_id(orphan)) is not None  # nothing was written
        # documents without rows: known to the index, so repaired (removed)
        args, env = rebuild_cli(world, tmp_path, "reindex", "--urn", orphan)
        cleaned = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert cleaned.returncode == 0, cleaned.stdout[-1500:] + cleaned.stderr[-1500:]
        assert json.loads(cleaned.stdout)["still_wrong"] == []
        world.refresh()
        assert world.search.get(index, entity_doc_id(orphan)) is None
    finally:
        world.close()


def test_a_urn_known_only_to_the_v3_index_is_repaired_not_refused(tmp_path: Path) -> None:
    """DataHub writing V3 beside V2: a urn whose only trace is its V3 document (no row, no V2
    document, no system metadata, no edge) is known to search; its repair removes that document."""
    world = World("postgres", "opensearch", tmp_path, n=20, v3={"dataset": "primary"}, own_topics=True)
    try:
        primary = entity_index_v3("primary", world.prefix)
        ghost = _datasets(world, 1)[0].replace(",PROD)", "-ghost,PROD)")
        world.search.put(primary, entity_doc_id_v3(ghost), {"urn": ghost, "_entityType": "dataset"})
        world.refresh()
        args, env = rebuild_cli(world, tmp_path, "reindex", "--urn", ghost)
        cleaned = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert cleaned.returncode == 0, cleaned.stdout[-1500:] + cleaned.stderr[-1500:]
        world.refresh()
        assert world.search.get(primary, entity_doc_id_v3(ghost)) is None
    finally:
        world.close()
