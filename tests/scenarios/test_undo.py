"""`rebuild undo` against the real stack: a repair's writes taken back byte for byte, a document
written since refused by name, an undo run twice or resumed after a kill writing nothing twice."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from faults import _datasets, _tags, hard_delete, stale_field
from undo_checks import Raw, changed, differs, given_back, journaled_docs, raw_sources
from world import World

from auditor.api import rebuild
from auditor.backends.connect import open_search
from auditor.backends.index_writer import IndexWriter
from auditor.backends.journal import find
from auditor.core.model import Report, Verdict
from auditor.errors import BackendUnavailable
from auditor.exit_codes import ExitCode
from auditor.rebuild import undo as undo_module
from auditor.rebuild.request import RebuildRequest
from sandbox.naming import entity_doc_id, entity_index

pytestmark = pytest.mark.integration


def _undo(world: World, directory: Path, run: str, apply: bool = True) -> undo_module.UndoOutcome:
    path = find(directory, run)
    assert path is not None
    search = open_search(world.settings())
    try:
        return undo_module.undo(search, path, apply, directory)
    finally:
        search.close()


def _places(world: World, tmp_path: Path) -> tuple[str, str, Path]:
    """The search URL, every index of the world, the journal directory."""
    return world.endpoints.search_url(world.search_name), f"{world.prefix}_*", tmp_path / "journal"


def _two_lost(world: World, url: str, names: str) -> tuple[list[str], Report, Raw]:
    """Two datasets whose index writes were lost, the scan that finds them, every document."""
    lost = _datasets(world, 2)
    _lose_index_writes(world, lost)
    return lost, world.scan(), raw_sources(url, names)


def _lose_index_writes(world: World, urns: list[str]) -> None:
    world.consumer.skip_index_write(set(urns))
    for i, urn in enumerate(urns):
        world.writer.write(urn, "globalTags", _tags(f"lost-{i}"))
    assert world.consumer.drain(60)
    world.consumer.reset_faults()


@pytest.mark.parametrize("pair", ["postgres/opensearch", "mariadb/elasticsearch"])
def test_an_undo_puts_back_every_document_a_reindex_wrote_and_refuses_one_written_since(
    pair: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = World(*pair.split("/"), tmp_path, n=24)
    url, names = world.endpoints.search_url(world.search_name), f"{world.prefix}_*"
    directory = tmp_path / "journal"
    try:
        lost = _datasets(world, 4)[1:3]
        _lose_index_writes(world, lost)
        broken = stale_field(world) | hard_delete(world, 3) | set(lost)
        report = world.scan()
        assert broken <= {c.finding.urn for c in report.findings if c.verdict == Verdict.DIVERGED}
        before = raw_sources(url, names)
        request = RebuildRequest("reindex", findings=report.findings, apply=True, state_dir=tmp_path)
        outcome = rebuild(world.settings(), request)
        assert outcome.exit_code == 0 and outcome.journal, outcome.failed
        repaired = raw_sources(url, names)
        touched = changed(before, repaired)
        assert touched and touched <= journaled_docs(directory, outcome.journal)
        # someone else writes one of the repaired entity docs after the repair
        index, other = entity_index("dataset", world.prefix), lost[0]
        world.search.upsert(index, entity_doc_id(other), {"name": "written after the repair"})
        theirs = raw_sources(url, names)[(index, entity_doc_id(other))]
        dry = _undo(world, directory, outcome.journal, apply=False)
        assert raw_sources(url, names) == {
            **repaired,
            (index, entity_doc_id(other)): theirs,
        }  # nothing written
        # the undo killed after its first bulk (a few documents a bulk)
        monkeypatch.setattr(undo_module, "BATCH", 3)
        bulk, calls = IndexWriter.bulk, []

        def killed_after_one(self: IndexWriter, items: list, *a: object, **k: object) -> list:
            if calls:
                raise BackendUnavailable("killed")
            calls.append(len(items))
            return bulk(self, items, *a, **k)

        monkeypatch.setattr(IndexWriter, "bulk", killed_after_one)
        with pytest.raises(BackendUnavailable):
            _undo(world, directory, outcome.journal)
        monkeypatch.setattr(IndexWriter, "bulk", bulk)
        done = _undo(world, directory, outcome.journal)
        after = raw_sources(url, names)
        again = _undo(world, directory, outcome.journal)
        last = raw_sources(url, names)
    finally:
        world.close()
    assert dry.exit_code == ExitCode.UNDO_PARTIAL and dry.undo_run is None
    assert [(t.doc_id, t.urn) for t in dry.refused] == [(entity_doc_id(other), other)]
    assert "written since the repair by someone else" in dry.refused[0].why
    # byte for byte as before the repair, but the document written since, left as it was written
    assert changed(before, after) == {(index, entity_doc_id(other))}
    assert after[(index, entity_doc_id(other))] == theirs
    assert done.exit_code == ExitCode.UNDO_PARTIAL and [t.urn for t in done.refused] == [other]
    # the resumed undo did not write again what the killed one had put back
    assert calls and len(done.restored) == len(dry.restored) - calls[0], (calls, len(done.restored))
    assert not again.restored and again.undo_run is None and last == after


def test_an_undo_of_a_full_rebuild_moves_the_alias_back_and_puts_back_what_it_wrote_beside(
    tmp_path: Path,
) -> None:
    """The second --full (the live name an alias by then): the undo moves the alias back onto the
    index it pointed at (kept by the swap) and puts back the system-metadata docs and edges the
    rebuild rewrote in the shared indices; the first --full replaced a concrete index: its swap is refused."""
    from auditor.core.model import Selection
    from sandbox.naming import graph_index, system_metadata_index

    world = World("postgres", "opensearch", tmp_path, n=24)
    url, directory = world.endpoints.search_url(world.search_name), tmp_path / "journal"
    live = entity_index("dataset", world.prefix)
    names = ",".join((live, system_metadata_index(world.prefix), graph_index(world.prefix)))
    selection = Selection(entity_types=("dataset",))
    try:
        full = RebuildRequest("reindex", selection=selection, apply=True, full=True, state_dir=tmp_path)
        first = rebuild(world.settings(), RebuildRequest(**{**full.__dict__, "replace_concrete": True}))
        _lose_index_writes(world, _datasets(world, 2)[1:])
        stale_field(world)
        before = raw_sources(url, names)
        second = rebuild(world.settings(), full)
        assert second.exit_code == 0 and second.journal, second.failed
        rebuilt = raw_sources(url, names)
        done = _undo(world, directory, second.journal)
        after = raw_sources(url, names)
        again = _undo(world, directory, second.journal)
        concrete = _undo(world, directory, first.journal or "", apply=False)
    finally:
        world.close()
    assert changed(before, rebuilt), "the second rebuild changed nothing to take back"
    assert after == before, sorted(changed(before, after))[:5]
    assert done.exit_code == 0 and [(t.index, t.action) for t in done.aliases] == [(live, "put back")]
    shared = {system_metadata_index(world.prefix), graph_index(world.prefix)}
    assert done.restored and {t.index for t in done.restored} <= shared  # what it rewrote beside
    assert again.exit_code == 0 and not again.restored and again.undo_run is None
    assert [t.action for t in again.aliases] == ["already as before"]
    # the first one's fresh index, served again by the second's undo, was written since it settled
    assert concrete.exit_code == ExitCode.UNDO_PARTIAL and len(concrete.aliases) == 1
    assert concrete.aliases[0].action == "refused" and "written since the rebuild" in concrete.aliases[0].why


def _served(raw: dict[tuple[str, str], bytes], index: str, name: str) -> dict[tuple[str, str], bytes]:
    """`raw` with the documents of `index` filed under `name`, the name readers use."""
    return {(name if i == index else i, d): b for (i, d), b in raw.items()}


def _full_over_concrete(world: World, tmp_path: Path) -> RebuildRequest:
    from auditor.core.model import Selection

    selection = Selection(entity_types=("dataset",))
    return RebuildRequest(
        "reindex", selection=selection, apply=True, full=True, state_dir=tmp_path, replace_concrete=True
    )


@pytest.mark.parametrize("pair", ["postgres/opensearch", "mariadb/elasticsearch"])
def test_an_undo_of_a_first_full_over_a_concrete_index_serves_its_kept_copy_byte_for_byte(
    pair: str, tmp_path: Path
) -> None:
    """The first --full removes the concrete live index in its swap; the copy it kept just before
    is what its undo moves the live name onto (then an alias): every document read through the
    live name, and those it rewrote in the shared indices, byte for byte as before the repair."""
    from undo_checks import _http

    from sandbox.naming import graph_index, system_metadata_index

    world = World(*pair.split("/"), tmp_path, n=24)
    url, directory = world.endpoints.search_url(world.search_name).rstrip("/"), tmp_path / "journal"
    live = entity_index("dataset", world.prefix)
    names = ",".join((live, system_metadata_index(world.prefix), graph_index(world.prefix)))
    try:
        _lose_index_writes(world, _datasets(world, 2)[1:])
        stale_field(world)
        was = list(json.loads(_http(f"{url}/{live}/_alias")))
        before = raw_sources(url, names)
        first = rebuild(world.settings(), _full_over_concrete(world, tmp_path))
        assert first.exit_code == 0 and first.journal, first.failed
        rebuilt = raw_sources(url, names)
        done = _undo(world, directory, first.journal)
        serving = sorted(json.loads(_http(f"{url}/{live}/_alias")))
        after = raw_sources(url, names)
        again = _undo(world, directory, first.journal)
        # a later --full: the copy is the old index behind the alias, kept as any is
        later = rebuild(
            world.settings(),
            dataclasses.replace(_full_over_concrete(world, tmp_path), replace_concrete=False),
        )
    finally:
        world.close()
    assert later.exit_code == 0 and any(f"the old index {serving[0]} is kept" in n for n in later.notes), (
        later.notes
    )
    assert was == [live], "the live name was not a concrete index"
    assert changed(before, rebuilt), "the rebuild changed nothing to take back"
    assert len(serving) == 1 and serving[0].startswith(f"{live}_kept-")  # an alias over the copy
    assert _served(after, serving[0], live) == before, sorted(
        changed(before, _served(after, serving[0], live))
    )[:5]
    assert done.exit_code == 0 and [(t.index, t.action) for t in done.aliases] == [(live, "put back")]
    assert "becomes an alias over it, no longer a concrete index" in done.aliases[0].why
    assert again.exit_code == 0 and not again.restored and again.undo_run is None
    assert [t.action for t in again.aliases] == ["already as before"]


def test_an_undo_of_a_first_full_is_refused_when_the_index_it_served_was_written_since(
    tmp_path: Path,
) -> None:
    """A write through the live name after the first --full's swap went to the fresh index: moving
    the name onto the kept copy would hide it. Refused, nothing moved."""
    from undo_checks import _http

    world = World("mariadb", "opensearch", tmp_path, n=12)
    url, directory = world.endpoints.search_url(world.search_name).rstrip("/"), tmp_path / "journal"
    live = entity_index("dataset", world.prefix)
    try:
        first = rebuild(world.settings(), _full_over_concrete(world, tmp_path))
        assert first.exit_code == 0 and first.journal, first.failed
        serving = sorted(json.loads(_http(f"{url}/{live}/_alias")))
        urn = _datasets(world, 1)[0]
        world.search.upsert(live, entity_doc_id(urn), {"name": "written after the rebuild"})
        theirs = raw_sources(url, live)
        done = _undo(world, directory, first.journal)
        untouched = raw_sources(url, live)
        still = sorted(json.loads(_http(f"{url}/{live}/_alias")))
    finally:
        world.close()
    assert done.exit_code == ExitCode.UNDO_PARTIAL and [t.action for t in done.aliases] == ["refused"]
    assert "written since the rebuild" in done.aliases[0].why, done.aliases
    assert still == serving and not serving[0].startswith(f"{live}_kept-") and untouched == theirs


def test_a_first_full_with_no_room_for_the_copy_is_refused_before_anything_is_removed(tmp_path: Path) -> None:
    """The cluster refuses the copy's writes (a block, as the flood-stage disk watermark sets one;
    here an index template blocks writes to the copy's name): the --full stops before the load,
    deletes what it created, and the concrete live index is left as it was."""
    import uuid

    from undo_checks import _http

    from auditor.errors import AuditorError
    from auditor.exit_codes import ExitCode as Codes

    world = World("postgres", "opensearch", tmp_path, n=12)
    url = world.endpoints.search_url(world.search_name).rstrip("/")
    live = entity_index("dataset", world.prefix)
    template = f"tnocopy-{uuid.uuid4().hex[:8]}"
    blocked = {
        "index_patterns": [f"{live}_kept-*"],
        "priority": 901,
        "template": {"settings": {"index.blocks.write": True}},
    }
    try:
        before = raw_sources(url, live)
        _http(f"{url}/_index_template/{template}", "PUT", blocked)
        with pytest.raises(AuditorError) as refused:
            rebuild(world.settings(), _full_over_concrete(world, tmp_path))
        left = sorted(json.loads(_http(f"{url}/{live}*/_alias")))
        after = raw_sources(url, live)
    finally:
        _http(f"{url}/_index_template/{template}", "DELETE")
        world.close()
    assert refused.value.exit_code == Codes.INCOMPLETE and "could not be made" in str(refused.value)
    assert left == [live] and after == before  # still the concrete index, nothing else created left


@pytest.mark.parametrize("pair", ["mariadb/opensearch"])
def test_an_undo_of_a_replay_puts_back_the_documents_its_messages_made_the_consumer_write(
    pair: str, tmp_path: Path
) -> None:
    """A Kafka message cannot be taken back: the replay's undo is the documents the consumer
    wrote for it, imaged before each page was produced and read again once it had passed."""
    world = World(*pair.split("/"), tmp_path, n=24)
    url, names, directory = _places(world, tmp_path)
    try:
        lost = _datasets(world, 3)
        _lose_index_writes(world, lost[:2])
        world.writer.write(lost[2], "globalTags", _tags("dropped"), drop_mcl=True)
        report = world.scan()
        assert set(lost) <= {c.finding.urn for c in report.findings if c.verdict == Verdict.DIVERGED}
        before = raw_sources(url, names)
        request = RebuildRequest(
            "replay", findings=report.findings, apply=True, wait_seconds=60, state_dir=tmp_path
        )
        outcome = rebuild(world.settings(), request)
        assert outcome.exit_code == 0 and outcome.consumer_caught_up and outcome.journal, outcome.failed
        repaired = raw_sources(url, names)
        index = entity_index("dataset", world.prefix)
        world.search.upsert(index, entity_doc_id(lost[0]), {"name": "written after the replay"})
        theirs = raw_sources(url, names)
        done = _undo(world, directory, outcome.journal)
        after = raw_sources(url, names)
        again = _undo(world, directory, outcome.journal)
    finally:
        world.close()
    touched = changed(before, repaired)
    assert {(index, entity_doc_id(u)) for u in lost} <= touched <= journaled_docs(directory, outcome.journal)
    assert [(t.doc_id, t.urn) for t in done.refused] == [(entity_doc_id(lost[0]), lost[0])]
    assert changed(before, after) == {(index, entity_doc_id(lost[0]))}
    assert after[(index, entity_doc_id(lost[0]))] == theirs[(index, entity_doc_id(lost[0]))]
    assert not again.restored and again.undo_run is None


def test_a_repair_killed_mid_bulk_is_undone_from_its_torn_journal_by_the_cli(tmp_path: Path) -> None:
    """A repair killed while its bulk was out and while it journaled: the journal has the
    before-image and no result, its last line torn. `rebuild journal` says so; `rebuild undo`
    reads up to the tear, says where, and puts the document back because it holds exactly the
    bytes the repair sent (anything else would be refused)."""
    import json
    import os
    import subprocess
    import sys
    import uuid

    from undo_checks import _http, put_raw

    from auditor.backends.journal import Journal, digest, image
    from auditor.backends.raw_sources import read_versioned
    from auditor.backends.search import SearchIndex
    from sandbox.endpoints import Endpoints

    url = Endpoints.from_env().search_url("opensearch").rstrip("/")
    index, directory = f"tundo{uuid.uuid4().hex[:8]}", tmp_path / "journal"
    original = b'{"name": "before",  "tags": ["\\u00e9"]}'  # spelled as a client might: kept as is
    created = put_raw(f"{url}/{index}/_doc/a?refresh=true", original)
    try:
        search = SearchIndex(url, "opensearch")
        found = read_versioned(search, index, ["a"])["a"]  # as the journal images it
        search.close()
        opened = Journal.start(directory, {"mode": "reindex"})
        entry = image(index, "a", "urn:a", "index", found)
        written = b'{"name":"after"}'
        opened.imaged([{**entry, "wrote": digest(written)}])
        put_raw(f"{url}/{index}/_doc/a?refresh=true", written)  # the bulk landed; then the kill
        opened._file.write(b'0badc0de {"t": "aft')
        opened._file.close()
        env = {**os.environ, "AUDITOR_SEARCH_URL": url}
        cli = [sys.executable, "-m", "auditor.cli", "rebuild"]
        listed = subprocess.run(
            [*cli, "journal", "--journal-dir", str(directory)], capture_output=True, text=True, env=env
        )
        undone = subprocess.run(
            [*cli, "undo", opened.run[:20], "--journal-dir", str(directory), "--apply", "--json"],
            capture_output=True,
            text=True,
            env=env,
        )
        now = _http(f"{url}/{index}/_source/a")
    finally:
        _http(f"{url}/{index}", "DELETE")
    assert created == 201
    assert listed.returncode == 0 and opened.run in listed.stdout and "torn: line 3 is torn" in listed.stdout
    assert undone.returncode == 0, undone.stdout + undone.stderr
    said = json.loads(undone.stdout)
    assert said["torn"].startswith("line 3 is torn") and not said["ended"]
    assert [(t["doc_id"], t["action"]) for t in said["restored"]] == [("a", "put back")]
    assert now == original  # byte for byte, its spelling (spaces, an escaped é) kept


def test_a_write_in_the_last_moment_before_the_swap_is_not_served_older_after_the_undo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The platform writes an entity's document to the concrete index after the copy's last pass,
    just before the swap removes that index (here: inside the swap call, before its request). The
    copy never saw that write; the entity's row changed with it, so the rebuild writes the entity
    into the copy from its row after the swap, as into the fresh index. After the undo the live
    name serves it as the fresh index did, not as it was before the write; the other documents
    byte for byte as the concrete index held them."""
    world = World("postgres", "opensearch", tmp_path, n=12)
    url, directory = world.endpoints.search_url(world.search_name).rstrip("/"), tmp_path / "journal"
    live = entity_index("dataset", world.prefix)
    late = _datasets(world, 1)[0]
    swap = IndexWriter.swap

    def written_just_before(self: IndexWriter, actions: list, kept: dict | None = None) -> None:
        if kept:  # the first --full's swap, the concrete index still in place
            world.writer.write(late, "globalTags", _tags("in-the-last-moment"))
            assert world.consumer.drain(60)
        swap(self, actions, kept=kept)

    try:
        before = raw_sources(url, live)
        monkeypatch.setattr(IndexWriter, "swap", written_just_before)
        first = rebuild(world.settings(), _full_over_concrete(world, tmp_path))
        monkeypatch.setattr(IndexWriter, "swap", swap)
        assert first.exit_code == 0 and first.journal, first.failed
        rebuilt = {d: b for (_, d), b in raw_sources(url, live).items()}
        done = _undo(world, directory, first.journal)
        after = {d: b for (_, d), b in raw_sources(url, live).items()}
    finally:
        world.close()
    doc = entity_doc_id(late)
    assert [t.action for t in done.aliases] == ["put back"], done.aliases
    # the write also changed the entity's edges and system metadata in the shared indices after the
    # rebuild had written them: those are someone else's since, refused by the document undo
    assert all(t.index != live and "since the repair" in t.why for t in done.refused), done.refused
    assert b"in-the-last-moment" in after[doc] and after[doc] == rebuilt[doc]
    assert {d: b for d, b in after.items() if d != doc} == {d: b for (_, d), b in before.items() if d != doc}


