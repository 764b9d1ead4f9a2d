"""A replay's journal: the documents its MCLs make DataHub's consumer write, imaged before each
page is produced and read again once the consumer has passed what the replay produced.

A Kafka message cannot be taken back: a replay's undo is the documents it caused. Before a page
is produced, each of its urns' entity documents (V2, and V3 where DataHub has one), system-
metadata documents and outgoing edges are imaged into the run's journal, durably (write-ahead).
Once the consumer has passed the replay's offsets, the same documents (and any new one of those
urns) are read again: a document whose `_seq_no`/`_primary_term` moved is journaled as written
by the replay, with the pair it has now (what the undo conditions on); one that kept its pair
was not touched; one that appeared was absent before. A write someone else made to those
documents between the two reads is indistinguishable from the consumer's: the undo treats it as
the replay's (the same window a replay's own verification has).
"""

from __future__ import annotations

from typing import Any

from auditor.backends.journal import Journal, image
from auditor.backends.protocols import Search
from auditor.backends.raw_sources import read_versioned
from auditor.platforms.datahub.naming import (
    document_id,
    document_id_v3,
    entity_index,
    graph_index,
    system_metadata_index,
)
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.urns import entity_type
from auditor.rebuild.datahub.stored import left_behind

Key = tuple[str, str]  # (index, document id)


class ReplayImages:
    """The before- and after-images of what a replay's pages make the consumer write."""

    def __init__(
        self, journal: Journal, search: Search, registry: Registry, prefix: str, v3: dict[str, str]
    ) -> None:
        self.journal, self.search, self.registry, self.prefix, self.v3 = journal, search, registry, prefix, v3
        self.seen: set[str] = set()  # urns imaged (a page produced again is not imaged again)
        # each page: its batch, its urns, and the (index, id) imaged with the version each had
        self.pages: list[tuple[int, list[str], dict[Key, Any]]] = []
        self._exists: dict[str, bool] = {}

    def exists(self, index: str) -> bool:
        if index not in self._exists:
            self._exists[index] = index in self.search.indices(index)
        return self._exists[index]

    def locate(self, urns: list[str]) -> dict[Key, str]:
        """Every document of these urns the consumer writes: (index, id) -> urn."""
        out: dict[Key, str] = {}
        for urn in urns:
            name = self.registry.spelled(entity_type(urn))
            out[(entity_index(name, self.prefix), document_id(urn))] = urn
            if v3 := self.v3.get(name):
                out[(v3, document_id_v3(urn))] = urn
        for index, field in (
            (system_metadata_index(self.prefix), "urn"),
            (graph_index(self.prefix), "source.urn"),
        ):
            if self.exists(index):
                _refresh(self.search, index)
                for urn, ids in left_behind(self.search, index, field, {u: set() for u in urns}).items():
                    out.update(((index, i), urn) for i in ids)
        return out

    def read(self, keys: list[Key]) -> dict[Key, Any]:
        """(source, version) of each key's document now (absent: not in the answer)."""
        by_index: dict[str, list[str]] = {}
        for index, doc_id in keys:
            by_index.setdefault(index, []).append(doc_id)
        out: dict[Key, Any] = {}
        for index, ids in by_index.items():
            for doc_id, found in read_versioned(self.search, index, sorted(set(ids))).items():
                out[(index, doc_id)] = found
        return out

    def before(self, urns: list[str]) -> None:
        """A page's urns imaged, durably, before it is produced."""
        new = [u for u in dict.fromkeys(urns) if u not in self.seen]
        if not new:
            return
        self.seen.update(new)
        where = self.locate(new)
        found = self.read(list(where))
        batch = self.journal.imaged(
            [image(i, d, urn, "replay", found.get((i, d))) for (i, d), urn in where.items()]
        )
        # absent: None; else its pair (() where the engine did not say)
        self.pages.append((batch, new, {k: tuple(found[k][1] or ()) if k in found else None for k in where}))

    def after(self) -> None:
        """Once the consumer has passed the replay: what each imaged document has become."""
        for batch, urns, known in self.pages:
            where = self.locate(urns)
            now = self.read(sorted(set(where) | set(known)))
            self.journal.results(batch, [_result(k, known[k], now.get(k)) for k in known])
            appeared = [k for k in where if k not in known and k in now]
            if appeared:  # created by the consumer: absent before
                more = self.journal.imaged([image(i, d, where[(i, d)], "replay", None) for i, d in appeared])
                self.journal.results(more, [_result(k, None, now[k]) for k in appeared])


def _result(key: Key, before: Any, now: Any) -> dict[str, Any]:
    """A document's outcome: written (200, with its pair now), deleted, or untouched (304)."""
    index, doc_id = key
    if now is None:
        return {"i": index, "id": doc_id, "s": 200, "op": "delete"} if before is not None else _untouched(key)
    version = now[1]
    if version is None or (before is not None and before == tuple(version)):
        return _untouched(key)
    return {"i": index, "id": doc_id, "s": 200, "v": list(version)}


def _refresh(search: Search, index: str) -> None:
    """The consumer's writes made searchable (the urns' documents are found by a query)."""
    search.client.indices.refresh(index=index)  # type: ignore[attr-defined]


def _untouched(key: Key) -> dict[str, Any]:
    return {"i": key[0], "id": key[1], "s": 304}
