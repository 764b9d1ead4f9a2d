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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor.backends import journal
from auditor.backends.bulk_json import dumps
from auditor.backends.index_writer import BulkItem, IndexWriter
from auditor.backends.raw_sources import read_versioned
from auditor.core.undo import Taken, UndoOutcome
from auditor.errors import ConfigError
from auditor.rebuild.checkpoint import Lock
from auditor.rebuild.undo_images import Doc, Since, documents, later_run, later_writes

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


def _now(search: SearchIndex, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Any]:
    by_index: dict[str, list[str]] = {}
    for index, doc_id in keys:
        by_index.setdefault(index, []).append(doc_id)
    out: dict[tuple[str, str], Any] = {}
    for index, ids in by_index.items():
        for doc_id, found in read_versioned(search, index, ids).items():
            out[(index, doc_id)] = found
    return out


def _plan(doc: Doc, now: Any, since: Since | None = None) -> tuple[str, str, BulkItem | None]:
    """What to do with one document: (action, why, the write that puts it back). `since`: the
    writes of the runs journaled after it on its target (`later_writes`)."""
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
        if not ours and (later := later_run(doc, version, since or {})) is not None:
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
        since = later_writes(directory, read, set(keys))
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
