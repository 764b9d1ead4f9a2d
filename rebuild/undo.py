"""`auditor rebuild undo RUN`: a repair's journaled writes taken back, document by document.

For every document the run wrote or deleted, the before-image of its first write in the run is
put back, on condition that the document is still what the run's last write made of it (its
`_seq_no`/`_primary_term`, the engine's own check: a write since answers 409). A document the run
wrote more than once, that someone else wrote between two of the run's writes, gets back the
newest state that was not the run's own (the run's later before-image: an undo puts back what
the run overwrote, never the older state from before the run over that writer's change); where
the journal cannot tell whose write came in between, it is refused, said why. A document
written again since by someone else is refused by name, with why, and left as it is; one that is
already as it was before the run is left alone (an undo run twice, or resumed after a kill,
writes nothing again). A write the journal has no result for (the repair was killed during its
bulk) is taken back only if the document holds exactly the bytes that write sent.

A full rebuild's swap is taken back by moving each alias back to the indices it pointed at,
when they still exist and the alias still points where the swap put it (the fresh index is
kept: the undo can itself be undone); a concrete index the swap removed, onto the copy of it
kept before the swap (rebuild/kept.py). The undo's own writes are journaled as a run of their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor.backends import journal
from auditor.backends.bulk_json import dumps
from auditor.backends.index_writer import BulkItem, IndexWriter
from auditor.backends.raw_sources import read_versioned
from auditor.backends.search_retry import RETRY_STATUSES
from auditor.core.undo import Taken, UndoOutcome
from auditor.errors import ConfigError
from auditor.rebuild.checkpoint import Lock

if TYPE_CHECKING:
    from auditor.backends.search import SearchIndex
    from auditor.rebuild.request import RebuildRequest
    from auditor.settings.model import Settings

BATCH = 500
UNSURE_WHY = (
    "the repair wrote it more than once and the document changed between two of its writes in a "
    "way the journal cannot tell from someone else's write: putting back the state from before "
    "the repair could write an older state over a newer one"
)


@contextmanager
def journaled(settings: Settings, request: RebuildRequest) -> Iterator[journal.Journal | None]:
    """An applied repair's writes journaled for the block (nothing for a plan or a dry run);
    the journal, or None. Old journals are pruned first (`journal_keep_days`)."""
    if not request.apply or request.mode == "plan":
        yield None
        return
    directory = request.journal_path
    journal.prune(directory, request.journal_keep_days)
    header = {
        "mode": request.mode,
        "full": request.full,
        "platform": settings.platform,
        "target": settings.describe(),
        "index_prefix": settings.index_prefix,
        "shard": list(request.shard) if request.shard else None,
    }
    opened = journal.Journal.start(directory, header)
    with journal.journaling(opened):
        yield opened


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
    expect: tuple[Any, ...] = ()  # what it may be at the run's next image of it (`_imaged_as`)
    unsure: bool = False  # written in between by the run or someone else: the journal cannot tell


def documents(read: journal.JournalRead) -> dict[tuple[str, str], Doc]:
    """Each document the run wrote: the before-image of the run's first write since anyone else
    last wrote it (`_moved`), and its last write's result."""
    docs: dict[tuple[str, str], Doc] = {}
    pending: dict[int, dict[tuple[str, str], Doc]] = {}
    for entry in read.entries:
        kind = entry.get("t")
        if kind == "before":
            mine: dict[tuple[str, str], Doc] = {}
            for d in entry["docs"]:
                key = (d["i"], d["id"])
                doc = docs.get(key)
                moved = True if doc is None else _moved(doc.expect, d)
                if doc is None or moved:  # new to the run, or someone else's since: this image
                    doc = docs[key] = Doc(
                        d["i"], d["id"], d.get("urn", ""), d["found"], journal.source_of(d), d.get("raw")
                    )
                elif moved is None:
                    doc.unsure = True
                doc.op, doc.wrote, doc.version, doc.status = d["op"], d.get("wrote"), None, None
                doc.expect = _imaged_as(d)
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
                    doc.expect = _written_as(doc.expect, d, doc.op == "delete")
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


