"""`rebuild undo` of OpenMetadata's `--full`, against the real servers: behind the alias, the live
name and every parent alias (`<clusterAlias>_all`, `_dataAsset`, ...) moved back in one request,
each document read through them byte for byte as before the rebuild; a rebuilt index the server
wrote to since is not moved away from (its writes would be hidden); the first `--full`, which
removed a concrete index, taken back onto the copy of it kept before the swap (the live name then
an alias over it, the parent aliases moved onto it with it)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from om_world import om_world

from auditor.api import rebuild
from auditor.backends.connect import open_search
from auditor.backends.journal import find
from auditor.core.model import Selection
from auditor.exit_codes import ExitCode
from auditor.rebuild.request import RebuildRequest
from auditor.rebuild.undo import undo
from sandbox.openmetadata.faults import Fault
from sandbox.openmetadata.indices import refresh_all

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scenarios"))
from undo_checks import changed, raw_sources  # noqa: E402

pytestmark = pytest.mark.integration


def test_an_undo_of_an_openmetadata_full_rebuild_moves_every_alias_back(tmp_path: Path) -> None:
    with om_world("postgres", "opensearch3", tmp_path, prefix="omfull", n=30, seeded=3, visibility=0.5) as w:
        directory, live = tmp_path / "journal", f"{w.alias}_table_search_index"
        names = f"{live},{w.alias}_all"  # the live name and a parent alias, read as the server reads
        request = RebuildRequest(
            "reindex", selection=Selection(entity_types=("table",)), apply=True, full=True, state_dir=tmp_path
        )
        concrete = raw_sources(w.search_url, names)
        first = rebuild(w.settings(), dataclasses.replace(request, replace_concrete=True))
        assert first.exit_code == 0 and first.journal, first.failed
        search = open_search(w.settings())
        try:
            first_path = find(directory, first.journal)
            assert first_path is not None
            onto_copy = undo(search, first_path, True, directory)
        finally:
            search.close()
        served = raw_sources(w.search_url, names)
        tables = [e for e in w.server.entities.values() if e.type == "table"]
        w.server.update(tables[0], description="changed, not indexed", fault=Fault.STALE_UPDATE)
        refresh_all(w.search, w.alias)
        before = raw_sources(w.search_url, names)
        second = rebuild(w.settings(), request)
        assert second.exit_code == 0 and second.journal, second.failed
        rebuilt = raw_sources(w.search_url, names)
        search = open_search(w.settings())
        try:
            path = find(directory, second.journal)
            assert path is not None
            dry = undo(search, path, False, directory)
            done = undo(search, path, True, directory)
            after = raw_sources(w.search_url, names)
            # a third --full, then the server writes a table: its undo would hide that write
            third = rebuild(w.settings(), request)
            w.server.update(tables[1], description="written by the server after the rebuild")
            refresh_all(w.search, w.alias)
            theirs = raw_sources(w.search_url, names)
            third_path = find(directory, third.journal or "")
            assert third_path is not None
            kept = undo(search, third_path, True, directory)
            untouched = raw_sources(w.search_url, names)
        finally:
            search.close()
    # the first undo: every document read through the live name and its parent alias as the
    # concrete index held it, now from its copy
    copies = {t.why.split(" -> ")[1].split(" ")[0] for t in onto_copy.aliases if t.action == "put back"}
    assert len(copies) == 1 and next(iter(copies)).startswith(f"{live}_kept-"), onto_copy.aliases
    copy = next(iter(copies))
    assert onto_copy.exit_code == 0 and {live, f"{w.alias}_all"} <= {t.index for t in onto_copy.aliases}
    assert {(live if i == copy else i, d): b for (i, d), b in served.items()} == concrete
    assert changed(before, rebuilt), "the rebuild changed nothing to take back"
    moved = {t.index for t in done.aliases if t.action == "put back"}
    assert {live, f"{w.alias}_all", f"{w.alias}_dataAsset"} <= moved, done.aliases
    assert [(t.index, t.action) for t in dry.aliases] == [(t.index, t.action) for t in done.aliases]
    assert done.exit_code == 0 and after == before, sorted(changed(before, after))[:5]
    assert kept.exit_code == ExitCode.UNDO_PARTIAL and untouched == theirs
    assert all(t.action == "refused" and "written since the rebuild" in t.why for t in kept.aliases), (
        kept.aliases
    )
