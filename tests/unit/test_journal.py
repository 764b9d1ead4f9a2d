"""The repair journal's file (auditor/backends/journal.py): read up to a torn or corrupt line and
say so, old runs pruned, and what an undo prints escaped (reports/undo_report.py)."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

from rich.console import Console

from auditor.backends import journal
from auditor.core.undo import Taken, UndoOutcome
from auditor.reports.undo_report import render_console, render_runs, to_json


def _written(tmp_path: Path, n: int = 3) -> journal.Journal:
    opened = journal.Journal.start(tmp_path, {"mode": "reindex"})
    for i in range(n):
        opened.imaged([journal.image("idx", f"doc{i}", f"urn:{i}", "index", ({"n": i}, (i, 1)))])
    opened.close()
    return opened


def test_a_journal_is_read_whole_with_its_header_and_end(tmp_path: Path) -> None:
    opened = _written(tmp_path)
    read = journal.read(opened.path)
    assert read.torn is None and read.ended and read.header["run"] == opened.run
    assert opened.path.stat().st_mode & 0o777 == 0o600  # it holds documents: its owner's only
    assert [e["t"] for e in read.entries] == ["run", "before", "before", "before", "end"]
    assert journal.source_of(read.entries[2]["docs"][0]) == {"n": 1} and read.entries[2]["docs"][0]["v"] == [
        1,
        1,
    ]
    kept = journal.image("idx", "a", "urn:a", "index", ({"n": 1.0}, (3, 1), b'{"n": 1.0e0}'))
    assert kept["raw"] == '{"n": 1.0e0}' and "src" not in kept and journal.source_of(kept) == {"n": 1.0}


def test_a_torn_last_entry_is_read_up_to_and_said(tmp_path: Path) -> None:
    path = _written(tmp_path).path
    data = path.read_bytes()
    path.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 12])  # killed mid-way through the end
    read = journal.read(path)
    assert [e["t"] for e in read.entries] == ["run", "before", "before", "before"] and not read.ended
    assert read.torn == "line 5 is torn (no end of line: the process was killed while writing it)"


def test_a_corrupt_entry_stops_the_reading_and_counts_what_follows(tmp_path: Path) -> None:
    path = _written(tmp_path).path
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"doc1"', b'"docX"')  # its checksum no longer matches
    path.write_bytes(b"\n".join(lines))
    read = journal.read(path)
    assert [e["t"] for e in read.entries] == ["run", "before"]
    assert read.torn == "line 3 fails its checksum; 2 line(s) after it not read"


def test_a_run_that_wrote_nothing_leaves_no_journal(tmp_path: Path) -> None:
    opened = journal.Journal.start(tmp_path, {"mode": "reindex"})
    opened.close()
    assert not opened.wrote and journal.runs(tmp_path) == []


def test_journals_older_than_the_retention_are_pruned(tmp_path: Path) -> None:
    old, new = _written(tmp_path).path, _written(tmp_path).path
    week_ago = time.time() - 7 * 86400
    os.utime(old, (week_ago, week_ago))
    assert journal.prune(tmp_path, None) == [] and journal.prune(tmp_path, -1) == []
    assert journal.prune(tmp_path, 3) == [old] and journal.runs(tmp_path) == [new]
    assert journal.find(tmp_path, new.stem) == new and journal.find(tmp_path, "nope") is None


def test_what_an_undo_prints_is_escaped() -> None:
    urn = "urn:li:dataset:(x,[red]boom[/red]\x1b[31m\nline,PROD)"
    refused = Taken("idx", "id\x1b]8;;", urn, "refused", "written since the repair by someone else")
    outcome = UndoOutcome("run-1", True, "j", refused=[refused], torn="line 3 \x1b[2J fails its checksum")
    out = io.StringIO()
    render_console(outcome, Console(file=out, width=300))
    text = out.getvalue()
    assert "\x1b" not in text  # the data's escape sequences spelled out, its newline too
    assert "[red]boom[/red]\\x1b[31m\\nline" in text and "\\x1b[2J" in text
    data = json.loads(to_json(outcome))
    assert (
        data["exit_code"] == 10 and data["refused"][0]["urn"] == urn
    )  # JSON keeps the text, escaped by JSON
    runs = io.StringIO()
    render_runs(
        [
            {
                "run": "r\x1b[31m",
                "at": None,
                "mode": "reindex",
                "written": 1,
                "swaps": 0,
                "ended": False,
                "torn": None,
            }
        ],
        Console(file=runs, width=200),
    )
    assert "r\\x1b[31m" in runs.getvalue() and "not closed" in runs.getvalue()


def test_each_source_is_cut_out_of_a_multi_get_answer_as_it_was_spelled() -> None:
    from auditor.backends.raw_sources import source_spans

    first = b'{"x" : "a\\"}]{\\\\", "y":[1, {"z":null}], "n": 1.0e-5, "e":"\xc3\xa9\\u00e9"}'
    raw = b'{ "docs" : [ {"_id":"a","found":true,"_source" : ' + first + b' },\n {"_id":"b","found":false} ,'
    raw += b'{"_source":[],"_id":"c"}]}'
    assert list(source_spans(raw)) == [first, None, b"[]"]
    assert json.loads(first)["x"] == 'a"}]{\\'


def test_a_source_holding_the_next_docs_opening_is_still_cut_right() -> None:
    from auditor.backends.raw_sources import _found

    tricky = b'{"list": [{"a": 1},{"_index": 2}], "t": "}]"}'  # the next doc's opening, inside it
    raw = b'{"docs":[{"_index":"i","_id":"a","_seq_no":4,"_primary_term":1,"found":true,"_source":' + tricky
    raw += b'},{"_index":"i","_id":"b","found":false},{"_index":"i","_id":"c","_seq_no":5,"_primary_term":1,'
    raw += b'"found":true,"_source":{"k" :  "v"}}]}'
    found = dict(_found(raw))
    assert found["a"] == (json.loads(tricky), (4, 1), tricky) and "b" not in found
    assert found["c"] == ({"k": "v"}, (5, 1), b'{"k" :  "v"}')


def test_the_before_image_is_the_one_before_the_first_write_that_may_have_landed(tmp_path: Path) -> None:
    from auditor.rebuild.undo_images import documents

    opened = journal.Journal.start(tmp_path, {"mode": "reindex"})
    first = opened.imaged([journal.image("i", "refused", "u", "index", ({"v": 0}, (1, 1)))])
    opened.results(first, [{"i": "i", "id": "refused", "s": 409}])  # someone wrote it: ours refused
    opened.imaged([journal.image("i", "unknown", "u", "index", ({"v": 0}, (2, 1)))])  # killed mid-bulk
    again = opened.imaged(
        [
            journal.image("i", "refused", "u", "index", ({"v": "theirs"}, (3, 1))),
            journal.image("i", "unknown", "u", "index", ({"v": "ours, maybe"}, (4, 1))),
        ]
    )
    opened.results(
        again,
        [
            {"i": "i", "id": "refused", "s": 200, "v": [5, 1]},
            {"i": "i", "id": "unknown", "s": 200, "v": [6, 1]},
        ],
    )
    opened.close()
    docs = documents(journal.read(opened.path))
    assert docs[("i", "refused")].source == {"v": "theirs"} and docs[("i", "refused")].version == (5, 1)
    assert docs[("i", "unknown")].source == {"v": 0} and docs[("i", "unknown")].version == (6, 1)


def test_a_document_someone_wrote_between_two_writes_of_the_run_gets_that_state_back(tmp_path: Path) -> None:
    """B, the run writes A1, someone writes W, the run writes A2: the undo's image is W. Each way the
    journal tells the run's own state from someone else's: the pair its write got, the bytes it
    sent (no result: killed mid-bulk), absent after its delete; a replay's consumer it cannot."""
    from auditor.rebuild.journal_survey import survey
    from auditor.rebuild.undo import UNSURE_WHY, _plan
    from auditor.rebuild.undo_images import documents

    def img(doc_id: str, op: str = "index") -> dict:  # B, to be written (A1: its bytes' digest)
        entry = journal.image("i", doc_id, "u", op, ({"v": "B"}, (1, 1)))
        return (
            {**entry, "wrote": journal.digest(json.dumps({"v": "A1"}).encode())} if op == "index" else entry
        )

    opened = journal.Journal.start(tmp_path, {"mode": "reindex"})
    ids = ("theirs", "ours", "sent", "sent-then-theirs", "deleted-then-created", "replayed")
    first = opened.imaged(
        [img(i) for i in ids[:4]] + [img("deleted-then-created", "delete"), img("replayed", "replay")]
    )
    opened.results(
        first,
        [{"i": "i", "id": i, "s": 200, "v": [2, 1]} for i in ids[:2]] + [{"i": "i", "id": ids[4], "s": 200}],
    )
    w = ({"v": "W"}, (3, 1))
    second = opened.imaged(
        [
            journal.image("i", "theirs", "u", "index", w),  # written in between by someone else
            journal.image("i", "ours", "u", "index", ({"v": "A1"}, (2, 1))),  # as the run left it
            journal.image("i", "sent", "u", "index", ({"v": "A1"}, (2, 1), json.dumps({"v": "A1"}).encode())),
            journal.image("i", "sent-then-theirs", "u", "index", w),
            journal.image("i", "deleted-then-created", "u", "index", w),
            journal.image("i", "replayed", "u", "replay", w),  # the consumer's, or someone else's?
        ]
    )
    opened.results(second, [{"i": "i", "id": i, "s": 200, "v": [4, 1]} for i in ids])
    opened.close()
    docs = documents(journal.read(opened.path))
    assert {i: docs[("i", i)].source for i in ids} == {
        "theirs": {"v": "W"},
        "ours": {"v": "B"},
        "sent": {"v": "B"},
        "sent-then-theirs": {"v": "W"},
        "deleted-then-created": {"v": "W"},
        "replayed": {"v": "B"},
    }
    assert [i for i in ids if docs[("i", i)].unsure] == ["replayed"]
    seen = survey(opened.path, page=range(len(ids)))  # the console's view: the same image
    assert [c.before_version for c in seen.changes] == [(3, 1), (1, 1), (1, 1), (3, 1), (3, 1), (1, 1)]
    now = ({"v": "A2"}, (4, 1), b'{"v":"A2"}')  # what the run's last write made of each
    action, _, item = _plan(docs[("i", "theirs")], now)
    assert action == "put back" and item is not None and (item.doc, item.if_seq) == ({"v": "W"}, (4, 1))
    assert _plan(docs[("i", "replayed")], now) == ("refused", UNSURE_WHY, None)


