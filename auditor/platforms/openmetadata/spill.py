"""The scan's two sides put aside on disk, so that each is read at its own pace, at the same time.

The documents arrive in `_doc` order (`_id` cannot be sorted on in Elasticsearch 8+): they go
into a temporary SQLite file and come back in (`_id`, index) byte order. The rows arrive in id
byte order already: those read before their type's documents are ready go into a temporary
file and come back in the same order, followed by the rest, read as the join goes.
Each item carries the key of its compared fields (checks/openmetadata `row_key`, `doc_key`):
the join compares the keys and decodes an item only when they differ. A record is pickled
(what was read comes back exactly, whatever it holds) into a file only this process made and
reads (mkstemp: mode 0600, removed after). Memory stays flat whatever the catalog: what waits,
waits on disk.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from auditor.platforms.openmetadata.records import OmDoc, OmRow

BATCH = 2000
PROTOCOL = pickle.HIGHEST_PROTOCOL


@dataclass(frozen=True, slots=True)
class Spilled:
    """One item read back: its id, its index (a doc's), its key and its record, still encoded
    (a doc's: where to find it, read only when asked for)."""

    id: str
    index: str
    key: bytes | None
    record: bytes | Callable[[], bytes]

    def _record(self) -> bytes:
        return self.record() if callable(self.record) else self.record

    def row(self) -> OmRow:
        return OmRow(*pickle.loads(self._record()))  # noqa: S301 (our own file)

    def doc(self) -> OmDoc:
        return OmDoc(self.id, self.index, pickle.loads(self._record()))  # noqa: S301


@dataclass(frozen=True, slots=True)
class Keyed:
    """A row read while its documents were ready: its key, the row itself (nothing put aside)."""

    id: str
    key: bytes | None
    item: OmRow

    def row(self) -> OmRow:
        return self.item


def _temp(prefix: str, suffix: str, directory: str | None) -> str:
    fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    os.close(fd)
    return path


class SortedDocs:
    """Documents written in any order, read back in (`_id`, index) byte order."""

    def __init__(self, directory: str | None = None) -> None:
        self.path = _temp("auditor-om-", ".sqlite", directory)
        self.db = sqlite3.connect(self.path, check_same_thread=False)  # written by the docs' thread
        self.db.execute("PRAGMA journal_mode = OFF")
        self.db.execute("PRAGMA synchronous = OFF")
        self.db.execute("CREATE TABLE d (id TEXT NOT NULL, idx TEXT NOT NULL, k BLOB, src BLOB NOT NULL)")
        self.batch: list[tuple[str, str, bytes | None, bytes]] = []
        self.count = 0

    def add(self, doc_id: str, index: str, key: bytes | None, source: dict[str, Any]) -> None:
        self.batch.append((doc_id, index, key, pickle.dumps(source, PROTOCOL)))
        self.count += 1
        if len(self.batch) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self.batch:
            self.db.executemany("INSERT INTO d VALUES (?, ?, ?, ?)", self.batch)
            self.batch.clear()

    def sort(self) -> SortedDocs:
        self.flush()
        self.db.execute("CREATE INDEX d_id ON d (id, idx, k)")  # sorted once, then read in order
        self.db.commit()
        return self

    def _source(self, rowid: int) -> Callable[[], bytes]:
        return lambda: self.db.execute("SELECT src FROM d WHERE rowid = ?", (rowid,)).fetchone()[0]

    def __iter__(self) -> Iterator[Spilled]:
        for doc_id, index, key, rowid in self.db.execute("SELECT id, idx, k, rowid FROM d ORDER BY id, idx"):
            yield Spilled(doc_id, index, key, self._source(rowid))

    def close(self) -> None:
        self.db.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


class RowFile:
    """Rows written in id order, read back in that order."""

    def __init__(self, directory: str | None = None) -> None:
        self.path = _temp("auditor-om-rows-", ".pickle", directory)
        self.out: Any = open(self.path, "wb")  # noqa: SIM115 (closed by close)
        self.count = 0

    def add(self, row: OmRow, key: bytes | None) -> None:
        record = (row.id, row.json, row.updated_at, row.deleted, row.owners, row.tags, row.domains)
        pickle.dump((row.id, key, pickle.dumps(record, PROTOCOL)), self.out, PROTOCOL)
        self.count += 1

    def __iter__(self) -> Iterator[Spilled]:
        self.out.close()
        with open(self.path, "rb") as lines:
            for _ in range(self.count):
                row_id, key, record = pickle.load(lines)  # noqa: S301 (our own file)
                yield Spilled(row_id, "", key, record)

    def close(self) -> None:
        self.out.close()
        if os.path.exists(self.path):
            os.unlink(self.path)
