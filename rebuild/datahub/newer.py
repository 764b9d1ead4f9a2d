"""What a repair keeps as the index holds it: what documents hold of a later write than the store.

Reading from a database replica that lags, or from a database restored from an older backup, the
index holds writes the store does not have yet. Writing the rows over such a document (a
reindex, a replay's RESTATE, a full rebuild's fresh index) would put the older state over the
newer one. The rule is the scan's (`index.store-behind`, documents/behind.py): an aspect's
system-metadata document with a later `lastUpdated` under another `runId`, and the entity
document holding content of it the row does not. A re-emission (the row's own content sent again
with a later time: a backfill step, a replay) holds nothing the row lacks and is written as usual.

What the index holds of such a write is left as it is: the entity document's fields it wrote
(the rest of the document is written from the rows as usual), the system-metadata documents of
its aspects, the entity's edges (neither written nor deleted), and a replay produces no RESTATE
of its aspects (the others are replayed); unless the repair is told the store's state is to win
(`--prefer-store`: a restored database).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from auditor.backends.protocols import Search, Store
from auditor.checks.datahub.base import CheckContext
from auditor.checks.datahub.behind import PREFER_STORE
from auditor.core.records import AspectRow, EntityRows, SearchDoc, json_loads
from auditor.platforms.datahub.documents.behind import later_write
from auditor.platforms.datahub.documents.entity import JoinedEntity
from auditor.platforms.datahub.naming import (
    document_id,
    entity_index,
    system_metadata_id,
    system_metadata_index,
)
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.urns import entity_type
from auditor.platforms.datahub.versions.view import IndexRules
from auditor.rebuild.datahub.stored import read_entity_docs


@dataclass(frozen=True)
class Kept:
    """What of one entity a repair leaves as the index holds it: the store is behind on it."""

    why: str  # the aspects, both runIds and the index's time
    aspects: frozenset[str]  # the aspects the index holds a later write of (re-emissions included)
    fields: frozenset[str]  # the entity document's fields those writes hold and the rows do not


class NewerDocuments:
    """Which entities of a batch hold a later write in the index than in their rows."""

    def __init__(self, search: Search, registry: Registry, versions: IndexRules, prefix: str) -> None:
        self.search, self.registry, self.prefix = search, registry, prefix
        self.ctx = CheckContext(registry, datetime.now(UTC), prefix, versions=versions)

    def _read(self, ids: Collection[str]) -> dict[str, dict[str, Any]]:
        """The stored system-metadata documents with these ids (read in real time)."""
        index = system_metadata_index(self.prefix)
        if not ids or index not in self.search.indices(index):
            return {}
        return {doc_id: doc for doc_id, (doc, _) in self.search.get_versioned(index, list(ids)).items()}

    def system_metadata(self, rows: Mapping[str, EntityRows]) -> dict[str, list[dict[str, Any]]]:
        """The stored system-metadata documents of the rows' aspects, by urn."""
        ids = {system_metadata_id(u, a): u for u, entity in rows.items() for a in entity.rows}
        out: dict[str, list[dict[str, Any]]] = {}
        for doc_id, doc in self._read(ids).items():
            out.setdefault(ids[doc_id], []).append(doc)
        return out

    def in_page(self, store: Store, page: Sequence[tuple[str, AspectRow]]) -> dict[str, Kept]:
        """Of a replay's page of rows, the urns whose rows of `Kept.aspects` to leave out: a
        RESTATE of those would put the older state over their documents (the others are
        replayed). Only the urns whose system metadata records a later write are read further
        (their whole rows, their stored entity docs)."""
        ids = {system_metadata_id(u, r.aspect): (u, r) for u, r in page}
        later = set()
        for doc_id, doc in self._read(ids).items():
            urn, row = ids[doc_id]
            if later_write(row.aspect, _meta(row), doc) is not None:
                later.add(urn)
        if not later:
            return {}
        rows = {e.urn: e for e in store.stream_entities(urns=tuple(sorted(later)))}
        by_index: dict[str, dict[str, str]] = {}
        for urn in rows:
            by_index.setdefault(entity_index(self.registry.spelled(entity_type(urn)), self.prefix), {})[
                document_id(urn)
            ] = urn
        return self.kept(rows, read_entity_docs(self.search, by_index).docs)

    def kept(self, rows: Mapping[str, EntityRows], docs: Mapping[str, dict[str, Any]]) -> dict[str, Kept]:
        """What to leave as it is of the urns whose stored entity doc (`docs`) holds a later
        write than their rows (`rows`): the store is behind on it."""
        out = {}
        for urn, meta in self.system_metadata({u: rows[u] for u in rows if u in docs}).items():
            name = self.registry.spelled(entity_type(urn))
            index = entity_index(name, self.prefix)
            doc = SearchDoc(index, document_id(urn), docs[urn])
            entity = JoinedEntity(urn, entity_type(urn), index, rows=rows[urn], doc=doc, system_metadata=meta)
            if behind := self.ctx.behind(entity):
                later = self.ctx.later(entity)
                writes = "; ".join(
                    f"{a} (index {later[a].index_time.isoformat(timespec='seconds')}, run "
                    f"{later[a].index_run_id}; row run {later[a].store_run_id})"
                    for a in sorted(behind)
                )
                why = f"the index holds a later write than the store of {writes}"
                fields = frozenset(f for held in behind.values() for f in held)
                out[urn] = Kept(why, frozenset(later), fields)
        return out


def _meta(row: AspectRow) -> dict[str, Any]:
    """A row's system metadata as an object ({} when it has none or it cannot be read)."""
    try:
        value = json_loads(row.systemmetadata) if row.systemmetadata else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def behind_note(kept: Mapping[str, str]) -> str:
    """What a repair says of what it kept as the index holds it (`kept`: urn -> why)."""
    urn = min(kept)
    whose = (
        "1 entity: what its document holds"
        if len(kept) == 1
        else f"{len(kept)} entities: what their documents hold"
    )
    return (
        f"kept as the index holds it, for {whose} of a later write than the store (the store is "
        f"behind: a lagging replica, a restored database), e.g. {urn}: {kept[urn]}; to write the "
        f"store's older state over it, run again with {PREFER_STORE}"
    )