def _imaged_as(d: dict[str, Any]) -> tuple[Any, ...]:
    """Before the write's result is known: as imaged, or as the write made it (absent after a
    delete, the bytes it sent; a replay's: whatever the consumer made of it)."""
    if d["op"] == "delete":
        return (_state(d), ABSENT)
    return (_state(d), "d:" + d["wrote"] if d.get("wrote") else UNSURE)


def _written_as(expect: tuple[Any, ...], d: dict[str, Any], delete: bool) -> tuple[Any, ...]:
    """Once the write's result is journaled: the pair it got (absent after a delete); as imaged if
    it failed (a refused write changed nothing); unchanged if it was to be retried (it may land)."""
    if d["s"] < 300:
        if delete:
            return (ABSENT,)
        return (tuple(d["v"]),) if d.get("v") else expect[1:]
    return expect if d["s"] in RETRY_STATUSES else expect[:1]


def _moved(expect: tuple[Any, ...], d: dict[str, Any]) -> bool | None:
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


def _now(search: SearchIndex, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Any]:
    by_index: dict[str, list[str]] = {}
    for index, doc_id in keys:
        by_index.setdefault(index, []).append(doc_id)
    out: dict[tuple[str, str], Any] = {}
    for index, ids in by_index.items():
        for doc_id, found in read_versioned(search, index, ids).items():
            out[(index, doc_id)] = found
    return out


Since = dict[tuple[str, str, tuple[int, int]], tuple[tuple[int, int], str]]


def _plan(doc: Doc, now: Any, since: Since | None = None) -> tuple[str, str, BulkItem | None]:
    """What to do with one document: (action, why, the write that puts it back). `since`: the
    writes of the runs journaled after it on its target (`_later_writes`)."""
    source, version, raw = now if now is not None else (None, None, None)
    if (source is not None) == doc.found and (source is None or source == doc.source):
        return "already as before", "", None
    if doc.unsure:
        return "refused", UNSURE_WHY, None
    if doc.status is not None and not doc.landed:
        return "not written", f"the repair's write failed ({doc.status}): nothing to take back", None
    written = doc.status is not None and doc.status < 300
    ours = False
    if doc.op == "delete" and (written or doc.status is None):  # confirmed, or killed mid-bulk
        ours = source is None
    elif written:
        ours = version is not None and version == doc.version
        if not ours and (later := _later_run(doc, version, since or {})) is not None:
            if journal.digest(raw if raw is not None else dumps(source)) != doc.wrote:
                return "refused", f"written since by the later run {later}: undo it first", None
            ours = True  # as the run left it: written again the same (resumed), or put back by an undo
    elif doc.status is None and source is not None and doc.wrote is not None:
        # no result journaled (killed during the bulk): ours only if it holds what we sent
        ours = version is not None and journal.digest(raw if raw is not None else dumps(source)) == doc.wrote
    if not ours:
        return "refused", _why_refused(doc, source, version, written), None
    if doc.found:
        op = "index" if source is not None else "create"
        raw_before = doc.raw.encode("utf-8") if doc.raw is not None else None
        if_seq = version if source is not None else None
        item = BulkItem(op, doc.index, doc.doc_id, doc.urn, doc.source, if_seq=if_seq, raw=raw_before)
        return "put back", "", item
    return "deleted", "", BulkItem("delete", doc.index, doc.doc_id, doc.urn, if_seq=version)


def _later_run(doc: Doc, version: Any, since: Since) -> str | None:
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


def _later_writes(directory: Path, read: journal.JournalRead, keys: set[tuple[str, str]]) -> Since:
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


def _why_refused(doc: Doc, source: Any, version: Any, written: bool) -> str:
    if doc.status is None and doc.op == "replay":
        return (
            "the replay ended before the consumer's writes were read back: "
            "they cannot be told from anyone else's"
        )
    if doc.status is None:
        return "the repair was killed before its write was confirmed, and the document is not what it wrote"
    if source is None:
        return "deleted since the repair by someone else"
    if doc.op == "delete":
        return "written again since the repair deleted it"
    ours = f"seq_no {doc.version[0]}, term {doc.version[1]}" if doc.version else "no version"
    now = f"seq_no {version[0]}, term {version[1]}" if version else "no version"
    return f"written since the repair by someone else (now {now}; the repair's write got {ours})"


