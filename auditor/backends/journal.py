"""A repair's write journal: every document it writes or deletes, as it was before and what the
write got, appended and fsynced before (and after) each bulk, so that `auditor rebuild undo` can
put the before-images back, even of a repair killed half-way.

One file per run (`<run id>.journal`) in the journal directory. One entry per line:
`<crc32 of the JSON, 8 hex> <JSON>`; a line whose checksum does not match, or that has no end,
is where the journal stops being readable (a kill during the write leaves the last line torn):
the reader returns what came before it and says so. The entries:

- `run`: the header (run id, when, what repair, on which target; `undoes`: the run an undo undoes);
- `before`: a bulk's documents as they were (`found` false: there was none), with their
  `_seq_no`/`_primary_term`, and for each item the op and a digest of the bytes it writes;
- `after`: the `_seq_no`/`_primary_term` each write got (an item that failed has none);
- `created`, `aliases`, `dropped`: a full rebuild's fresh index, the aliases its swap moved
  (with where each pointed before; `kept`: for a concrete index the swap removed, the copy of it
  kept before the swap, `{removed index: copy}`, which its undo moves the name onto) and an
  index deleted.
- `lock`: the target's lock the repair held (its undo takes it too);
- `settled`: a full rebuild's fresh index once served and caught up, each primary shard's max
  `_seq_no` (a write since, anyone's, moves it: its undo then refuses to move the aliases back);
- `verified`: the repair's verification, once done (`ok`, its exit code and why not);
- `end`: the run closed its journal (a run killed mid-way has none).

Each document's before-image keeps its `_source` as the bytes the cluster holds (`raw`, from
raw_sources.py), or, where those could not be had, the parsed source (`src`).

Documents written into an index the run itself created are not imaged one by one (there was
nothing before them: the undo of a full rebuild is its alias put back).

`IndexWriter` finds the journal of the repair it writes for through `active()`, set by
`journaling()` around the whole repair (`auditor.api.rebuild`): no executor has to remember it.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import time
import zlib
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from auditor.backends.bulk_json import dumps
from auditor.backends.raw_sources import read_versioned

if TYPE_CHECKING:
    from auditor.backends.index_writer import BulkItem
    from auditor.backends.search import SearchIndex

SUFFIX = ".journal"
WRITES = frozenset({"before", "created", "aliases", "dropped"})  # entries that mean a run wrote
_ACTIVE: ContextVar[Journal | None] = ContextVar("auditor_journal", default=None)


def active() -> Journal | None:
    """The journal of the repair running in this context (None: nothing journals)."""
    return _ACTIVE.get()


@contextmanager
def journaling(journal: Journal | None) -> Iterator[Journal | None]:
    """Every IndexWriter made inside the block journals into `journal`."""
    token = _ACTIVE.set(journal)
    try:
        yield journal
    finally:
        _ACTIVE.reset(token)
        if journal is not None:
            journal.close()


def new_run_id(kind: str = "rebuild") -> str:
    """Sortable by time, unique across processes: `20261207T092400Z-rebuild-1a2b3c`."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{kind}-{secrets.token_hex(3)}"


def digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()[:32]


def _line(entry: dict[str, Any]) -> bytes:
    body = dumps(entry)
    return b"%08x " % zlib.crc32(body) + body + b"\n"