@pytest.mark.parametrize("pair", ["postgres/opensearch"])
def test_an_undo_gives_back_what_datahub_wrote_between_the_repairs_two_writes_of_a_document(
    pair: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B, the reindex writes A1, DataHub writes W (a row, and its consumer the documents), the
    reindex's guard sees the row moved and writes A2 over W: the undo puts back W, the newest
    state that was not the run's own (B over W would be an older state over a newer one)."""
    world = World(*pair.split("/"), tmp_path, n=24)
    url, names, directory = _places(world, tmp_path)
    seen: dict[str, dict[tuple[str, str], bytes]] = {}
    again: set[tuple[str, str]] = set()  # what the reindex wrote after DataHub did
    try:
        lost, report, before = _two_lost(world, url, names)
        bulk = IndexWriter.bulk

        def datahub_writes_after_the_first(self: IndexWriter, items: list, *a: object, **k: object) -> list:
            if seen:
                again.update((i.index, i.doc_id) for i in items)
            failures = bulk(self, items, *a, **k)
            if not seen:
                seen["repaired"] = raw_sources(url, names)
                world.writer.write(lost[0], "globalTags", _tags("written-meanwhile"))
                assert world.consumer.drain(60)
                seen["theirs"] = raw_sources(url, names)
            return failures

        monkeypatch.setattr(IndexWriter, "bulk", datahub_writes_after_the_first)
        request = RebuildRequest("reindex", findings=report.findings, apply=True, state_dir=tmp_path)
        outcome = rebuild(world.settings(), request)
        monkeypatch.setattr(IndexWriter, "bulk", bulk)
        assert outcome.exit_code == 0 and outcome.journal, outcome.failed
        done = _undo(world, directory, outcome.journal)
        after = raw_sources(url, names)
    finally:
        world.close()
    assert outcome.counts.get("rewritten_again"), outcome.counts  # the guard wrote it again
    theirs, expected = given_back(before, seen["repaired"], seen["theirs"])  # DataHub's, in between
    index = entity_index("dataset", world.prefix)
    assert (index, entity_doc_id(lost[0])) in theirs <= journaled_docs(directory, outcome.journal)
    assert (index, entity_doc_id(lost[0])) in again
    # what DataHub changed after the reindex's last write to it is refused (W is newer), the rest
    # put back: those written again, as W left them
    assert {(t.index, t.doc_id) for t in done.refused} == theirs - again, [
        (t.doc_id, t.why) for t in done.refused
    ]
    assert not differs(expected, after, theirs), sorted(differs(expected, after, theirs))


@pytest.mark.parametrize("pair", ["postgres/opensearch"])
def test_a_resumed_reindex_is_undone_later_run_first_giving_back_what_datahub_wrote_in_between(
    pair: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reindex killed after its bulk landed (before its checkpoint moved), DataHub writing one of
    its entities, the resumed run writing them all again: two runs, each journaled. Undone the
    later first, every document is as before the first run, but what DataHub wrote in between, as
    DataHub left it (the killed run's undo once refused every document the resumed run wrote again:
    its `_seq_no` had moved)."""
    world = World(*pair.split("/"), tmp_path, n=24)
    url, names, directory = _places(world, tmp_path)
    try:
        lost, report, before = _two_lost(world, url, names)
        bulk = IndexWriter.bulk

        def killed_after_its_bulk(self: IndexWriter, items: list, *a: object, **k: object) -> list:
            bulk(self, items, *a, **k)
            raise BackendUnavailable("killed")

        monkeypatch.setattr(IndexWriter, "bulk", killed_after_its_bulk)
        request = RebuildRequest("reindex", findings=report.findings, apply=True, state_dir=tmp_path)
        try:
            rebuild(world.settings(), request)
        except BackendUnavailable:
            pass
        monkeypatch.setattr(IndexWriter, "bulk", bulk)
        (first,) = [p.name.removesuffix(".journal") for p in directory.glob("*.journal")]
        repaired = raw_sources(url, names)
        world.writer.write(lost[0], "globalTags", _tags("written-meanwhile"))
        assert world.consumer.drain(60)
        theirs_now = raw_sources(url, names)
        resumed = rebuild(world.settings(), dataclasses.replace(request, resume=True, break_stale_lock=True))
        assert resumed.exit_code == 0 and resumed.journal and resumed.journal != first, resumed.failed
        later = _undo(world, directory, resumed.journal)
        earlier = _undo(world, directory, first)
        after = raw_sources(url, names)
    finally:
        world.close()
    theirs, expected = given_back(before, repaired, theirs_now)
    assert later.exit_code == 0 and not later.refused  # W given back where the resumed run wrote over it
    # the killed run's own writes, written again the same by the resumed run (or put back by its
    # undo), are its own: put back; only what DataHub wrote after them is refused
    assert {(t.index, t.doc_id) for t in earlier.refused} <= theirs, [
        (t.doc_id, t.why) for t in earlier.refused
    ]
    assert earlier.restored and all("someone else" in t.why for t in earlier.refused)
    assert not differs(expected, after, theirs), sorted(differs(expected, after, theirs))
