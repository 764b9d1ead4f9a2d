"""The scan's two sides put aside on disk, so that each is read at its own pace, at the same time.

The documents arrive in `_doc` order (`_id` cannot be sorted on in Elasticsearch 8+): they go
into a temporary file in sorted runs and come back merged, in (`_id`, index) byte order. The rows arrive in id
byte order already: those read before their type's documents are ready go into a temporary
file and come back in the same order, followed by the rest, read as the join goes.
Each item carries the key of its compared fields (checks/openmetadata `row_key`, `doc_key`):
the join compares the keys and decodes an item only when they differ. A record is pickled
(what was read comes back exactly, whatever it holds) into a file only this process made and
reads (mkstemp: mode 0600, removed after). Memory stays flat whatever the catalog: what waits,
waits on disk. A file's name carries its process's id: a process killed before it removed its
files leaves them behind, and the next scan's first spill removes them (`sweep`).
"""

from __future__ import annotations

import heapq
import os
import pickle
import tempfile
from collections.abc import Iterator
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from orjson import dumps as _json_dumps

from auditor.backends.bulk_json import dumps as json_dumps
from auditor.core.json_guard import loads as json_loads
from auditor.platforms.openmetadata.records import OmDoc, OmRow

if TYPE_CHECKING:
    from auditor.platforms.openmetadata.fields import Key

RUN = 5000  # documents sorted in memory at a time (a few MB)
FAN_IN = 128  # runs merged at once (an open file each); more are merged first, 128 at a time
# items pickled together, one `dump` and one `load` for them all: a call per item cost more than
# the pickling of its few fields (a run read back holds one block a run in memory: FAN_IN x 256)
BLOCK = 256
PROTOCOL = pickle.HIGHEST_PROTOCOL
_BY_ID = itemgetter(0, 1)  # an item's (id, index): the order of the runs and of their merge


class _Deep:
    """A value nested past pickle's recursion limit (a row may be read up to 1,024 levels deep),
    kept as its JSON text: written without recursion, read back by the reader that read it."""

    __slots__ = ("text",)

    def __init__(self, text: bytes) -> None:
        self.text = text

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Deep, (self.text,))


def encode(record: Any) -> bytes:
    """A record (a tuple of fields, or one document source) pickled; a part nested too deep for
    pickle is kept as JSON text instead, so nothing read is refused on its way to disk."""
    try:
        return pickle.dumps(record, PROTOCOL)
    except RecursionError:
        pass
    if isinstance(record, tuple):
        deep = tuple(_Deep(json_dumps(v)) if isinstance(v, dict | list) else v for v in record)
        return pickle.dumps(deep, PROTOCOL)
    return pickle.dumps(_Deep(json_dumps(record)), PROTOCOL)


def encode_source(source: dict[str, Any]) -> bytes:
    """A document's source as its JSON (orjson: a third of pickle's time; the source was decoded
    by orjson, so it writes it back whole), pickled (`encode`) where orjson cannot say it exactly:
    an integer past 64 bits, a lone surrogate, a key that is not a string, a depth past its limit."""
    try:
        return _json_dumps(source)
    except TypeError:  # orjson.JSONEncodeError
        return encode(source)


def decode_source(data: bytes) -> Any:
    """What `encode_source` was given (a pickle starts with its protocol's 0x80, JSON with `{`)."""
    return json_loads(data) if data[:1] == b"{" else decode(data)


def decode(data: bytes) -> Any:
    """What `encode` was given."""
    record = pickle.loads(data)  # noqa: S301 (our own file)
    if isinstance(record, _Deep):
        return json_loads(record.text)
    if isinstance(record, tuple):
        return tuple(json_loads(v.text) if isinstance(v, _Deep) else v for v in record)
    return record


class Spilled:
    """One item read back: its id, its index (a doc's), its key and its record, still encoded.
    A plain class, not a frozen dataclass: one is made for every document and every row put
    aside, and a frozen dataclass's `__init__` sets each field through `object.__setattr__`."""

    __slots__ = ("id", "index", "key", "record")

    def __init__(self, id: str, index: str, key: Key | None, record: bytes) -> None:  # noqa: A002
        self.id, self.index, self.key, self.record = id, index, key, record

    def __repr__(self) -> str:
        return f"Spilled(id={self.id!r}, index={self.index!r}, key={self.key!r})"

    def row(self) -> OmRow:
        return OmRow(*decode(self.record))

    def doc(self) -> OmDoc:
        return OmDoc(self.id, self.index, decode_source(self.record))


class Keyed:
    """A row read while its documents were ready: its key, the row itself (nothing put aside)."""

    __slots__ = ("id", "key", "item")

    def __init__(self, id: str, key: Key | None, item: OmRow) -> None:  # noqa: A002
        self.id, self.key, self.item = id, key, item

    def row(self) -> OmRow:
        return self.item


PREFIX = "auditor-om-"  # every spill file's name: auditor-om-<what>-<pid>-<random><suffix>
_swept: set[str] = set()  # the directories this process has swept


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def sweep(directory: str | None = None) -> list[str]:
    """Remove the spill files of processes that no longer run (a scan killed mid-way); another
    user's files and a live process's are left alone. Returns the paths removed."""
    where = directory or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = os.listdir(where)
    except OSError:
        return removed
    for name in names:
        parts = name.split("-")
        if not name.startswith(PREFIX) or len(parts) < 5 or not parts[3].isdigit():
            continue
        if int(parts[3]) == os.getpid() or _alive(int(parts[3])):
            continue
        path = os.path.join(where, name)
        try:
            os.unlink(path)
            removed.append(path)
        except OSError:  # not ours to remove, or gone already
            pass
    return removed