def undo(
    search: SearchIndex, path: Path, apply: bool, directory: Path, break_stale_lock: bool = False
) -> UndoOutcome:
    """Take back the run journaled in `path` (a dry run unless `apply`), holding the lock of the
    target the run held (a repair of it running meanwhile: exit 6)."""
    read = journal.read(path)
    if not read.header:
        raise ConfigError(f"{path} is not a repair journal (no header)")
    locks = _locks(read)
    with ExitStack() as held:
        for entry in locks if apply else []:
            lock = Lock(Path(entry["dir"]), entry["key"])
            lock.acquire(break_stale_lock)
            held.callback(lock.release)
        return _undo(search, read, apply, directory, locks)


def _locks(read: journal.JournalRead) -> list[dict[str, Any]]:
    """The targets' locks the run held, each once (a federation's run holds one per store)."""
    seen = {(e["dir"], e["key"]): e for e in read.entries if e.get("t") == "lock"}
    return [seen[k] for k in sorted(seen)]


def _undo(
    search: SearchIndex, read: journal.JournalRead, apply: bool, directory: Path, locks: list[dict[str, Any]]
) -> UndoOutcome:
    path = read.path
    run = str(read.header["run"])
    out = UndoOutcome(run, apply, str(path), torn=read.torn, ended=read.ended)
    docs = documents(read)
    header = {"mode": "undo", "undoes": run, "target": read.header.get("target", {})}
    opened = journal.Journal.start(directory, header, kind="undo") if apply else None
    if opened is not None:  # an undo of the undo holds them too
        for entry in locks:
            opened.locked(entry["dir"], entry["key"])
    with journal.journaling(opened):
        writer = IndexWriter(search)
        keys = list(docs)
        since = _later_writes(directory, read, set(keys))
        for start in range(0, len(keys), BATCH):
            _undo_batch(search, writer, [docs[k] for k in keys[start : start + BATCH]], out, since)
        _undo_aliases(writer, read, out)
        if apply:
            writer.refresh_written()
    out.undo_run = opened.run if opened is not None and opened.wrote else None
    return out


def _undo_batch(
    search: SearchIndex, writer: IndexWriter, docs: list[Doc], out: UndoOutcome, since: Since
) -> None:
    now = _now(search, [(d.index, d.doc_id) for d in docs])
    writes: list[BulkItem] = []
    planned: dict[tuple[str, str], Taken] = {}
    for doc in docs:
        action, why, item = _plan(doc, now.get((doc.index, doc.doc_id)), since)
        taken = Taken(doc.index, doc.doc_id, doc.urn, action, why)
        if item is None:
            (out.refused if action == "refused" else out.unchanged).append(taken)
            continue
        writes.append(item)
        planned[(doc.index, doc.doc_id)] = taken
    if not out.applied:
        out.restored += planned.values()
        return
    failures = {(f.item.index, f.item.doc_id): f for f in writer.bulk(writes)}
    for key, taken in planned.items():
        failure = failures.get(key)
        if failure is None:
            out.restored.append(taken)
        elif failure.status == 409:
            taken.action, taken.why = "refused", "written by someone else while the undo ran"
            out.refused.append(taken)
        else:
            taken.action, taken.why = "failed", f"{failure.status}: {failure.reason}"
            out.failed.append(taken)


