"""The engine matrix: every search engine users run, each through every command that touches it.

OpenSearch 2.19 and 3.x, Elasticsearch 7.17, 8.x and 9.x (the stack's `opensearch`,
`opensearch3`, `elasticsearch7`, `elasticsearch8` and `elasticsearch` nodes; 7.17 and 8.x are
started for this phase only: `sandbox/stack up es7 es8`, scripts/test). One world per engine, a
catalog with hidden faults, and on it: a scan (point in time + search_after, the engine detected
by `GET /`), a triage, a targeted reindex (bulk writes and deletes) and a `--full` rebuild's
staged index and alias swaps, each re-scanned clean; then the watch's read of what search shows.
Marked `engines`: scripts/test runs them in their own phase, after the others.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from faults import _tags, drop_mcl, hard_delete, skip_index_write, stale_field
from test_rebuild import diverged, request
from test_triage import boundary, expect, triage
from world import World

from auditor.api import rebuild
from auditor.core.model import Selection
from auditor.rebuild.request import RebuildRequest
from sandbox.naming import entity_doc_id, entity_index

pytestmark = [pytest.mark.integration, pytest.mark.engines]

# engine -> (store, the version GET / must report): DataHub's Helm prerequisites pair MySQL with
# Elasticsearch 7.17; the others alternate
ENGINES = {
    "opensearch": ("postgres", "opensearch 2."),
    "opensearch3": ("mariadb", "opensearch 3."),
    "elasticsearch7": ("mariadb", "elasticsearch 7.17"),
    "elasticsearch8": ("postgres", "elasticsearch 8."),
    "elasticsearch": ("postgres", "elasticsearch 9."),
}


@pytest.mark.parametrize("engine", list(ENGINES))
def test_scan_triage_reindex_and_full_swap(engine: str, tmp_path: Path) -> None:
    from auditor.backends.connect import open_search
    from auditor.backends.index_writer import IndexWriter
    from auditor.backends.searchable import searchable_docs

    store, version = ENGINES[engine]
    world = World(store, engine, tmp_path, n=32)
    try:
        search = open_search(world.settings())
        assert search.version().startswith(version), search.version()

        # hidden faults: a dropped MCL, a consumed MCL whose index write was skipped, rows
        # hard-deleted behind the index, a soft delete the index never saw
        datasets = [e.urn for e in world.of_type("dataset")]
        assert len(datasets) >= 5, datasets
        healthy = datasets[-1]
        (dropped,) = drop_mcl(world, which=1)
        (skipped,) = skip_index_write(world)  # datasets[0]
        (orphan,) = hard_delete(world, which=2)
        soft = datasets[3]
        world.consumer.skip_index_write({skipped, soft})
        world.writer.soft_delete(soft)
        assert world.consumer.drain(60)
        world.consumer.reset_faults()

        # the scan: the right verdict for each, nothing on the urns no fault touched
        before = world.scan()
        assert before.complete, before.warnings
        wanted = {
            dropped: "event_never_published",
            skipped: "stale_fields",
            orphan: "orphan_document",
            soft: "soft_delete_mismatch",
        }
        got: dict[str, set[str]] = {}
        for c in before.findings:
            got.setdefault(c.finding.urn, set()).add(f"{c.verdict.value}/{c.subkind}")
        assert set(got) == set(wanted), got
        for urn, subkind in wanted.items():
            assert f"diverged/{subkind}" in got[urn], (urn, got[urn])
        assert before.exit_code == 1
        assert sum(before.entities.values()) >= len(world.entities) - 4

        # the triage of a broken urn, as a process (its stderr empty: no client chatter)
        code, out = triage(world, orphan)
        expect(out, 1, code, "diverged", "orphan_document", "document", "broken")
        assert boundary(out, "rows")["facts"]["present"] is False
        assert out["repair"][0] == f"auditor rebuild reindex --urn '{orphan}' --apply"

        # a targeted reindex of what the scan found: bulk writes and deletes, verified
        outcome = rebuild(world.settings(), request("reindex", before, tmp_path))
        assert not outcome.failed and not outcome.still_wrong, [str(c) for c in outcome.still_wrong]
        assert outcome.counts.get("deleted", 0) >= 1 and outcome.exit_code == 0, outcome.counts
        after = world.scan()
        assert not after.findings and after.exit_code == 0, [str(c) for c in after.findings]

        # `--full`: a staged index swapped in for the concrete index, then for the alias's index
        (renamed,) = stale_field(world)
        live = f"{world.prefix}_datasetindex_v2"
        selection = Selection(entity_types=("dataset",))
        full = {"selection": selection, "apply": True, "full": True, "state_dir": tmp_path}
        first = rebuild(world.settings(), RebuildRequest("reindex", replace_concrete=True, **full))
        writer = IndexWriter(open_search(world.settings()))
        (fresh,), is_alias = writer.concrete(live)
        assert is_alias and fresh.startswith(f"{live}_"), (fresh, is_alias)
        second = rebuild(world.settings(), RebuildRequest("reindex", **full))
        (newer,), _ = writer.concrete(live)
        assert newer != fresh and writer.concrete(fresh)[0] == [fresh], "the old index is kept"
        assert first.exit_code == 0 and second.exit_code == 0, (first.notes, second.notes)
        world.writer.write(healthy, "globalTags", _tags("after-the-swap"))  # the consumer writes on
        assert world.consumer.drain(60)
        final = world.scan()
        assert renamed not in {c.finding.urn for c in final.findings}
        assert not diverged(final) and final.exit_code == 0, [str(c) for c in final.findings]

        # the watch's read: what search shows (the last refresh), not the translog
        index = entity_index("dataset", world.prefix)
        doc_id = entity_doc_id(healthy)
        shown = searchable_docs(search, index, [doc_id, f"absent-{uuid.uuid4().hex}"])
        assert list(shown) == [doc_id] and shown[doc_id]["urn"] == healthy, shown
        search.close()
    finally:
        world.close()


@pytest.mark.parametrize("engine", list(ENGINES))
def test_point_in_time_its_fallback_and_a_told_kind_read_the_same(engine: str) -> None:
    """The stream in urn order three ways: a point in time, the sorted scroll a cluster without
    one gets, and (Elasticsearch) a client told the kind, which never asks `GET /`."""
    from auditor.backends.search import SearchIndex
    from sandbox.endpoints import Endpoints
    from sandbox.search import connect

    e = Endpoints.from_env()
    raw = connect(engine, e)
    index = f"engines_{uuid.uuid4().hex[:8]}_datasetindex_v2"
    raw.ensure_index(index, {"properties": {"urn": {"type": "keyword"}}})
    try:
        urns = [f"urn:li:dataset:(urn:li:dataPlatform:hive,t.{i:03d},PROD)" for i in range(25)]
        raw.bulk_put(index, ((entity_doc_id(u), {"urn": u}) for u in reversed(urns)))
        raw.refresh(index)
        kind = "opensearch" if engine.startswith("opensearch") else "elasticsearch"
        readers = {"pit": SearchIndex(e.search_url(engine)), "told": SearchIndex(e.search_url(engine), kind)}
        readers["scroll"] = SearchIndex(e.search_url(engine))
        readers["scroll"]._pit_ok = False  # as after a cluster refused to open one
        for name, reader in readers.items():
            got = [doc["urn"] for _id, doc in reader.stream(index, ["urn"], page=10)]
            assert got == urns, (name, got[:3])
            reader.close()
        assert readers["pit"]._pit_ok and readers["told"]._pit_ok, "a point in time was refused"
        assert readers["pit"].engine is not None and readers["told"].engine is None
    finally:
        raw.delete_index(index)


RELEASE = "1.0.0"  # each engine's world is indexed as this release, then upgraded to 1.7.0


@pytest.mark.parametrize("engine", list(ENGINES))
def test_an_older_release_s_catalog_and_its_upgrade(engine: str, tmp_path: Path) -> None:
    """A catalog indexed as an older DataHub release scans clean beside empty indices of the types
    DataHub writes no document for; after an upgrade to 1.7.0 (a few entities written again) the
    documents the older release wrote are `outdated` (exit 5) and a reindex of their type clears
    them (mappings read, bulk rewrites of whole documents)."""
    from test_versions import INTERNAL, _scan

    from auditor.core.model import Verdict
    from sandbox.search import ENTITY_MAPPINGS
    from sandbox.versions import write_deployment

    store, _ = ENGINES[engine]
    world = World(store, engine, tmp_path, n=40, release=RELEASE)
    try:
        for etype in INTERNAL:
            world.search.ensure_index(f"{world.prefix}_{etype.lower()}index_v2", ENTITY_MAPPINGS)
        clean = _scan(world)
        write_deployment(world.writer, "1.7.0")
        world.consumer.updater.release = "1.7.0"
        charts = world.of_type("chart")
        for e in charts[:2]:
            info = dict(
                next(v.to_obj() if hasattr(v, "to_obj") else v for a, v in e.aspects if a == "chartInfo")
            )
            info["description"] = f"edited after the upgrade ({e.urn})"
            world.writer.write(e.urn, "chartInfo", info)
        assert world.consumer.drain(60)
        upgraded = _scan(world)
        types = sorted({line["entity_type"] for line in upgraded.sections["outdated"]})
        for etype in types:
            selection = Selection(entity_types=(etype,))
            done = rebuild(
                world.settings(),
                RebuildRequest("reindex", selection=selection, apply=True, state_dir=tmp_path),
            )
            assert not done.failed, done.failed
        after = _scan(world)
    finally:
        world.close()
    assert clean.exit_code == 0 and clean.findings == [], [str(c) for c in clean.findings][:3]
    assert f"at least {RELEASE}" in clean.sources["platform_version"]
    assert upgraded.exit_code == 5, [str(c) for c in upgraded.findings][:3]
    outdated = [c for c in upgraded.findings if c.verdict == Verdict.OUTDATED]
    assert outdated and "chart" in types, [str(c) for c in upgraded.findings][:3]
    assert not {c.finding.urn for c in outdated} & {e.urn for e in charts[:2]}  # 1.7.0 wrote those
    assert after.exit_code == 0 and after.findings == [], [str(c) for c in after.findings][:3]
