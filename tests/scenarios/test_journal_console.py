"""The console's journal pages against a real repair's journal: the runs listed with what each
wrote, verified or not, undone or not; a run's documents paged, each one's change as the cluster's
own bytes before and after the repair say; the undo command offered, never run; journal text
escaped."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from faults import _datasets, hard_delete, stale_field
from serving import Served
from undo_checks import changed, raw_sources
from world import World

from auditor.api import rebuild
from auditor.backends.connect import open_search
from auditor.backends.journal import Journal, find
from auditor.core.model import Verdict
from auditor.rebuild.request import RebuildRequest
from auditor.rebuild.undo import undo
from sandbox.naming import entity_doc_id, entity_index

pytestmark = pytest.mark.integration

HOSTILE = "x\"'><script>document.title='pwned'</script>\u202e\u2028"


def _pages(served: Served, run: str, size: int) -> list[dict]:
    """Every document of a run, a page of `size` at a time, as /api/journal/RUN gives them."""
    out, page = [], 0
    while True:
        status, got = served.json(f"/api/journal/{quote(run, safe='')}?page={page}&size={size}")
        assert status == 200, got
        out += got["changes"]
        if not got["changes"] or len(out) >= got["documents"]:
            return out
        page += 1


def test_the_console_lists_a_repair_s_journal_and_offers_its_undo(tmp_path: Path) -> None:
    world = World("postgres", "opensearch", tmp_path, n=24)
    url, names, directory = (
        world.endpoints.search_url(world.search_name),
        f"{world.prefix}_*",
        tmp_path / "journal",
    )
    served = None
    try:
        stale = stale_field(world)
        missing = next(u for u in _datasets(world, 4)[:3] if u not in stale)  # the repair creates it
        assert world.search.delete(entity_index("dataset", world.prefix), entity_doc_id(missing))
        broken = stale | hard_delete(world, 3) | {missing}
        report = world.scan()
        assert broken <= {c.finding.urn for c in report.findings if c.verdict == Verdict.DIVERGED}
        before = raw_sources(url, names)
        request = RebuildRequest("reindex", findings=report.findings, apply=True, state_dir=tmp_path)
        repair = rebuild(world.settings(), request)
        assert repair.exit_code == 0 and repair.journal, repair.failed
        repaired = raw_sources(url, names)
        search = open_search(world.settings())
        try:
            path = find(directory, repair.journal)
            assert path is not None
            undone = undo(search, path, True, directory)
        finally:
            search.close()
        assert undone.undo_run
        # a journal whose text is hostile: every field of it shown escaped
        hostile = Journal.start(directory, {"mode": HOSTILE, "platform": HOSTILE, "target": {"x": HOSTILE}})
        hostile.imaged([{"i": HOSTILE, "id": HOSTILE, "urn": HOSTILE, "op": "index", "found": False}])
        hostile.results(1, [{"i": HOSTILE, "id": HOSTILE, "s": 201, "v": [0, 1]}])
        hostile.close()
        now = raw_sources(url, names)
        served = Served(world.cli_env(KAFKA_BOOTSTRAP_SERVER=""), tmp_path / "serve.log", "--journal-dir",
                        str(directory))  # fmt: skip
        status, runs = served.json("/api/journal")
        docs = _pages(served, repair.journal, 3)
        page_status, page = served.get(f"/journal/{quote(repair.journal, safe='')}")
        listing_status, listing = served.get("/journal")
        hostile_status, hostile_page = served.get(f"/journal/{quote(hostile.run, safe='')}")
        after = raw_sources(url, names)
    finally:
        if served is not None:
            assert served.stop() == 0, served.said()
        world.close()
    assert status == 200 and [r["run"] for r in runs] == [hostile.run, undone.undo_run, repair.journal]
    listed = {r["run"]: r for r in runs}
    assert listed[repair.journal]["verified"]["ok"] is True
    assert listed[repair.journal]["undone_by"] == [undone.undo_run]
    assert listed[undone.undo_run]["undoes"] == repair.journal and listed[undone.undo_run]["undone_by"] == []
    # each document the repair wrote, once, its change as the cluster's bytes say
    expected = {
        (i, d): "created" if (i, d) not in before else "deleted" if (i, d) not in repaired else "rewritten"
        for i, d in changed(before, repaired)
    }
    shown = {(c["index"], c["doc_id"]): c["kind"] for c in docs}
    assert len(docs) == len(shown) == listed[repair.journal]["documents"]
    assert {k: shown.get(k) for k in expected} == expected and set(expected.values()) == {
        "created",
        "rewritten",
        "deleted",
    }
    assert sum(listed[repair.journal]["kinds"].values()) == len(docs)
    # the undo offered, a dry run first, never run by the console: nothing written since the undo
    dry = f"auditor rebuild undo {repair.journal} --journal-dir {directory}"
    assert page_status == 200 and dry in page and f"{dry} --apply" in page
    assert after == now and changed(before, now) == set()
    assert listing_status == 200 and repair.journal in listing
    assert hostile_status == 200
    for body in (listing, hostile_page):
        assert "<script>document" not in body and "&lt;script&gt;document" in body
