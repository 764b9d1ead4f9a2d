"""`rebuild undo` of OpenMetadata's targeted repair, against the real servers: every document it
rewrote or deleted back byte for byte; one the server wrote again since refused by name; the
undo, journaled as a run of its own, undone in turn."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest
from om_world import om_world

from auditor.api import rebuild
from auditor.backends.connect import open_search
from auditor.backends.index_writer import IndexWriter
from auditor.backends.journal import find, read
from auditor.core.model import Verdict
from auditor.errors import BackendUnavailable
from auditor.exit_codes import ExitCode
from auditor.rebuild.checkpoint import Lock, LockHeld
from auditor.rebuild.request import RebuildRequest
from auditor.rebuild.undo import undo
from sandbox.openmetadata.faults import Fault
from sandbox.openmetadata.indices import refresh_all

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scenarios"))
from undo_checks import changed, differs, given_back, journaled_docs, raw_sources  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("pair", [("postgres", "opensearch3"), ("mariadb", "elasticsearch")], ids="+".join)
def test_an_undo_puts_back_what_an_openmetadata_repair_wrote_and_refuses_what_changed_since(
    pair: tuple[str, str], tmp_path: Path
) -> None:
    with om_world(*pair, tmp_path, prefix="omundo", n=30, seeded=3, visibility=0.5) as w:
        tables = [e for e in w.server.entities.values() if e.type == "table"]
        w.server.update(tables[0], description="changed, not indexed", fault=Fault.STALE_UPDATE)
        w.server.update(tables[1], description="changed too", fault=Fault.STALE_UPDATE)
        w.server.hard_delete(tables[2], fault=Fault.ORPHAN_DOC)
        refresh_all(w.search, w.alias)
        report = w.scan()
        names, directory = f"{w.alias}_*", tmp_path / "journal"
        before = raw_sources(w.search_url, names)
        include = frozenset({Verdict.DIVERGED, Verdict.IN_FLIGHT})
        request = RebuildRequest(
            "reindex", findings=report.findings, include=include, apply=True, state_dir=tmp_path
        )
        outcome = rebuild(w.settings(), request)
        assert outcome.exit_code == 0 and outcome.journal, outcome.failed
        repaired = raw_sources(w.search_url, names)
        w.server.update(tables[1], description="written by the server after the repair")
        theirs = raw_sources(w.search_url, names)
        path = find(directory, outcome.journal)
        assert path is not None
        search = open_search(w.settings())
        try:
            (lock,) = [e for e in read(path).entries if e.get("t") == "lock"]  # the repair's target
            held = Lock(Path(lock["dir"]), lock["key"])
            held.acquire()
            try:  # a repair of the target running: the undo waits for it (exit 6), nothing written
                with pytest.raises(LockHeld):
                    undo(search, path, True, directory)
            finally:
                held.release()
            assert raw_sources(w.search_url, names) == theirs
            done = undo(search, path, True, directory)
            after = raw_sources(w.search_url, names)
            again = undo(search, path, True, directory)
            undone = find(directory, done.undo_run or "")  # the undo journaled as a run of its own
            assert undone is not None
            redo = undo(search, undone, True, directory)
            redone = raw_sources(w.search_url, names)
        finally:
            search.close()
    touched = changed(before, repaired)
    assert len(touched) >= 3 and touched <= journaled_docs(directory, outcome.journal)
    (written_since,) = changed(repaired, theirs)
    assert [(t.index, t.doc_id) for t in done.refused] == [
        written_since
    ] and done.exit_code == ExitCode.UNDO_PARTIAL
    assert changed(before, after) == {written_since} and after[written_since] == theirs[written_since]
    assert not again.restored and [t.doc_id for t in again.refused] == [tables[1].id]
    # the undo undone: the repair's documents back, the server's own write untouched throughout
    assert redo.exit_code == 0 and redone == theirs, sorted(changed(theirs, redone))[:5]


def _two_stale(w: Any) -> tuple[list[Any], Any, dict[tuple[str, str], bytes]]:
    """Two tables whose updates the server did not index, the scan that finds them, every document."""
    tables = [e for e in w.server.entities.values() if e.type == "table"]
    for table in tables[:2]:
        w.server.update(table, description="changed, not indexed", fault=Fault.STALE_UPDATE)
    refresh_all(w.search, w.alias)
    return tables, w.scan(), raw_sources(w.search_url, f"{w.alias}_*")


def test_an_undo_gives_back_what_the_server_wrote_between_the_repairs_two_writes_of_a_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B, the repair writes A1, the server writes W (its row and its document), the repair reads
    the row again, sees it moved and writes A2 over W: the undo puts back W, not B."""
    with om_world("postgres", "opensearch3", tmp_path, prefix="omundo", n=30, seeded=3, visibility=0.5) as w:
        tables, report, before = _two_stale(w)
        names, directory = f"{w.alias}_*", tmp_path / "journal"
        seen: dict[str, dict[tuple[str, str], bytes]] = {}
        again: set[tuple[str, str]] = set()  # what the repair wrote after the server did
        bulk = IndexWriter.bulk

        def the_server_writes_after_the_first(
            self: IndexWriter, items: list, *a: object, **k: object
        ) -> list:
            if seen:
                again.update((i.index, i.doc_id) for i in items)
            failures = bulk(self, items, *a, **k)
            if not seen:
                seen["repaired"] = raw_sources(w.search_url, names)
                w.server.update(tables[0], description="written by the server meanwhile")
                seen["theirs"] = raw_sources(w.search_url, names)
            return failures

        monkeypatch.setattr(IndexWriter, "bulk", the_server_writes_after_the_first)
        include = frozenset({Verdict.DIVERGED, Verdict.IN_FLIGHT})
        request = RebuildRequest(
            "reindex", findings=report.findings, include=include, apply=True, state_dir=tmp_path
        )
        outcome = rebuild(w.settings(), request)
        monkeypatch.setattr(IndexWriter, "bulk", bulk)
        assert outcome.exit_code == 0 and outcome.journal, outcome.failed
        path = find(directory, outcome.journal)
        assert path is not None
        search = open_search(w.settings())
        try:
            done = undo(search, path, True, directory)
        finally:
            search.close()
        after = raw_sources(w.search_url, names)
    theirs, expected = given_back(before, seen["repaired"], seen["theirs"])  # the server's, in between
    assert any(doc_id == tables[0].id for _, doc_id in theirs & again), (theirs, again)
    assert {(t.index, t.doc_id) for t in done.refused} == theirs - again, [
        (t.doc_id, t.why) for t in done.refused
    ]
    assert not differs(expected, after, theirs), sorted(differs(expected, after, theirs))


