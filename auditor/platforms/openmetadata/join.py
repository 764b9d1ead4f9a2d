"""The OpenMetadata join: each entity table against its index, both in id order, streaming.

A whole-table scan reads both sides at the same time: a thread scrolls the indices (type after
type) into sorted spills while this one streams the rows, into a row file until the type's
documents are ready, then straight into the merge (the database driver and the HTTP client
wait for their servers without the GIL). Each side's compared fields are
reduced to a key as they are read; the merge compares keys and decodes a pair (then checked
in full) only when they differ (auditor/platforms/openmetadata/spill.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter

from auditor.backends import search_readers
from auditor.checks.openmetadata import PLATFORM, check, doc_key, keys_agree, row_key
from auditor.core.absence import duplicate_documents
from auditor.core.join import ordered, outer_pairs, prefetch
from auditor.core.model import Finding, Kind
from auditor.platforms.openmetadata.absence import any_index, missing_index, no_index_under
from auditor.platforms.openmetadata.naming import OmEntity
from auditor.platforms.openmetadata.records import OmDoc, OmRow
from auditor.platforms.openmetadata.search import PAGE, OmSearch
from auditor.platforms.openmetadata.spill import Keyed, RowFile, SortedDocs, Spilled
from auditor.platforms.openmetadata.spill_apart import SpillsApart
from auditor.platforms.openmetadata.store import OmStore
from auditor.scan.engine import Sink

Progress = Callable[[int], None]
Item = OmRow | OmDoc | Spilled | Keyed


@dataclass
class OmJoinResult:
    """The join's candidates and what it read."""

    findings: list[Finding] = field(default_factory=list)
    entities: dict[str, int] = field(default_factory=dict)  # entity type -> rows
    documents: dict[str, int] = field(default_factory=dict)  # index read -> docs
    warnings: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # entity type -> the name its docs were read through
    # findings on a whole index (one missing, an alias answering with copies): never re-read
    absence: list[Finding] = field(default_factory=list)


ID_ORDER = "the entity tables' ids and the documents' _id must arrive in byte order (a UUID always does)"


def merge(rows: Iterable[Item], docs: Iterable[Item]) -> Iterator[tuple[Item | None, Item | None]]:
    """Full outer join of two id-ordered streams (the kernel's, order checked); a doc under two
    indices (an alias over both) pairs with its row twice."""
    by_row = ordered(rows, _id, "the entity rows", what="id", hint=ID_ORDER)
    by_doc = ordered(docs, _id, "the documents", what="id", hint=ID_ORDER)
    return outer_pairs(by_row, by_doc, _id, _id)


_id: Callable[[Item], str] = attrgetter("id")  # an item's id (in C: the join asks it of every item)


def _agree(row: Item | None, doc: Item | None) -> bool:
    """Both keyed, the keys in agreement: `check` would find nothing (checks/openmetadata row_key)."""
    if type(doc) is Spilled and isinstance(row, _KEYED):  # (type tests: one a pair of the scan)
        return keys_agree(row.key, doc.key)
    return False


_KEYED = (Keyed, Spilled)  # a tuple: `isinstance` with a union type costs more


def _row(item: Item | None) -> OmRow | None:
    return item.row() if isinstance(item, Spilled | Keyed) else item  # type: ignore[return-value]


def _doc(item: Item | None) -> OmDoc | None:
    return item.doc() if isinstance(item, Spilled) else item  # type: ignore[return-value]


