"""Absence is divergence on OpenMetadata (issue 52): a deleted entity index was one missing
document per row beside a warning, a mistyped cluster alias a pile of missing documents (exit 1,
as if every index had been emptied), an alias over two indices with a stale copy a warning. Now:
one finding per index with its count and repair, a configuration error naming the aliases that
exist (exit 2), one finding per alias naming the stale copies. Against the real servers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from om_world import World, om_world

from auditor.core.model import Kind, Verdict
from auditor.exit_codes import ExitCode
from sandbox.openmetadata.indices import INDEX_SETTINGS, MAPPINGS

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with om_world(
        "mariadb", "elasticsearch", tmp_path_factory.mktemp("om_absence"), prefix="om52", n=30
    ) as w:
        yield w


def test_a_deleted_index_is_one_finding_with_its_count_and_repair(world: World) -> None:
    index = f"{world.alias}_tag_search_index"
    assert world.search.delete_index(index)
    report = world.scan()
    assert report.exit_code == ExitCode.PERSISTENT
    found = [c for c in report.findings if c.finding.entity_type == "tag"]
    assert [(c.verdict, c.finding.kind, c.finding.index) for c in found] == [
        (Verdict.DIVERGED, Kind.MISSING_INDEX, index)
    ]
    assert found[0].finding.details["entities"] == report.entities["tag"] > 1
    assert "recreateIndex: true" in found[0].evidence.reason


def test_a_cluster_alias_naming_no_index_is_a_configuration_error_naming_the_real_one(world: World) -> None:
    env = {
        **os.environ,
        "AUDITOR_STORE_URL": world.store_url,
        "AUDITOR_SEARCH_URL": world.search_url,
        "AUDITOR_PLATFORM": "openmetadata",
        "ELASTICSEARCH_CLUSTER_ALIAS": "omdnosuch",
        "AUDITOR_STATE_FILE": str(world.state),
    }
    done = subprocess.run(
        [sys.executable, "-m", "auditor.cli", "scan", "--grace", "0"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == ExitCode.USAGE, done.stdout[-2000:] + done.stderr[-2000:]
    assert "omdnosuch" in done.stderr and repr(world.alias) in done.stderr, done.stderr


def test_an_alias_over_two_indices_with_a_stale_copy_is_a_finding(world: World) -> None:
    """The table index replaced by a name over two copies of it (a swap that added the new index
    and never removed the old); the old copy of one table is stale."""
    search, live = world.search, f"{world.alias}_table_search_index"
    old, new = f"{live}_old", f"{live}_new"
    docs = search.alias_over_copies(live, (old, new), MAPPINGS, INDEX_SETTINGS)
    stale_id, doc = docs[0]
    search.put(old, stale_id, {**doc, "description": "what it said before the last change"})
    search.refresh(old)
    report = world.scan()
    assert report.exit_code == ExitCode.PERSISTENT
    [found] = [c for c in report.findings if c.finding.kind == Kind.DUPLICATE_DOCUMENT]
    d = found.finding.details
    assert found.verdict == Verdict.DIVERGED and found.finding.index == live
    assert (d["indices"], d["duplicates"], d["stale_copies"]) == ([new, old], len(docs), {old: 1})
    [example] = [e for e in d["examples"] if e["entity"] == stale_id]
    assert {(c["index"], c["stale"]) for c in example["copies"]} == {(old, True), (new, False)}
    assert f'"index":"{old}","alias":"{live}"' in d["repair"]
