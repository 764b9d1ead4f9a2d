"""Absence is divergence (issue 52): a deleted entity index, a prefix naming no index and an alias
over two indices holding a stale copy were each scanned as clean (exit 0). Each is now a finding
(exit 1) or a configuration error (exit 2), against the real store and search cluster."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from world import World

from auditor.api import triage
from auditor.core.model import Kind, Selection, Verdict
from auditor.exit_codes import ExitCode

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World("postgres", "opensearch", tmp_path_factory.mktemp("absence"), n=30)
    try:
        w.consumer.stop()  # nothing writes while the indices are taken apart
        yield w
    finally:
        w.close()


def index_of(world: World, entity_type: str) -> str:
    return f"{world.prefix}_{entity_type.lower()}index_v2"


def cli(world: World, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "auditor.cli", *args],
        env=world.cli_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_deleted_entity_index_is_one_finding_with_its_count_and_repair(world: World) -> None:
    tags = world.of_type("tag")
    assert tags, "the seed holds tags"
    index = index_of(world, "tag")
    clean = world.scan(kafka=False, selection=Selection(entity_types=("tag",)))
    assert clean.exit_code == ExitCode.OK, clean.counts
    assert world.search.delete_index(index)
    report = world.scan(kafka=False, selection=Selection(entity_types=("tag",)))
    assert report.exit_code == ExitCode.PERSISTENT
    [found] = report.findings
    f = found.finding
    assert (found.verdict, f.kind, f.index, f.entity_type) == (
        Verdict.DIVERGED,
        Kind.MISSING_INDEX,
        index,
        "tag",
    )
    assert f.details["entities"] == report.entities["tag"] == len(world.of_type("tag", removed=None))
    assert "datahub-upgrade -u SystemUpdate" in found.evidence.reason
    assert "auditor rebuild reindex -t tag --apply" in found.evidence.reason
    walked = triage(world.settings(kafka=False), tags[0].urn, settle=0.5)  # one tag: its index is gone
    assert walked.exit_code == ExitCode.PERSISTENT
    assert [c.finding.kind for c in walked.findings] == [Kind.MISSING_INDEX]


def test_a_prefix_that_names_no_index_is_a_configuration_error_naming_the_real_one(world: World) -> None:
    done = cli(world, "scan", "--settle", "0.5", "--sample-window", "1", AUDITOR_INDEX_PREFIX="nosuch")
    assert done.returncode == ExitCode.USAGE, done.stdout[-2000:] + done.stderr[-2000:]
    assert "nosuch" in done.stderr and repr(world.prefix) in done.stderr, done.stderr


def alias_on_two_indices(world: World, entity_type: str) -> tuple[str, str, str]:
    """The live index replaced by an alias over two copies of it; the old copy of one document is
    stale. Returns the alias, the stale copy's index and the stale document's urn."""
    search, live = world.search, index_of(world, entity_type)
    old, new = f"{live}_old", f"{live}_new"
    [(doc_id, doc), *_] = search.alias_over_copies(live, (old, new), search.mappings(live))
    search.put(old, doc_id, {**doc, "description": "what it said before the last change"})
    search.refresh(old)
    return live, old, str(doc["urn"])


def test_an_alias_over_two_indices_with_a_stale_copy_is_a_finding(world: World) -> None:
    alias, stale_in, urn = alias_on_two_indices(world, "chart")
    report = world.scan(kafka=False, selection=Selection(entity_types=("chart",)))
    assert report.exit_code == ExitCode.PERSISTENT, report.counts
    [found] = [c for c in report.findings if c.finding.kind == Kind.DUPLICATE_DOCUMENT]
    d = found.finding.details
    assert found.verdict == Verdict.DIVERGED and found.finding.index == alias
    assert d["duplicates"] == len(world.of_type("chart", removed=None))
    assert d["stale_copies"] == {stale_in: 1}
    [example] = [e for e in d["examples"] if e["entity"] == urn]
    assert {(c["index"], c["stale"]) for c in example["copies"]} == {
        (stale_in, True),
        (f"{alias}_new", False),
    }
    assert f'"index":"{stale_in}","alias":"{alias}"' in d["repair"]