class OmScanner:
    """Runs the join and the checks over the selected entity types (or over given ids)."""

    def __init__(self, store: OmStore, search: OmSearch) -> None:
        self.store = store
        self.search = search
        self.seen = 0

    def run(
        self,
        entities: list[OmEntity],
        ids: tuple[str, ...] = (),
        progress: Progress | None = None,
        names: dict[str, str] | None = None,
        sink: Sink | None = None,
    ) -> OmJoinResult:
        """`names`: entity type -> an index to read instead of the live one (a full rebuild's);
        `sink`: where the findings go as they are made (the scan engine's spill), else the list."""
        out = OmJoinResult()
        if sink is not None:
            out.findings = sink  # type: ignore[assignment]
        self.seen = 0
        plans: list[tuple[OmEntity, str | None]] = []
        # every type's index or alias in one request (one a type was a round trip each)
        resolved = self.search.resolve_all([e for e in entities if e.entity_type not in (names or {})])
        for entity in entities:
            name: str | None
            if names and entity.entity_type in names:
                name, concrete = names[entity.entity_type], [names[entity.entity_type]]
            else:
                name, concrete = resolved.get(entity.entity_type, (None, []))
            out.names[entity.entity_type] = name or entity.index_name(self.search.cluster_alias)
            if name is None:  # a whole-table scan says it as one finding (`_absent`), a look by id per row
                said = (
                    f": every {entity.entity_type} row asked for is reported missing from search"
                    if ids
                    else ""
                )
                out.warnings.append(
                    f"neither the index {entity.index_name(self.search.cluster_alias)} nor the alias "
                    f"{entity.aliases(self.search.cluster_alias)[0]} exists{said}"
                )
            elif len(concrete) > 1:
                out.warnings.append(f"{name} points at {len(concrete)} indices: {', '.join(concrete)}")
            plans.append((entity, name))
        alias = self.search.cluster_alias
        if not any(name for _, name in plans) and not any_index(self.search.search, alias):
            raise no_index_under(self.search.search, alias)  # a mistyped alias, not an empty search
        if not ids:
            self._stream(out, plans, progress)
            self._absent(out, [entity for entity, name in plans if name is None])
            return out
        for entity, index in plans:
            rows = sorted(self.store.read(entity, ids).values(), key=lambda r: r.id)
            docs = sorted(self.search.get(index, ids).values(), key=lambda d: d.id) if index else []
            self._tally(out, entity, merge(rows, docs), progress)
        return out

    def _stream(
        self, out: OmJoinResult, plans: list[tuple[OmEntity, str | None]], progress: Progress | None
    ) -> None:
        """Every row against every doc: the docs' thread (or reader process) runs ahead, type
        after type."""
        stop = threading.Event()
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="auditor-om-docs")
        spills: dict[str, Future[SortedDocs]] = {}
        apart: SpillsApart | None = None
        tags = None
        try:
            named = [(entity.entity_type, name) for entity, name in plans if name]
            counts = self.search.search.indices(",".join(name for _, name in named)) if named else {}
            few = frozenset(name for _, name in named if counts.get(name, PAGE) < PAGE // 2)
            if getattr(self.search, "readers", 0) > 0 and self._large(named, counts):
                apart = SpillsApart(self.search, named, stop, few)
                spills = dict(apart.futures)
            for entity_type, index_name in named if apart is None else ():
                spills[entity_type] = pool.submit(
                    self.search.spill, index_name, doc_key, stop=stop, few=index_name in few
                )
            tags = self.store.tag_spill([entity for entity, _ in plans])  # the children's labels, once
            for entity, name in plans:
                rows = RowFile(self.search.spill_dir)
                ahead = prefetch(self.store.stream(entity, tags=tags), depth=2, chunk=200)
                try:
                    live = iter(ahead)
                    ready = (lambda: True) if not name else spills[entity.entity_type].done
                    for row in live if not ready() else ():  # put aside while the docs are read
                        rows.add(row, row_key(row, entity.entity_type))
                        if ready():
                            break
                    docs: Iterable[Item] = spills[entity.entity_type].result() if name else []
                    keyed = (Keyed(row.id, row_key(row, entity.entity_type), row) for row in live)
                    self._tally(out, entity, merge(chain(rows, keyed), docs), progress, absent=not name)
                finally:
                    ahead.close()  # the read thread stopped, the rows' cursor closed
                    rows.close()
                    if name and spills[entity.entity_type].done():
                        _close(spills[entity.entity_type])
        finally:
            stop.set()
            for pending in spills.values():
                pending.cancel()
            pool.shutdown(wait=True)
            if apart is not None:
                apart.join()
            for done in spills.values():
                _close(done)
            if tags is not None:
                tags.close()

    def _absent(self, out: OmJoinResult, absent: list[OmEntity]) -> None:
        """A type whose index (and alias) does not exist: one finding with its count, in place of
        a missing document per row (nothing row by row repairs it: auditor/core/absence.py)."""
        gone = {e.entity_type for e in absent if out.entities.get(e.entity_type)}
        if not gone:
            return  # (the join left out each of their rows' missing document: `_tally`)
        alias = self.search.cluster_alias
        out.absence += [
            missing_index(e, alias, out.entities[e.entity_type]) for e in absent if e.entity_type in gone
        ]

    def _large(self, named: list[tuple[str, str]], counts: dict[str, int]) -> bool:
        """Enough documents that a reader process pays for its start (search_readers.MIN_DOCS)."""
        return sum(counts.get(name, 0) for _, name in named) >= max(1, search_readers.MIN_DOCS)

    def _tally(
        self,
        out: OmJoinResult,
        entity: OmEntity,
        pairs: Iterable[tuple[Item | None, Item | None]],
        progress: Progress | None,
        absent: bool = False,
    ) -> None:
        """Join one type's rows and documents; `absent`: its index does not exist (a whole-table
        scan says so as one finding: each row's missing document is left out)."""
        n_rows = n_docs = 0
        last: str | None = None
        name = out.names[entity.entity_type]
        # a row paired with several docs (an alias over several indices): its copies, by row id;
        # the pair before is kept by reference only (no allocation per row)
        held: dict[str, list[dict[str, object]]] = {}
        prev_row: Item | None = None
        prev_doc: Item | None = None
        prev_stale = False
        for row, doc in pairs:
            if row is not None and row.id != last:
                n_rows, last = n_rows + 1, row.id
            n_docs += doc is not None
            finding = None
            if not _agree(row, doc):
                finding = check(entity, name, _row(row), _doc(doc))
                if finding is not None and not (absent and finding.kind == Kind.MISSING_DOCUMENT):
                    out.findings.append(finding)
            if row is not None and isinstance(doc, Spilled | OmDoc):
                if prev_row is not None and prev_row.id == row.id and isinstance(prev_doc, Spilled | OmDoc):
                    copies = held.setdefault(row.id, [_copy(prev_doc, prev_stale)])
                    copies.append(_copy(doc, finding is not None))
            prev_row, prev_doc, prev_stale = row, doc, finding is not None
            self.seen += 1
            if progress and self.seen % 1000 == 0:
                progress(self.seen)
        if held:
            behind = {i: meta[1] for i, meta in self.search.search.index_meta(name).items()}
            out.absence.append(duplicate_documents(PLATFORM, entity.entity_type, name, behind, held))
        out.entities[entity.entity_type] = n_rows
        out.documents[name] = n_docs


def _copy(doc: Spilled | OmDoc, stale: bool) -> dict[str, object]:
    """One copy of a row's document, as a duplicate_document finding lists it."""
    return {"index": doc.index, "doc_id": doc.id, "stale": stale}


def _close(spill: Future[SortedDocs]) -> None:
    """The spill of a finished read (a failed or cancelled one left nothing to close)."""
    if spill.done() and not spill.cancelled() and spill.exception() is None:
        spill.result().close()