def test_a_resumed_openmetadata_repair_is_undone_later_run_first_giving_back_what_the_server_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repair killed after its bulk landed, the server writing one of its entities, the run
    resumed: the resumed run undone, then the killed one, every document is as before the killed
    run but what the server wrote, as the server left it."""
    with om_world("postgres", "opensearch3", tmp_path, prefix="omundo", n=30, seeded=3, visibility=0.5) as w:
        tables, report, before = _two_stale(w)
        names, directory = f"{w.alias}_*", tmp_path / "journal"
        bulk = IndexWriter.bulk

        def killed_after_its_bulk(self: IndexWriter, items: list, *a: object, **k: object) -> list:
            bulk(self, items, *a, **k)
            raise BackendUnavailable("killed")

        monkeypatch.setattr(IndexWriter, "bulk", killed_after_its_bulk)
        include = frozenset({Verdict.DIVERGED, Verdict.IN_FLIGHT})
        request = RebuildRequest(
            "reindex", findings=report.findings, include=include, apply=True, state_dir=tmp_path
        )
        with pytest.raises(BackendUnavailable):
            rebuild(w.settings(), request)
        monkeypatch.setattr(IndexWriter, "bulk", bulk)
        (killed,) = list(directory.glob("*.journal"))
        repaired = raw_sources(w.search_url, names)
        w.server.update(tables[0], description="written by the server meanwhile")
        theirs_now = raw_sources(w.search_url, names)
        resumed = rebuild(w.settings(), dataclasses.replace(request, resume=True, break_stale_lock=True))
        assert resumed.exit_code == 0 and resumed.journal, resumed.failed
        path = find(directory, resumed.journal)
        assert path is not None and path != killed
        search = open_search(w.settings())
        try:
            later = undo(search, path, True, directory)
            earlier = undo(search, killed, True, directory)
        finally:
            search.close()
        after = raw_sources(w.search_url, names)
    theirs, expected = given_back(before, repaired, theirs_now)
    assert any(doc_id == tables[0].id for _, doc_id in theirs), theirs
    assert later.exit_code == 0 and not later.refused, [(t.doc_id, t.why) for t in later.refused]
    assert earlier.restored and {(t.index, t.doc_id) for t in earlier.refused} <= theirs, [
        (t.doc_id, t.why) for t in earlier.refused
    ]
    assert not differs(expected, after, theirs), sorted(differs(expected, after, theirs))
