"""What a run's journal says of each document it wrote: the before-image an undo puts back.

The image is that of the run's first write since anyone else last wrote the document: a
document the run wrote more than once, that someone else wrote between two of the run's writes,
gets back that writer's state (the run's later before-image), never the older state from before
the run over it; where the journal cannot tell whose write came in between, the document is
marked unsure (the undo refuses it). A later run journaled on the same target (a resumed run, an
undo) is told from someone else's writes by its own journal (`later_writes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.backends import journal
from auditor.backends.bulk_json import dumps
from auditor.backends.search_retry import RETRY_STATUSES


@dataclass
class Doc:
    """What the run did to one document: as it was before, what it wrote last, and how it went."""

    index: str
    doc_id: str
    urn: str
    found: bool  # a document was there before the run's first write
    source: dict[str, Any] | None
    raw: str | None = None  # its bytes as the cluster held them (written back as they are)
    op: str = "index"  # the run's last write: index | create | delete
    wrote: str | None = None  # the digest of the bytes of its last write (not for a delete)
    version: tuple[int, int] | None = None  # (seq_no, term) the last write got; None: unknown
    status: int | None = None  # the last write's status (None: no result journaled)
    landed: bool = False  # a write of the run to it succeeded (its before-image is then final)
    expect: tuple[Any, ...] = ()  # what it may be at the run's next image of it (`imaged_as`)
    unsure: bool = False  # written in between by the run or someone else: the journal cannot tell


def documents(read: journal.JournalRead) -> dict[tuple[str, str], Doc]:
    """Each document the run wrote: the before-image of the run's first write since anyone else
    last wrote it (`moved_since`), and its last write's result."""
    docs: dict[tuple[str, str], Doc] = {}
    pending: dict[int, dict[tuple[str, str], Doc]] = {}
    for entry in read.entries:
        kind = entry.get("t")
        if kind == "before":
            mine: dict[tuple[str, str], Doc] = {}
            for d in entry["docs"]:
                key = (d["i"], d["id"])
                doc = docs.get(key)
                moved = True if doc is None else moved_since(doc.expect, d)
                if doc is None or moved:  # new to the run, or someone else's since: this image
                    doc = docs[key] = Doc(
                        d["i"], d["id"], d.get("urn", ""), d["found"], journal.source_of(d), d.get("raw")
                    )
                elif moved is None:
                    doc.unsure = True
                doc.op, doc.wrote, doc.version, doc.status = d["op"], d.get("wrote"), None, None
                doc.expect = imaged_as(d)
                mine[key] = doc
            pending[entry["b"]] = mine
        elif kind == "after":
            mine = pending.get(entry["b"], {})
            for d in entry["docs"]:
                doc = mine.get((d["i"], d["id"]))
                if doc is not None:
                    doc.status = d["s"]
                    doc.op = d.get("op", doc.op)  # a replay's: what the consumer did (a delete)
                    doc.landed = doc.landed or d["s"] < 300
                    doc.version = tuple(d["v"]) if d.get("v") else None  # type: ignore[assignment]
                    doc.expect = written_as(doc.expect, d, doc.op == "delete")
    return docs


# What a document the run imaged may be at its next image if nobody else wrote it in between
# (a tuple of these): absent, a `(seq_no, term)`, `d:<digest of its bytes>`, or anything (UNSURE:
# a write of the run whose bytes the journal does not have, a replay's consumer's).
ABSENT, UNSURE = "absent", "unsure"


def _state(d: dict[str, Any]) -> Any:
    """An image's state: absent, its `(seq_no, term)`, or (the engine gave none) its bytes' digest."""
    if not d["found"]:
        return ABSENT
    if d.get("v"):
        return tuple(d["v"])
    return "d:" + journal.digest(_bytes(d))


def _bytes(d: dict[str, Any]) -> bytes:
    return d["raw"].encode("utf-8") if "raw" in d else dumps(d["src"])


def imaged_as(d: dict[str, Any]) -> tuple[Any, ...]:
    """Before the write's result is known: as imaged, or as the write made it (absent after a
    delete, the bytes it sent; a replay's: whatever the consumer made of it)."""
    if d["op"] == "delete":
        return (_state(d), ABSENT)
    return (_state(d), "d:" + d["wrote"] if d.get("wrote") else UNSURE)


def written_as(expect: tuple[Any, ...], d: dict[str, Any], delete: bool) -> tuple[Any, ...]:
    """Once the write's result is journaled: the pair it got (absent after a delete); as imaged if
    it failed (a refused write changed nothing); unchanged if it was to be retried (it may land)."""
    if d["s"] < 300:
        if delete:
            return (ABSENT,)
        return (tuple(d["v"]),) if d.get("v") else expect[1:]
    return expect if d["s"] in RETRY_STATUSES else expect[:1]


def moved_since(expect: tuple[Any, ...], d: dict[str, Any]) -> bool | None:
    """Whether someone else wrote the document between the run's last image (and write) of it
    and this image `d`: the run's next write overwrites that writer's state, which the undo must
    give back, not the older one imaged before. None: the journal cannot tell (UNSURE)."""
    state = _state(d)
    if state in expect:
        return False
    if d["found"] and any(isinstance(e, str) and e.startswith("d:") for e in expect):
        if "d:" + journal.digest(_bytes(d)) in expect:  # holds what the run sent
            return False
    return None if UNSURE in expect else True


Since = dict[tuple[str, str, tuple[int, int]], tuple[tuple[int, int], str]]


def later_run(doc: Doc, version: Any, since: Since) -> str | None:
    """The later run that wrote the document last, if every write to it since the run's own was
    a later run's journaled here (a resumed run, an undo), each over the one before it: the run
    whose write got `version`; None if someone else's write is in between (or none is known)."""
    if doc.version is None or version is None or doc.wrote is None:
        return None
    at, last, seen = tuple(version), None, set()
    while at != doc.version:
        step = since.get((doc.index, doc.doc_id, at))  # type: ignore[arg-type]
        if step is None or at in seen:
            return None
        seen.add(at)
        at, last = step[0], last or step[1]
    return last


def later_writes(directory: Path, read: journal.JournalRead, keys: set[tuple[str, str]]) -> Since:
    """(index, id, the pair a write got) -> (the pair the document had before it, the run), for
    each write to these documents by a run journaled after this one on its target: a resumed run
    writes again what the killed one wrote, and its undo puts back the killed run's own state;
    the killed run's undo tells those from someone else's writes by them."""
    out: Since = {}
    target, at = read.header.get("target"), str(read.header.get("at", ""))
    for path in journal.runs(directory):
        head = journal.header(path)
        if path == read.path or head.get("target") != target or str(head.get("at", "")) < at:
            continue
        images: dict[int, dict[tuple[str, str], tuple[int, int]]] = {}
        for entry in journal.entries(path):
            if entry.get("t") == "before":
                found = {(d["i"], d["id"]): tuple(d["v"]) for d in entry["docs"] if d.get("v")}
                images[entry["b"]] = {k: v for k, v in found.items() if k in keys}  # type: ignore[misc]
            elif entry.get("t") == "after":
                mine = images.get(entry["b"], {})
                for d in entry["docs"]:
                    key = (d["i"], d["id"])
                    if key in mine and d.get("v"):
                        out[(*key, tuple(d["v"]))] = (mine[key], str(head["run"]))  # type: ignore[index]
    return out