def test_a_delete_killed_mid_bulk_is_put_back_only_while_the_document_is_still_gone() -> None:
    from auditor.rebuild.undo import Doc, _plan

    deleted = Doc("i", "a", "urn:a", True, {"v": 1}, '{"v": 1}', op="delete")  # no result journaled
    action, _, item = _plan(deleted, None)
    assert (
        action == "put back"
        and item is not None
        and (item.op, item.raw, item.if_seq) == ("create", b'{"v": 1}', None)
    )
    action, why, item = _plan(deleted, ({"v": 2}, (9, 1), b'{"v": 2}'))  # created again since
    assert action == "refused" and item is None and "killed" in why


def test_a_killed_runs_document_its_resumed_run_wrote_again_is_still_its_own() -> None:
    """The killed run wrote (5, 1); the resumed run wrote it again over that (6, 1), its undo put
    back the killed run's state (7, 1): the killed run's undo puts back its own before-image if
    the document holds what it wrote, names the later run to undo first if not, and refuses it as
    someone else's when a write no run journaled is in between."""
    from auditor.rebuild.undo import Doc, _plan

    wrote = b'{"v":"A1"}'
    killed = Doc(
        "i", "a", "u", True, {"v": "B"}, '{"v":"B"}', wrote=journal.digest(wrote), version=(5, 1), status=200
    )
    killed.landed = True
    since = {("i", "a", (6, 1)): ((5, 1), "resumed"), ("i", "a", (7, 1)): ((6, 1), "resumed-undo")}
    action, _, item = _plan(killed, ({"v": "A1"}, (7, 1), wrote), since)
    assert action == "put back" and item is not None and (item.raw, item.if_seq) == (b'{"v":"B"}', (7, 1))
    action, why, _ = _plan(killed, ({"v": "A2"}, (6, 1), b'{"v":"A2"}'), since)  # the resumed run's
    assert action == "refused" and why == "written since by the later run resumed: undo it first"
    action, why, _ = _plan(killed, ({"v": "A1"}, (8, 1), wrote), since)  # someone else's, same bytes
    assert action == "refused" and "someone else" in why