class Journal:
    """An append-only journal file, written through and fsynced per batch of entries."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.run = path, str(header["run"])
        # held for the run, closed by close(); readable by its owner only (it holds documents)
        self._file = os.fdopen(os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600), "ab")
        self._batch = 0
        self.wrote = False  # anything past the header (a run that wrote nothing leaves no file)
        self.created: set[str] = set()  # indices this run created: their writes are not imaged
        self.append({"t": "run", **header})

    @classmethod
    def start(cls, directory: Path, header: dict[str, Any], kind: str = "rebuild") -> Journal:
        run = new_run_id(kind)
        header = {"run": run, "at": datetime.now(UTC).isoformat(), "pid": os.getpid(), **header}
        return cls(directory / f"{run}{SUFFIX}", header)

    def append(self, *entries: dict[str, Any]) -> None:
        """Write the entries and make them durable (one fsync for them all)."""
        if self._file.closed:
            return
        self.wrote = self.wrote or any(e.get("t") in WRITES for e in entries)
        self._file.write(b"".join(_line(e) for e in entries))
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file.closed:
            return
        if not self.wrote:  # a dry run's, or a repair that found nothing to write
            self._file.close()
            self.path.unlink(missing_ok=True)
            return
        self.append({"t": "end", "at": datetime.now(UTC).isoformat()})
        self._file.close()

    def imaged(self, docs: list[dict[str, Any]]) -> int:
        """Documents as they are before the run writes them (`image()` each), durably; the
        batch number their results are filed under."""
        self._batch += 1
        self.append({"t": "before", "b": self._batch, "docs": docs})
        return self._batch

    def results(self, batch: int, docs: list[dict[str, Any]]) -> None:
        """What the writes of `batch` got: `{"i", "id", "s": status, "v": [seq_no, term]}` each."""
        self.append({"t": "after", "b": batch, "docs": docs})

    # -- what IndexWriter calls ------------------------------------------------------------
    def before(self, search: SearchIndex, items: Sequence[tuple[BulkItem, bytes]]) -> int:
        """Image the documents `items` are about to write (one real-time multi-get per index),
        durably, before the bulk is sent; the batch number the results are filed under."""
        imaged = [(item, lines) for item, lines in items if item.index not in self.created]
        by_index: dict[str, list[str]] = {}
        for item, _ in imaged:
            by_index.setdefault(item.index, []).append(item.doc_id)
        found = {index: read_versioned(search, index, sorted(set(ids))) for index, ids in by_index.items()}
        docs = []
        for item, lines in imaged:
            entry = image(item.index, item.doc_id, item.urn, item.op, found[item.index].get(item.doc_id))
            if item.op != "delete":  # the document as sent: the action line, then the body
                entry["wrote"] = digest(lines.split(b"\n", 1)[1].rstrip(b"\n"))
            docs.append(entry)
        return self.imaged(docs)

    def after(self, batch: int, sent: Sequence[tuple[BulkItem, bytes]], response: Any) -> None:
        """The `_seq_no`/`_primary_term` each write of the bulk got (a failed one: its status)."""
        body = response.body if hasattr(response, "body") else response
        results = []
        for (item, _), result in zip(sent, body.get("items", []), strict=False):
            if item.index in self.created:
                continue
            outcome = next(iter(result.values()))
            done: dict[str, Any] = {"i": item.index, "id": item.doc_id, "s": int(outcome.get("status", 0))}
            seq, term = outcome.get("_seq_no"), outcome.get("_primary_term")
            if isinstance(seq, int) and isinstance(term, int) and seq >= 0:
                done["v"] = [seq, term]
            results.append(done)
        self.results(batch, results)

    def index_created(self, index: str, like: str) -> None:
        self.created.add(index)
        self.append({"t": "created", "i": index, "like": like})

    def aliases_moved(
        self, actions: list[dict[str, Any]], before: dict[str, list[str]], kept: dict[str, str] | None = None
    ) -> None:
        """A swap: its actions and, for each alias it names, the indices it pointed at before;
        `kept`: for each concrete index it removes, the copy kept of it (rebuild/kept.py)."""
        entry: dict[str, Any] = {"t": "aliases", "actions": actions, "before": before}
        if kept:
            entry["kept"] = kept
        self.append(entry)

    def locked(self, directory: str, key: str) -> None:
        """The target's lock the run held (rebuild/guard.py): its undo holds it too."""
        self.append({"t": "lock", "dir": directory, "key": key})

    def index_dropped(self, index: str) -> None:
        self.append({"t": "dropped", "i": index})

    def settled(self, index: str, seq_nos: dict[str, int]) -> None:
        """A full rebuild's index once served and caught up: each primary shard's max `_seq_no`."""
        self.append({"t": "settled", "i": index, "seq": seq_nos})

    def verified(self, ok: bool, exit_code: int, detail: str = "") -> None:
        """The repair's verification, once it is done (a run killed before has none)."""
        self.append({"t": "verified", "ok": ok, "exit_code": exit_code, "why": detail})