def temp_file(what: str, suffix: str, directory: str | None = None) -> str:
    """A new empty file only this process reads and writes (mode 0600), named for its process;
    the first of a process in a directory sweeps what killed processes left there."""
    where = directory or tempfile.gettempdir()
    if where not in _swept:
        _swept.add(where)
        sweep(where)
    fd, path = tempfile.mkstemp(prefix=f"{PREFIX}{what}-{os.getpid()}-", suffix=suffix, dir=where)
    os.close(fd)
    return path


class SortedDocs:
    """Documents written in any order, read back in (`_id`, index) byte order: an external merge
    sort. Each run of RUN documents is sorted in memory and written to one temporary file; the
    runs are read back side by side (one buffered reader each, on the same file) and merged,
    at most FAN_IN at a time (past that, merged into longer runs first).
    Pure Python on purpose: a SQLite read gives up the GIL for every row and, beside two busy
    threads, waits each time to get it back."""

    def __init__(self, directory: str | None = None, path: str | None = None) -> None:
        # `path`: a file made by `temp_file` in another process (the scan's, for its reader)
        self.path = path or temp_file("docs", ".runs", directory)
        self.out: Any = open(self.path, "wb")  # noqa: SIM115 (closed by close)
        self.batch: list[tuple[str, str, Key | None, bytes]] = []
        self.runs: list[tuple[int, int]] = []  # (offset, count) of each sorted run
        self.count = 0
        # each index's name as one string: pickled once a block (the memo), read back as one
        self.names: dict[str, str] = {}

    @classmethod
    def written(cls, path: str, runs: list[tuple[int, int]], count: int) -> SortedDocs:
        """The sorted runs another process wrote to `path` (this one's file), to be read back."""
        docs = cls.__new__(cls)
        docs.path, docs.runs, docs.count, docs.batch, docs.names = path, runs, count, [], {}
        docs.out = None
        return docs

    def add(self, doc_id: str, index: str, key: Key | None, source: dict[str, Any]) -> None:
        self.batch.append((doc_id, self.names.setdefault(index, index), key, encode_source(source)))
        self.count += 1
        if len(self.batch) >= RUN:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            self.batch.sort(key=_BY_ID)  # str order: the code points', UTF-8's bytes'
            self.runs.append((self.out.tell(), len(self.batch)))
            _write_blocks(self.out, self.batch)
            self.batch.clear()

    def sort(self) -> SortedDocs:
        self.flush()
        while len(self.runs) > FAN_IN:  # a merge holds every run open: so many files at most
            self.out.flush()
            merged, self.runs = self.runs[:FAN_IN], self.runs[FAN_IN:]
            offset, count, block = self.out.tell(), 0, []
            for item in self._merged(merged):
                block.append(item)
                if len(block) >= BLOCK:
                    count += _write_blocks(self.out, block)
                    block = []
            count += _write_blocks(self.out, block)
            self.runs.append((offset, count))
        self.out.close()
        return self

    def _run(self, offset: int, count: int) -> Iterator[tuple[str, str, Key | None, bytes]]:
        with open(self.path, "rb") as run:
            run.seek(offset)
            while count > 0:
                block = pickle.load(run)  # noqa: S301 (our own file)
                count -= len(block)
                yield from block

    def _merged(self, runs: list[tuple[int, int]]) -> Iterator[tuple[str, str, Key | None, bytes]]:
        readers = [self._run(offset, count) for offset, count in runs]
        return heapq.merge(*readers, key=_BY_ID) if len(readers) > 1 else chain(*readers)

    def __iter__(self) -> Iterator[Spilled]:
        for item in self._merged(self.runs):
            yield Spilled(*item)

    def close(self) -> None:
        if self.out is not None:
            self.out.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


def _write_blocks(out: Any, items: list[Any]) -> int:
    """`items` pickled BLOCK at a time (a block read back is a list of them); how many."""
    for at in range(0, len(items), BLOCK):
        pickle.dump(items[at : at + BLOCK], out, PROTOCOL)
    return len(items)


class RowFile:
    """Rows written in id order, read back in that order (BLOCK at a time, as the runs are)."""

    def __init__(self, directory: str | None = None) -> None:
        self.path = temp_file("rows", ".pickle", directory)
        self.out: Any = open(self.path, "wb")  # noqa: SIM115 (closed by close)
        self.count = 0
        self.block: list[tuple[str, Key | None, bytes]] = []

    def add(self, row: OmRow, key: Key | None) -> None:
        record = (
            row.id,
            row.json if row.text is None else row.text,  # the text: decoded again only if read back
            row.updated_at,
            row.deleted,
            row.owners,
            row.tags,
            row.domains,
            row.own_hash,
            row.links,
        )
        self.block.append((row.id, key, encode(record)))
        self.count += 1
        if len(self.block) >= BLOCK:
            _write_blocks(self.out, self.block)
            self.block = []

    def __iter__(self) -> Iterator[Spilled]:
        _write_blocks(self.out, self.block)
        self.block = []
        self.out.close()
        left = self.count
        with open(self.path, "rb") as lines:
            while left > 0:
                block = pickle.load(lines)  # noqa: S301 (our own file)
                left -= len(block)
                for row_id, key, record in block:
                    yield Spilled(row_id, "", key, record)

    def close(self) -> None:
        self.out.close()
        if os.path.exists(self.path):
            os.unlink(self.path)
