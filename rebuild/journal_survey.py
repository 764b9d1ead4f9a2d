"""A run's journal as the console and `rebuild journal` show it: read once, as a stream, each
document's state kept as one small int (a big run's documents are never held whole), its
before-image chosen as the undo chooses it (rebuild/undo_images.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.backends import journal
from auditor.rebuild.undo_images import imaged_as, moved_since, written_as


def list_runs(directory: Path) -> list[dict[str, Any]]:
    """Every journaled run of `directory`, oldest first: its header and what it wrote."""
    paths = journal.runs(directory)
    undone = undone_by(paths)
    return [survey(path, undone=undone).listed() for path in paths]


def undone_by(paths: list[Path]) -> dict[str, list[str]]:
    """run -> the undo runs that undid it (their headers say `undoes`), from the headers alone."""
    out: dict[str, list[str]] = {}
    for path in paths:
        head = journal.header(path)
        if head.get("undoes"):
            out.setdefault(str(head["undoes"]), []).append(str(head["run"]))
    return out


# a document's state in a survey, packed in an int (a big run's documents are never held whole)
_FOUND, _LANDED, _KNOWN, _DELETE = 1, 2, 4, 8


@dataclass
class Change:
    """One document a run wrote, as the console lists it: before, and what the run made of it."""

    number: int  # in the order the run first wrote it, from 0
    index: str
    doc_id: str
    urn: str
    found: bool  # there was a document before the run's first write that may have landed
    before_bytes: int | None = None  # its size as the cluster held it
    before_version: tuple[int, int] | None = None
    op: str = "index"
    status: int | None = None  # its last write's status (None: no result journaled)
    version: tuple[int, int] | None = None  # (seq_no, term) the last write got
    landed: bool = False

    @property
    def kind(self) -> str:
        packed = (_FOUND if self.found else 0) | (_LANDED if self.landed else 0)
        packed |= (_KNOWN if self.status is not None else 0) | (_DELETE if self.op == "delete" else 0)
        return _kind(packed)


def _kind(state: int) -> str:
    """created | rewritten | deleted | not written (its write failed) | unconfirmed (no result)."""
    if not state & _LANDED:
        return "not written" if state & _KNOWN else "unconfirmed"
    if state & _DELETE:
        return "deleted"
    return "rewritten" if state & _FOUND else "created"


@dataclass
class Survey:
    """A run's journal read once, as a stream: its header, what it did, and one page of its
    documents (`changes`); the documents' states are kept as one small int each."""

    path: Path
    header: dict[str, Any] = field(default_factory=dict)
    documents: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # created | rewritten | deleted | ...
    swaps: list[dict[str, Any]] = field(default_factory=list)  # `aliases` entries
    created: list[str] = field(default_factory=list)  # indices the run created
    dropped: list[str] = field(default_factory=list)
    verified: dict[str, Any] | None = None  # the `verified` entry (None: none journaled)
    ended: bool = False
    torn: str | None = None
    undone_by: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    @property
    def run(self) -> str:
        return str(self.header.get("run", self.path.stem))

    def listed(self) -> dict[str, Any]:
        """As `rebuild journal --json` lists it."""
        h = self.header
        return {
            "run": self.run,
            "at": h.get("at"),
            "mode": h.get("mode"),
            "full": h.get("full", False),
            "undoes": h.get("undoes"),
            "platform": h.get("platform"),
            "target": h.get("target", {}),
            "documents": self.documents,
            "written": sum(n for k, n in self.kinds.items() if k in ("created", "rewritten", "deleted")),
            "kinds": dict(sorted(self.kinds.items())),
            "swaps": len(self.swaps),
            "verified": self.verified,
            "undone_by": self.undone_by,
            "ended": self.ended,
            "torn": self.torn,
            "journal": str(self.path),
        }


def survey(path: Path, page: range = range(0), undone: dict[str, list[str]] | None = None) -> Survey:
    """`path` read as a stream: the counts of what the run did to its documents (each counted
    once, as `documents()` sees it) and the documents numbered in `page` in full."""
    out = Survey(path)
    state: dict[int, int] = {}  # a hash of (index, id) -> its packed state
    expect: dict[int, tuple[Any, ...]] = {}  # and what it may be at its next image (`moved_since`)
    shown: dict[int, Change] = {}
    pending: dict[int, list[int]] = {}
    last: dict[str, Any] = {}
    stopped: list[str] = []
    for entry in journal.entries(path, stopped):
        last, kind = entry, entry.get("t")
        if kind == "run" and not out.header:
            out.header = entry
        elif kind == "before":
            pending[entry["b"]] = [_imaged(out, (state, expect), shown, page, d) for d in entry["docs"]]
        elif kind == "after":
            keys = set(pending.pop(entry["b"], []))
            for d in entry["docs"]:
                key = hash((d["i"], d["id"]))
                if key in keys:
                    _result((state, expect), shown.get(key), key, d)
        elif kind == "aliases":
            out.swaps.append(entry)
        elif kind == "created":
            out.created.append(entry["i"])
        elif kind == "dropped":
            out.dropped.append(entry["i"])
        elif kind == "verified":
            out.verified = entry
    out.ended, out.torn = last.get("t") == "end", stopped[0] if stopped else None
    out.documents = len(state)
    for packed in state.values():
        out.kinds[_kind(packed)] = out.kinds.get(_kind(packed), 0) + 1
    out.changes = sorted(shown.values(), key=lambda c: c.number)
    out.undone_by = (undone or {}).get(out.run, [])
    return out


Known = tuple[dict[int, int], dict[int, tuple[Any, ...]]]  # each document's packed state, and `expect`


def _imaged(out: Survey, tracked: Known, shown: dict[int, Change], page: range,
            d: dict[str, Any]) -> int:  # fmt: skip
    """A before-image: a new document, or one someone else wrote since the run's last image and
    write of it (its image is then the one put back), as in `documents()`; its key."""
    state, expect = tracked
    key = hash((d["i"], d["id"]))
    known = state.get(key)
    fresh = known is None or moved_since(expect[key], d) is True
    expect[key] = imaged_as(d)
    packed = (_FOUND if d["found"] else 0) if fresh else (known or 0) & (_FOUND | _LANDED)
    state[key] = packed | (_DELETE if d["op"] == "delete" else 0)
    number = len(state) - 1 if known is None else None
    change = shown.get(key)
    if number is not None and number in page:
        change = shown[key] = Change(number, d["i"], d["id"], d.get("urn", ""), bool(d["found"]))
    if change is not None:
        if fresh:
            change.found = bool(d["found"])
            change.before_bytes = len(d["raw"].encode("utf-8")) if "raw" in d else None
            change.before_version = tuple(d["v"]) if d.get("v") else None  # type: ignore[assignment]
            change.landed = False
        change.op, change.status, change.version = d["op"], None, None
    return key


def _result(tracked: Known, change: Change | None, key: int, d: dict[str, Any]) -> None:
    state, expect = tracked
    packed = state[key] | _KNOWN | (_LANDED if d["s"] < 300 else 0)
    if "op" in d:  # a replay's: what the consumer did
        packed = packed | _DELETE if d["op"] == "delete" else packed & ~_DELETE
    state[key] = packed
    expect[key] = written_as(expect[key], d, bool(packed & _DELETE))
    if change is not None:
        change.status, change.op = d["s"], d.get("op", change.op)
        change.landed = change.landed or d["s"] < 300
        change.version = tuple(d["v"]) if d.get("v") else None  # type: ignore[assignment]