def image(index: str, doc_id: str, urn: str, op: str, found: Any) -> dict[str, Any]:
    """One document's before-image entry: `found` is `(source, (seq_no, term)[, its bytes])`
    (raw_sources.read_versioned), or None (absent). The bytes are kept as text (`raw`, JSON is
    UTF-8): an undo writes them back as they were; the parsed source (`src`) only without them."""
    entry: dict[str, Any] = {"i": index, "id": doc_id, "op": op, "urn": urn, "found": found is not None}
    if found is not None:
        source, version, *raw = found
        entry["v"] = list(version) if version else None
        try:
            entry["raw"] = raw[0].decode("utf-8")
        except (IndexError, AttributeError, UnicodeDecodeError):  # no bytes: the parsed source
            entry["src"] = source
    return entry


def source_of(entry: dict[str, Any]) -> dict[str, Any] | None:
    """A before-image entry's document, parsed (None: there was none)."""
    if not entry.get("found"):
        return None
    return entry["src"] if "src" in entry else orjson.loads(entry["raw"])


@dataclass
class JournalRead:
    """A journal as far as it can be read: its entries, and where and why it stopped early."""

    path: Path
    entries: list[dict[str, Any]] = field(default_factory=list)
    torn: str | None = None  # why the rest was not read (a torn or corrupt line), None: read whole

    @property
    def header(self) -> dict[str, Any]:
        return self.entries[0] if self.entries and self.entries[0].get("t") == "run" else {}

    @property
    def ended(self) -> bool:
        return bool(self.entries) and self.entries[-1].get("t") == "end"


def read(path: Path) -> JournalRead:
    """Every entry up to the first line that is torn (no end: killed mid-write) or whose checksum
    fails (corrupt); what follows such a line is not trusted."""
    out = JournalRead(path)
    stopped: list[str] = []
    out.entries = list(entries(path, stopped))
    out.torn = stopped[0] if stopped else None
    return out


def entries(path: Path, stopped: list[str] | None = None) -> Generator[dict[str, Any], None, None]:
    """`read`'s entries one line at a time (a run of a million documents is never held whole);
    where the journal stops early, why is appended to `stopped`."""
    with path.open("rb") as f:
        number = 0
        for line in f:
            number += 1
            whole = line.endswith(b"\n")
            why = _unreadable(line[:-1] if whole else line, not whole)
            if why is not None:
                left = sum(1 for _ in f)
                after = f"; {left} line(s) after it not read" if left > 0 else ""
                if stopped is not None:
                    stopped.append(f"line {number} {why}{after}")
                return
            yield orjson.loads(line[9:])


def header(path: Path) -> dict[str, Any]:
    """A journal's header alone (its first line), {} if it has none or cannot be read."""
    reading = entries(path)
    try:
        first = next(reading, {})
    except OSError:  # not ours to read (0600), or pruned meanwhile
        return {}
    finally:
        reading.close()
    return first if first.get("t") == "run" else {}


def _unreadable(line: bytes, last: bool) -> str | None:
    if last:
        return "is torn (no end of line: the process was killed while writing it)"
    if len(line) < 10 or line[8:9] != b" ":
        return "is not a journal entry"
    try:
        if int(line[:8], 16) != zlib.crc32(line[9:]):
            return "fails its checksum"
        orjson.loads(line[9:])
    except ValueError:
        return "fails its checksum"
    return None


def runs(directory: Path) -> list[Path]:
    """The journal files of `directory`, oldest first (run ids sort by time)."""
    if not directory.is_dir():
        return []
    return sorted(directory.glob(f"*{SUFFIX}"))


def find(directory: Path, run: str) -> Path | None:
    """A run's journal by its id (or a unique start of it)."""
    exact = directory / f"{run}{SUFFIX}"
    if exact.exists():
        return exact
    matches = [p for p in runs(directory) if p.name.startswith(run)]
    return matches[0] if len(matches) == 1 else None


def prune(directory: Path, keep_days: float | None, now: float | None = None) -> list[Path]:
    """Journals older than `keep_days` deleted (None or below 0: kept forever); those deleted."""
    if keep_days is None or keep_days < 0:
        return []
    cutoff = (now if now is not None else time.time()) - timedelta(days=keep_days).total_seconds()
    gone = []
    for path in runs(directory):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                gone.append(path)
        except OSError:
            continue
    return gone
