"""Records put aside on disk between the scan engine's steps, so that its memory is flat in them.

A scan after a search restore finds some 13 differences an entity (1.36M on a 100k catalog, some
13M on a million): the join's candidates, then their verdicts, each go to a `Spill` as they are
made and come back as a stream, as often as a step needs to read them again. Records are pickled
a block at a time (what was written comes back exactly, the engine's own dataclasses) into an
anonymous temporary file (`tempfile.TemporaryFile`: no name on Linux, mode 0600, gone when closed
or when the process dies, so a killed scan leaves nothing behind).

A spill given a `key` comes back in the key's order: records that arrive in order (DataHub's join
yields its findings in urn order) are read back as written; otherwise each `RUN` records are
sorted in memory and written as a run, and the runs are merged when read (stable: records with
equal keys come back in the order they were added).
"""

from __future__ import annotations

import heapq
import pickle
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, Generic, TypeVar

T = TypeVar("T")

BLOCK = 2_000  # records pickled together (one dumps per block: far cheaper than one per record)
RUN = 100_000  # records sorted in memory at a time when they do not arrive in order
PROTOCOL = pickle.HIGHEST_PROTOCOL


class Spill(Generic[T]):
    """An append-only sequence of records on disk, read back (in `key` order, if given) any number
    of times. `extend`/`append` add, `len()` counts, iterating reads; `close()` lets the file go."""

    def __init__(self, key: Callable[[T], Any] | None = None, directory: str | None = None) -> None:
        self.key = key
        self.directory = directory
        self._file: IO[bytes] | None = None
        self._buffer: list[T] = []
        self._runs: list[list[tuple[int, int]]] = []  # per run: its blocks (offset, length)
        self._blocks: list[tuple[int, int]] = []  # the blocks of the run being written (in order)
        self._last: Any = None  # the key of the last record added
        self._ordered = True  # every record so far came in key order
        self.count = 0

    # -- writing ------------------------------------------------------------------------------
    def append(self, record: T) -> None:
        if self.key is not None and self._ordered:
            k = self.key(record)
            if self.count and k < self._last:
                self._ordered = False
            self._last = k
        self._buffer.append(record)
        self.count += 1
        if len(self._buffer) >= (BLOCK if self._ordered else RUN):
            self._flush()

    def extend(self, records: Iterable[T]) -> None:
        for r in records:
            self.append(r)

    def _flush(self) -> None:
        """The buffer to disk: a run of its own once the records are out of order (sorted first)."""
        if not self._buffer:
            return
        records, self._buffer = self._buffer, []
        if not self._ordered:
            assert self.key is not None
            records.sort(key=self.key)  # stable
            if self._blocks:  # what came in order before is a run of its own
                self._runs.append(self._blocks)
                self._blocks = []
        blocks = self._blocks
        for i in range(0, len(records), BLOCK):
            blocks.append(self._write(records[i : i + BLOCK]))
        if not self._ordered:
            self._runs.append(blocks)
            self._blocks = []

    def _write(self, records: list[T]) -> tuple[int, int]:
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="auditor-spill-", dir=self.directory)  # noqa: SIM115
        data = pickle.dumps(records, PROTOCOL)
        f = self._file
        f.seek(0, 2)
        offset = f.tell()
        f.write(data)
        return offset, len(data)

    # -- reading ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def __iter__(self) -> Iterator[T]:
        """Every record, in key order (when a key was given), the buffer's last: the writes so far
        are flushed first, so a spill can be read while it is still being added to."""
        if self._ordered:
            if self._buffer and (self._blocks or self._runs):
                self._flush()
            yield from self._read_blocks(list(self._blocks))
            yield from list(self._buffer)
            return
        self._flush()
        runs = [self._read_blocks(r) for r in self._runs]
        if len(runs) == 1:
            yield from runs[0]
            return
        assert self.key is not None
        yield from heapq.merge(*runs, key=self.key)

    def _read_blocks(self, blocks: list[tuple[int, int]]) -> Iterator[T]:
        for offset, length in blocks:
            f = self._file
            assert f is not None
            f.seek(offset)
            data = f.read(length)
            yield from pickle.loads(data)  # noqa: S301 (our own file, written above)

    def close(self) -> None:
        """Let the file go (the spill reads as empty after)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._buffer, self._runs, self._blocks, self.count = [], [], [], 0

    def __enter__(self) -> Spill[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