def _undo_aliases(writer: IndexWriter, read: journal.JournalRead, out: UndoOutcome) -> None:
    """Each swap taken back, the last first, whole or not at all (one `_aliases` request): every
    alias it moved back onto the indices it pointed at. An alias shared by other indices (an
    OpenMetadata parent alias, `<clusterAlias>_all`) keeps them: only what the swap removed and
    added is moved back."""
    settled = {e["i"]: e["seq"] for e in read.entries if e.get("t") == "settled"}
    swaps = [e for e in read.entries if e.get("t") == "aliases"]
    for entry in reversed(swaps):
        taken, actions = [], []
        for alias, before in sorted(entry["before"].items()):
            item, undoing = _undo_alias(writer, entry["actions"], alias, before, entry.get("kept", {}))
            taken.append(item)
            actions += undoing
        why = next((f"{t.index}: {t.why}" for t in taken if t.action == "refused"), None)
        if why is None and actions:
            why = _written_since(writer, entry["actions"], settled)
        for t in taken:
            if why is not None and t.action == "put back":
                t.action, t.why = "refused", f"not moved back: {why}"
        out.aliases += taken
        if actions and why is None and out.applied:
            writer.swap(actions)


def _undo_alias(
    writer: IndexWriter, actions: list[dict[str, Any]], alias: str, before: list[str], kept: dict[str, str]
) -> tuple[Taken, list[dict[str, Any]]]:
    """One alias of a swap: what to say, and the actions that move it back. A concrete index the
    swap removed is pointed back at as the copy of it kept before the swap (`kept`): the live name
    that was that index becomes an alias over the copy, another alias it had is put on the copy."""
    dropped = {a["remove_index"]["index"] for a in actions if "remove_index" in a}  # and its aliases
    taken_off = {a["remove"]["index"] for a in actions if "remove" in a and a["remove"]["alias"] == alias}
    removed = sorted(taken_off | (dropped & set(before)))
    added = sorted(a["add"]["index"] for a in actions if "add" in a and a["add"]["alias"] == alias)
    after = sorted((set(before) - set(removed)) | set(added))
    targets = [kept[alias]] if not before and alias in kept else sorted(kept.get(i, i) for i in removed)
    wanted = sorted((set(before) - set(removed)) | set(targets))  # where the undo leaves it
    taken = Taken(alias, "", "", "refused")
    now, is_alias = writer.concrete(alias)
    now = sorted(now) if is_alias else []
    if now == wanted:
        taken.action = "already as before"
    elif not before and alias not in kept:
        taken.why = "it was a concrete index the swap removed, with no copy kept: nothing to point it back at"
    elif now != after:
        taken.why = f"moved since by someone else (now on {', '.join(now) or 'nothing'})"
    elif gone := [i for i in targets if not writer.concrete(i)[0]]:
        taken.why = f"the index it pointed at ({', '.join(gone)}) no longer exists"
    else:
        taken.action, taken.why = "put back", f"{', '.join(added)} -> {', '.join(targets)}"
        if not before:
            taken.why += (
                f" (the copy of the concrete index {alias} kept before the swap: {alias} becomes an "
                "alias over it, no longer a concrete index)"
            )
        back = [{"remove": {"index": i, "alias": alias}} for i in added]
        return taken, back + [{"add": {"index": i, "alias": alias}} for i in targets]
    return taken, []


def _written_since(
    writer: IndexWriter, actions: list[dict[str, Any]], settled: dict[str, dict[str, int]]
) -> str | None:
    """Why not, when an index the swap put in service was written after the rebuild left it (its
    shards' max `_seq_no` moved): moving the aliases back would hide those writes."""
    for index in sorted({a["add"]["index"] for a in actions if "add" in a} & settled.keys()):
        now = writer.max_seq_nos(index)
        moved = sum(max(0, now.get(shard, -1) - seq) for shard, seq in settled[index].items())
        if moved:
            return (
                f"{index} was written since the rebuild ({moved} writes after it, anyone's): moving the "
                "aliases back would hide them; repair again instead"
            )
    return None


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
    expect: dict[int, tuple[Any, ...]] = {}  # and what it may be at its next image (`_moved`)
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
    fresh = known is None or _moved(expect[key], d) is True
    expect[key] = _imaged_as(d)
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
    expect[key] = _written_as(expect[key], d, bool(packed & _DELETE))
    if change is not None:
        change.status, change.op = d["s"], d.get("op", change.op)
        change.landed = change.landed or d["s"] < 300
        change.version = tuple(d["v"]) if d.get("v") else None  # type: ignore[assignment]
