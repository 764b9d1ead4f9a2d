"""OpenMetadata's documents spilled by a reader process (auditor/backends/search_readers.py).

A whole-table scan scrolls every entity type's index into a sorted spill while the rows stream
(auditor/platforms/openmetadata/join.py). In a thread, that scroll, its JSON, the comparison keys
and the sorted runs all take the interpreter lock from the join; in a process of their own they
take the other core. The scan makes each type's spill file (named for the scan's process, so that
a sweep never takes it for a dead process's), the reader writes the sorted runs into it and says
where they are, type after type; each type's future is ready as soon as its runs are.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from auditor.backends.search_readers import messages
from auditor.platforms.openmetadata.fields import DOC_SOURCE, doc_values, key_of
from auditor.platforms.openmetadata.spill import SortedDocs, temp_file


@dataclass(frozen=True)
class SpillJob:
    """The reader's work: each (entity type, index or alias, spill file) in turn."""

    spills: tuple[tuple[str, str, str], ...]
    few: frozenset[str] = frozenset()  # the names a plain search reads whole (OmSearch._scroll)

    def __call__(self, search: Any, send: Callable[[tuple[Any, ...]], None]) -> None:
        from auditor.platforms.openmetadata.search import OmSearch

        om = OmSearch(search)
        for entity_type, name, path in self.spills:
            read = om.docs_read
            docs = SortedDocs(path=path)
            for doc_id, index, src in om._scroll(name, DOC_SOURCE, name in self.few):
                docs.add(doc_id, index, key_of(doc_values(src)), src)  # checks' doc_key
            docs.sort()
            send(("spilled", entity_type, docs.runs, docs.count, om.docs_read - read))


class SpillsApart:
    """The futures of every type's spill, filled by one reader process (`join()` when done)."""

    def __init__(
        self,
        om: Any,
        plans: Sequence[tuple[str, str]],
        stop: threading.Event,
        few: frozenset[str] = frozenset(),
    ) -> None:
        self.futures: dict[str, Future[SortedDocs]] = {t: Future() for t, _ in plans}
        # absolute: the reader process runs in another working directory
        self.paths = {t: os.path.abspath(temp_file("docs", ".runs", om.spill_dir)) for t, _ in plans}
        job = SpillJob(tuple((t, name, self.paths[t]) for t, name in plans), few)
        self.thread = threading.Thread(
            target=self._run, args=(om, job, stop), daemon=True, name="auditor-om-reader"
        )
        self.thread.start()

    def _run(self, om: Any, job: SpillJob, stop: threading.Event) -> None:
        try:
            for _, entity_type, runs, count, read in messages(om.search, job, stop=stop):
                om.docs_read += read
                om.search.docs_read += read
                docs = SortedDocs.written(self.paths[entity_type], runs, count)
                if not self.futures[entity_type].set_running_or_notify_cancel():
                    docs.close()  # given up on meanwhile
                    continue
                self.futures[entity_type].set_result(docs)
        except BaseException as exc:  # every type not spilled yet fails with the reader's error
            for future in self.futures.values():
                if not future.done() and future.set_running_or_notify_cancel():
                    future.set_exception(exc)
        finally:
            for entity_type, future in self.futures.items():
                if not future.done():
                    future.cancel()
                if future.cancelled() or future.exception() is not None:
                    _unlink(self.paths[entity_type])

    def join(self) -> None:
        self.thread.join()


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
