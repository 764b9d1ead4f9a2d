"""The OpenMetadata scan's spills and keys (pure logic): what is put aside comes back whole and
in order, and equal keys mean `check` finds nothing (unequal ones leave it to `check`)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

import auditor.platforms.openmetadata.spill as spill
from auditor.backends.bulk_json import dumps as bulk_dumps
from auditor.checks.openmetadata import check, doc_key, keys_agree, row_key
from auditor.core.model import Kind
from auditor.errors import BackendUnavailable
from auditor.platforms.openmetadata.fields import doc_fields, row_fields
from auditor.platforms.openmetadata.join import OmScanner
from auditor.platforms.openmetadata.naming import entity
from auditor.platforms.openmetadata.records import OmDoc, OmRow
from auditor.platforms.openmetadata.spill import RowFile, SortedDocs

TABLE = entity("table")
ID = "aaaaaaaa-0000-4000-8000-000000000000"
ENTITY = {"id": ID, "name": "t", "fullyQualifiedName": "s.d.c.t", "version": 0.2, "updatedAt": 5,
          "description": "d", "columns": [{"name": "c", "tags": [{"tagFQN": "PII.Sensitive"}]}]}  # fmt: skip
SOURCE = {"id": ID, "name": "t", "fullyQualifiedName": "s.d.c.t", "version": 0.2, "updatedAt": 5,
          "description": "d", "owners": [{"id": "u1", "type": "user"}],
          "tags": [{"tagFQN": "PII.Sensitive"}], "tier": {"tagFQN": "Tier.Tier1"},
          "classificationTags": [], "glossaryTags": []}  # fmt: skip
ROW = OmRow(ID, json.dumps(ENTITY), 5, False, ({"id": "u1", "type": "user"},), ({"tagFQN": "Tier.Tier1"},))


def test_documents_come_back_in_id_then_index_byte_order_across_several_runs(monkeypatch) -> None:
    monkeypatch.setattr(spill, "RUN", 3)  # ten docs: four sorted runs, merged
    ids = [f"{c}{n}" for c in "aé0Z" for n in range(2)] + ["b1", "b1"]
    docs = [(i, f"idx{n % 2}", {"n": n}) for n, i in enumerate(ids)]
    random.Random(7).shuffle(docs)
    sorted_docs = SortedDocs()
    try:
        for doc_id, index, source in docs:
            sorted_docs.add(doc_id, index, b"k" + doc_id.encode(), source)
        got = list(sorted_docs.sort())
        assert len(sorted_docs.runs) == 4
        assert [(d.id, d.index) for d in got] == sorted((d[0], d[1]) for d in docs)  # 'é' after 'a'..'b'
        assert [d.doc() for d in got] == [OmDoc(i, x, s) for i, x, s in sorted(docs, key=lambda d: d[:2])]
        assert all(d.key == b"k" + d.id.encode() for d in got)
    finally:
        sorted_docs.close()


def test_more_runs_than_files_it_may_open_are_merged_in_passes(monkeypatch) -> None:
    monkeypatch.setattr(spill, "RUN", 2)
    monkeypatch.setattr(spill, "FAN_IN", 3)  # 25 docs: 13 runs, merged 3 at a time first
    ids = [f"{n:03d}" for n in range(25)]
    random.Random(3).shuffle(ids)
    sorted_docs = SortedDocs()
    try:
        for i in ids:
            sorted_docs.add(i, "idx", None, {"id": i})
        got = list(sorted_docs.sort())
        assert len(sorted_docs.runs) <= 3
        assert [d.id for d in got] == sorted(ids) and [d.doc().source["id"] for d in got] == sorted(ids)
    finally:
        sorted_docs.close()


def test_rows_come_back_whole_in_the_order_written() -> None:
    odd = OmRow("b", {"name": float("nan"), "x": "\ud800"}, None, None)  # what JSON cannot carry
    rows = RowFile()
    try:
        rows.add(ROW, b"key")
        rows.add(odd, None)
        back = list(rows)
        assert [(r.id, r.key) for r in back] == [(ID, b"key"), ("b", None)]
        assert back[0].row() == ROW
        again = back[1].row()
        assert again.json["x"] == "\ud800" and again.json["name"] != again.json["name"]  # NaN kept
    finally:
        rows.close()


def test_a_decoded_row_is_put_aside_as_its_text_and_checked_the_same_when_read_back() -> None:
    """A row whose JSON was decoded (its children's tags looked up) carries the text it was read as;
    put aside, the text is what is written (no pickling of the decoded entity), and a pair that
    differs is checked on the row read back exactly as on the row itself."""
    text = json.dumps(ENTITY)
    decoded = OmRow(ID, json.loads(text), 5, False, ROW.owners, ROW.tags, (), "own-hash", (), text)
    assert decoded == OmRow(ID, json.loads(text), 5, False, ROW.owners, ROW.tags, (), "own-hash")
    rows = RowFile()
    try:
        rows.add(decoded, row_key(decoded, "table"))
        (back,) = list(rows)
        again = back.row()
        assert again.json == text and back.key == row_key(decoded, "table") == row_key(again, "table")
        stale = OmDoc(ID, "i", {**SOURCE, "description": "stale"})
        for doc in (OmDoc(ID, "i", SOURCE), stale, None):
            assert check(TABLE, "i", again, doc) == check(TABLE, "i", decoded, doc)
        assert check(TABLE, "i", again, stale) is not None
    finally:
        rows.close()


def test_many_items_come_back_across_blocks(monkeypatch) -> None:
    """Runs and the row file are written and read a block of items at a time: a run or a file
    that ends mid-block, or on a block's edge, comes back whole."""
    monkeypatch.setattr(spill, "BLOCK", 4)
    monkeypatch.setattr(spill, "RUN", 10)
    for n in (0, 3, 4, 8, 10, 23):
        ids = [f"{i:04d}" for i in range(n)]
        docs, rows = SortedDocs(), RowFile()
        try:
            for i in reversed(ids):
                docs.add(i, "idx", (i.encode(), (None, None)), {"id": i})
            for i in ids:
                rows.add(OmRow(i, {"id": i}, None, None), None)
            got = list(docs.sort())
            assert [(d.id, d.key, d.doc().source) for d in got] == [
                (i, (i.encode(), (None, None)), {"id": i}) for i in ids
            ]
            assert [r.row().json for r in rows] == [{"id": i} for i in ids]
        finally:
            docs.close()
            rows.close()


def _nested(levels: int) -> list[object]:
    """A list `levels` deep, built without recursion."""
    value: list[object] = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize("levels", [300, 1010])
def test_rows_and_documents_nested_past_pickles_limit_come_back_whole(levels: int) -> None:
    """A row decoded 1,010 levels deep (orjson reads 1,024) is put aside while its documents are
    read, as a slow cluster makes the scan do: pickle alone recurses too far; it comes back the same."""
    deep = {"id": "d", "extension": {"p": _nested(levels)}}
    rows, docs = RowFile(), SortedDocs()
    try:
        rows.add(OmRow("d", deep, 7, False, ({"id": "u1", "type": "user"},)), b"k")
        docs.add("d", "idx", None, deep)
        (row,), (doc,) = list(rows), list(docs.sort())
        back, source = row.row(), doc.doc().source
        assert (back.id, back.updated_at, back.deleted, back.owners) == (
            "d",
            7,
            False,
            ({"id": "u1", "type": "user"},),
        )
        assert bulk_dumps(back.json) == bulk_dumps(deep) == bulk_dumps(source)
    finally:
        rows.close()
        docs.close()


def test_a_row_and_its_doc_in_agreement_have_one_key_and_no_finding() -> None:
    assert row_key(ROW) is not None
    assert row_key(ROW) == doc_key(SOURCE)
    assert check(TABLE, "i", ROW, OmDoc(ID, "i", SOURCE)) is None
    # written by a release without classificationTags / glossaryTags: another key, no finding
    older = {k: v for k, v in SOURCE.items() if k not in ("classificationTags", "glossaryTags")}
    assert row_key(ROW) != doc_key(older) and check(TABLE, "i", ROW, OmDoc(ID, "i", older)) is None
    assert keys_agree(row_key(ROW), doc_key(older))  # where a side lacks them, not compared


@pytest.mark.parametrize(
    "change",
    [
        {"description": "other"},
        {"version": 0.3},
        {"owners": []},
        {"tags": []},
        {"deleted": "true"},
        {"name": None},
        {"updatedAt": 6},
    ],  # fmt: skip
)
def test_any_compared_field_that_differs_makes_the_keys_differ_and_check_decides(change) -> None:
    source = {**SOURCE, **change}
    assert row_key(ROW) != doc_key(source) and not keys_agree(row_key(ROW), doc_key(source))
    assert check(TABLE, "i", ROW, OmDoc(ID, "i", source)) is not None


def test_what_bytes_cannot_compare_has_no_key() -> None:
    assert row_key(OmRow(ID, "{not json", None, None)) is None  # unreadable: check reports it
    assert row_key(OmRow(ID, {**ENTITY, "id": "other"}, None, None)) is None
    assert doc_key({**SOURCE, "version": float("nan")}) is None  # NaN is not equal to itself
    assert doc_key({**SOURCE, "name": ["a", "list"]}) is None
    assert doc_key({**SOURCE, "description": "\ud800"}) is None  # orjson refuses a lone surrogate


_LINKS = (
    {"r": 0, "id": "s2", "type": "databaseService"},
    {"r": 0, "id": "s1", "type": "databaseService"},
    {"r": 11, "id": "f1"},
    {"r": 13, "id": "up1"},
    {"r": 18, "json": "votedUp"},
    {"r": 18, "json": '"votedDown"'},
)
_LABELS = (
    {"tagFQN": "PII.Sensitive", "source": 0, "target": None},
    {"tagFQN": "Term.A", "source": "Glossary", "target": "child-hash"},
    {"tagFQN": "Tier.Tier2", "source": 0},
    "Bare.Tag",
)


@pytest.mark.parametrize("entity_type", [None, "table", "user", "glossaryTerm", "dashboard"])
@pytest.mark.parametrize("links", [(), _LINKS, _LINKS[2:]])
@pytest.mark.parametrize("labels", [(), _LABELS, _LABELS[1:2]])
def test_the_scans_keys_are_the_compared_fields_own(entity_type, links, labels) -> None:
    """The scan keys each row and doc without building its KeyFields: the same key, so that
    agreeing keys still mean `check` finds nothing (the fields are what `check` compares)."""
    data = {**ENTITY, "owners": [{"name": "t", "type": "team"}], "domain": {"id": "d1"},
            "followers": [{"id": "f2"}], "tags": [{"tagFQN": "Own.Tag", "source": 0}]}  # fmt: skip
    row = OmRow(ID, data, 5, False, ROW.owners, labels, (), "own-hash", links)
    assert (
        row_key(row, entity_type)
        == row_fields(
            data, row.owners, labels, own_hash="own-hash", links=links, entity_type=entity_type
        ).key()
    )
    source = {**SOURCE, "owner": {"id": "u2"}, "upstreamLineage": [{"fromEntity": {"id": "up1"}}],
              "followers": ["f1"], "totalVotes": 2, "service": {"id": "s1"},
              "domains": [{"id": "d1"}]}  # fmt: skip
    for doc in (source, {}, {"tags": [], "tier": {}}, {**source, "glossaryTags": ["Term.A", "Tier.X"]}):
        assert doc_key(doc) == doc_fields(doc).key()


class _Store:
    def __init__(self, rows, fail=False) -> None:
        self.rows, self.fail = rows, fail

    def tag_spill(self, _entities):
        return None

    def stream(self, _entity, tags=None):
        yield from self.rows[:1]
        if self.fail:
            raise BackendUnavailable("the database went away")
        yield from self.rows[1:]


class _Search:
    cluster_alias, spill_dir = "", None

    def __init__(self, docs, fail=False) -> None:
        self.docs, self.fail = docs, fail
        self.search = self  # the engine's client: its document counts

    def resolve_all(self, entities):
        return {e.entity_type: ("i", ["i"]) for e in entities}

    def indices(self, _names):
        return {"i": len(self.docs)}

    def spill(self, _name, key, stop=None, few=False):
        if self.fail:
            raise BackendUnavailable("the cluster went away")
        out = SortedDocs()
        for d in reversed(self.docs):  # any order: the spill sorts
            out.add(d.id, d.index, key(d.source), d.source)
        return out.sort()


def _rows_and_docs():
    ids = [f"{c * 8}-0000-4000-8000-000000000000" for c in "abcd"]
    rows = [OmRow(i, {**ENTITY, "id": i}, 5, False, ROW.owners, ROW.tags) for i in ids[:3]]
    docs = [OmDoc(i, "i", {**SOURCE, "id": i}) for i in (ids[0], ids[2], ids[3])]
    docs[1] = OmDoc(ids[2], "i", {**SOURCE, "id": ids[2], "description": "stale"})
    return ids, rows, docs


def test_the_threaded_join_finds_what_the_join_by_ids_finds() -> None:
    ids, rows, docs = _rows_and_docs()
    found = OmScanner(_Store(rows), _Search(docs)).run([TABLE])  # type: ignore[arg-type]
    kinds = {f.urn: f.kind for f in found.findings}
    assert kinds == {ids[1]: Kind.MISSING_DOCUMENT, ids[2]: Kind.STALE_FIELDS, ids[3]: Kind.ORPHAN_DOCUMENT}
    assert found.entities == {"table": 3} and found.documents == {"i": 3}


@pytest.mark.parametrize("side", ["rows", "docs"])
def test_a_side_that_fails_mid_read_fails_the_scan_with_its_error(side) -> None:
    _, rows, docs = _rows_and_docs()
    scanner = OmScanner(_Store(rows, fail=side == "rows"), _Search(docs, fail=side == "docs"))
    with pytest.raises(BackendUnavailable, match="database" if side == "rows" else "cluster"):
        scanner.run([TABLE])  # type: ignore[arg-type]


def test_a_killed_scans_spill_files_go_with_the_next_scans_first_spill(tmp_path: Path) -> None:
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead = int(gone.stdout)  # a process that ran and ended: its files are leftovers
    leftovers = [tmp_path / f"auditor-om-docs-{dead}-abc123.runs", tmp_path / f"auditor-om-tags-{dead}-x.db"]
    kept = [
        tmp_path / f"auditor-om-rows-{os.getppid()}-def456.pickle",  # a live process's
        tmp_path / f"auditor-om-rows-{os.getpid()}-ghi789.pickle",  # this process's own
        tmp_path / "auditor-om-docs-notapid.runs",  # not a spill file's name
        tmp_path / "other-1-2-3-4.txt",
    ]
    for f in leftovers + kept:
        f.write_bytes(b"x")
    made = spill.temp_file("docs", ".runs", str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([Path(made).name] + [f.name for f in kept])
    assert Path(made).name.startswith(f"auditor-om-docs-{os.getpid()}-")
    (tmp_path / leftovers[0].name).write_bytes(b"x")  # swept once per directory and process
    spill.temp_file("rows", ".pickle", str(tmp_path))
    assert (tmp_path / leftovers[0].name).exists()


@pytest.mark.parametrize(
    "source",
    [
        {"id": "p", "owners": [{"id": "u1"}], "version": 0.1, "n": 2**63 - 1, "s": "é\u2028"},
        {"id": "big", "n": 2**70},  # past 64 bits: pickled
        {"id": "lone", "s": "\ud800"},  # a lone surrogate: pickled
        {"id": "keys", 1: "not a string key"},  # pickled
    ],
)
def test_a_documents_source_comes_back_equal_whichever_way_it_was_written(source) -> None:
    docs = SortedDocs()
    try:
        docs.add(str(source["id"]), "idx", None, source)
        (back,) = list(docs.sort())
        assert back.doc().source == source and type(back.doc().source["id"]) is str
        assert back.record.startswith(b"{") == (source["id"] == "p")  # JSON where it is exact
    finally:
        docs.close()


@pytest.mark.parametrize(
    "text",
    [
        '{"id": "%s", "fullyQualifiedName": "s.d.c.t", "columns": [{"name": "c"}]}',  # no tags key
        '{"id": "%s", "fullyQualifiedName": "s.d.c.t", "columns": [{"name": "c", '
        '"tags": [{"tagFQN": "PII.Inline", "source": "Classification"}]}]}',
        # the key written with escapes: still a `tags` key, still walked
        '{"id": "%s", "fullyQualifiedName": "s.d.c.t", "columns": [{"name": "c", '
        '"t\\u0061gs": [{"tagFQN": "PII.Escaped", "source": "Classification"}]}]}',
        '{"id": "%s", "fullyQualifiedName": "s.d.c.t", "description": "say \\"tags\\"", '
        '"columns": [{"name": "tags"}]}',
    ],
)
def test_a_rows_key_from_its_text_is_the_key_check_compares(text: str) -> None:
    """The key skips the walk for children's inline labels when the row's text cannot hold a
    `tags` key: the same key as the full comparison's, which always walks them."""
    raw = text % ID
    data = json.loads(raw)
    expected = row_fields(data, ROW.owners, (), entity_type="table").key()
    for row in (OmRow(ID, raw, 5, False, ROW.owners), OmRow(ID, data, 5, False, ROW.owners, text=raw),
                OmRow(ID, data, 5, False, ROW.owners, text=raw.encode())):  # fmt: skip
        assert row_key(row, "table") == expected
    inline = [t for t in ("PII.Inline", "PII.Escaped") if t in json.dumps(data)]
    assert expected is not None and all(t.encode() in expected[0] for t in inline)
