"""Reindex: the projections of each selected entity written straight from its rows.

Per batch of urns: read the rows, build the entity doc (it replaces the stored one in every field
the rules know; the stored doc's other fields stay, counted as `KEPT`), the system-metadata docs
and the edges with the scan's projection, drop what the rows no longer imply (system-metadata
docs of aspects gone, edges of the compared types: the engine is asked for exactly those, the
docs just built excluded by id), and delete every projection of a urn whose rows are gone
(re-checked against the rows read just before). Then the database digests the batch's rows (one
row back per 100 urns); only if that moved are their fingerprints read: an entity written
meanwhile is built and written again. The checkpoint moves only past a batch whose writes all
returned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from auditor.backends.index_writer import BulkFailure, BulkItem, IndexWriter
from auditor.backends.protocols import Search, Store
from auditor.core.records import EntityRows, rows_digest
from auditor.platforms.datahub.backends.store import row_fingerprint
from auditor.platforms.datahub.documents.projection import COMPARED_EDGE_TYPES
from auditor.platforms.datahub.naming import (
    V3_TYPE_FIELD,
    document_id,
    document_id_v3,
    entity_index,
    graph_index,
    system_metadata_index,
)
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.run import ScanBackends, ScanTarget, target_rules
from auditor.platforms.datahub.urns import entity_type
from auditor.platforms.datahub.versions.view import IndexRules
from auditor.rebuild.ahead import Ahead
from auditor.rebuild.checkpoint import Checkpoint
from auditor.rebuild.datahub.documents import KEPT, EntityDocuments, build
from auditor.rebuild.datahub.newer import Kept, NewerDocuments
from auditor.rebuild.datahub.stored import Stored, left_behind, read_entity_docs
from auditor.rebuild.throttle import Throttle

Progress = Callable[[int], None]


UNREAD = (
    "its stored document could not be read: not rewritten, as the fields no rule derives (a "
    "plugin's) would be lost; run the repair again once the index answers"
)
GUARD_ROUNDS = 5  # re-checks of entities built again (each may have been written again meanwhile)
Read = tuple[dict[str, EntityRows], Stored]  # a batch's rows, its stored entity docs


def deployment_versions(backends: ScanBackends, registry: Registry, target: ScanTarget) -> IndexRules:
    """The release and mappings a reindex writes by: the scan's own (its warnings are the scan's)."""
    return target_rules(backends, registry, target, [])[0]


class Reindexer:
    def __init__(
        self,
        store: Store,
        search: Search,
        writer: IndexWriter,
        registry: Registry,
        checkpoint: Checkpoint,
        path: Path,
        *,
        index_prefix: str = "",
        entity_indices: dict[str, str] | None = None,
        rate: float | None = None,
        batch: int = 500,
        progress: Progress | None = None,
        v3: dict[str, str] | None = None,
        mirrors: dict[str, list[str]] | None = None,
        versions: IndexRules | None = None,
        v3_only: bool = False,
        prefer_store: bool = False,
    ) -> None:
        # the deployment's release and mappings: what a document may hold (the scan's own rules;
        # without them the installed wheel's, made once: they cache what each type withholds)
        self.versions = versions or IndexRules.installed(registry)
        # live entity index -> the next indices of DataHub's own reindex in progress: written too,
        # as DataHub's consumer dual-writes them (a repair then survives DataHub's alias swap)
        self.mirrors = mirrors or {}
        # entity type -> DataHub's V3 index of it: every entity doc written (or deleted) there too
        self.v3 = v3 or {}
        # a full rebuild of a V3 index: only its documents are written (V2, system metadata and
        # edges are the V2 rebuild's)
        self.v3_only = v3_only
        # documents holding a later write than the store are left as they are (carried over into a
        # full rebuild's new index) unless the store's state is to win (a restored database)
        self.newer = None if prefer_store else NewerDocuments(search, registry, self.versions, index_prefix)
        self.store, self.search, self.writer, self.registry = store, search, writer, registry
        self.checkpoint, self.path = checkpoint, path
        self.prefix = index_prefix
        self.entity_indices = entity_indices or {}  # entity type -> the index written instead of the live one
        self.throttle = Throttle(rate)
        self.batch = batch
        self.progress = progress
        self._exists: dict[str, bool] = {}
        self._counted: set[str] = set()  # urns whose kept fields were counted (a rewrite counts once)

    def exists(self, index: str) -> bool:
        """Writes go only to indices DataHub created (a bulk would create one with wrong mappings)."""
        if index not in self._exists:
            self._exists[index] = index in self.search.indices(index)
            if not self._exists[index]:
                self.checkpoint.count(f"skipped: no index {index}")
        return self._exists[index]

    def run(self, urns: Iterable[str]) -> Checkpoint:
        """Rebuild every urn after the checkpoint's last one: a list (sorted and made unique here)
        or a stream already sorted and unique (the rows of a selection, read a page at a time: a
        window of a million entities is never a list).

        Three batches are in hand at once: the next one's rows and stored entity docs are read
        while this one's docs are built and the previous one's bulk is written (the read and the
        bulk each in a thread: the waits on the servers overlap the projection). A batch is
        guarded and passed by the checkpoint only once its bulk returned, in order.

        An entity doc is written on condition that the stored one is still the one read (its
        kept fields came from it): one the consumer wrote meanwhile is read and built again."""
        ck = self.checkpoint
        ordered = sorted(set(urns)) if isinstance(urns, list | set | tuple) else urns
        todo = (u for u in ordered if ck.last_urn is None or u > ck.last_urn)
        batches = _chunks(todo, self.batch)
        batch = next(batches, None)
        reading = Ahead(self._read, batch, name="reindex-rows") if batch else None
        writing: tuple[list[str], dict[str, EntityRows], Ahead[list[BulkFailure]], int] | None = None
        while batch:
            assert reading is not None
            rows, stored = reading.result()
            following = next(batches, None)
            if following:
                reading = Ahead(self._read, following, name="reindex-rows")
            items = self._items(batch, rows, stored)
            if writing is not None:
                self._passed(*writing)
            writing = (batch, rows, Ahead(self._send, items, name="reindex-bulk"), len(items))
            batch = following
        if writing is not None:
            self._passed(*writing)
        ck.done = True
        ck.save(self.path)
        return ck

    def _passed(
        self, batch: list[str], rows: dict[str, EntityRows], bulk: Ahead[list[BulkFailure]], sent: int
    ) -> None:
        """A batch whose bulk returned: its failures recorded, guarded, then checkpointed."""
        ck = self.checkpoint
        conflicts = self._record(sent, bulk.result())
        self._guard(batch, rows, conflicts)
        ck.last_urn = batch[-1]
        if ck.track_touched:
            ck.touched.extend(batch)
        ck.count("entities", len(batch))
        ck.save(self.path)
        if self.progress is not None:
            self.progress(ck.counts.get("entities", 0))

    def _rows(self, urns: list[str]) -> dict[str, EntityRows]:
        return {e.urn: e for e in self.store.stream_entities(urns=tuple(urns))}

    def _read(self, urns: list[str]) -> Read:
        """A batch's rows, then its stored entity docs (their unpredictable fields are kept; read
        a batch ahead, 10-20% sooner done: a doc the consumer writes after this read makes the
        conditional write of ours answer 409, and the entity is read and built again)."""
        return self._rows(urns), self._stored_docs(urns)

    def _stored_docs(self, urns: list[str]) -> Stored:
        by_index: dict[str, list[str]] = {}
        for urn in urns:
            by_index.setdefault(self._index_of(urn), []).append(urn)
        return read_entity_docs(
            self.search, {index: {document_id(u): u for u in mine} for index, mine in by_index.items()}
        )

    def _guard(self, urns: list[str], rows: dict[str, EntityRows], conflicts: set[str] | None = None) -> None:
        """Entities written while we wrote them are built again from their newer rows and stored
        docs, and checked again (a write may land between that read and that write too), up to
        GUARD_ROUNDS times; those still changing are counted and left to the verification.
        `conflicts`: urns whose entity doc changed after it was read (our write refused)."""
        for _ in range(GUARD_ROUNDS):
            redo = self._changed(urns, rows)
            changed = redo + sorted((conflicts or set()) - set(redo))
            if not changed:
                return
            self.checkpoint.count("rewritten_again", len(changed))
            rows = self._rows(changed)
            # the stored system-metadata docs and edges are read by search: make our own writes
            # (and the consumer's) visible first, or an edge we just wrote from the older rows is
            # missed and left behind
            self.writer.refresh_written()
            conflicts = self._write(changed, rows)
            urns = changed
        self.checkpoint.count("still_changing", len(urns))

    def _changed(self, urns: list[str], rows: dict[str, EntityRows]) -> list[str]:
        """The urns whose rows differ now from `rows` (by fingerprint: no JSON read twice);
        first one digest of them all, from the database (row by row only if it moved)."""
        read = ((entity.urn, row) for entity in rows.values() for row in entity.rows.values())
        if self.store.urns_digest(tuple(urns)) == rows_digest(read):
            return []
        now: dict[str, dict[str, Any]] = {}
        for (urn, aspect), seen in self.store.fingerprints(tuple(urns)).items():
            now.setdefault(urn, {})[aspect] = seen
        before = {
            urn: {a: row_fingerprint(r) for a, r in entity.rows.items()} for urn, entity in rows.items()
        }
        return [u for u in urns if now.get(u) != before.get(u)]

    def _left_behind(
        self, index: str, field: str, keep: dict[str, set[str]], types: frozenset[str] | None = None
    ) -> dict[str, list[str]]:
        """What the rows no longer imply in an index DataHub created (`left_behind`)."""
        return left_behind(self.search, index, field, keep, types) if self.exists(index) else {}

    def _write(self, urns: list[str], rows: dict[str, EntityRows]) -> set[str]:
        items = self._items(urns, rows)
        return self._record(len(items), self._send(items))

    def _send(self, items: list[BulkItem]) -> list[BulkFailure]:
        return self.writer.bulk(items)

    def _record(self, sent: int, failures: list[BulkFailure]) -> set[str]:
        """The failures counted, their urns kept; the urns of conditional writes refused because
        the doc changed since it was read (409) returned instead: to be read and built again."""
        refused = [f for f in failures if f.status == 409 and f.item.conditional]
        failures = [f for f in failures if not (f.status == 409 and f.item.conditional)]
        self.checkpoint.count("written", sent - len(failures) - len(refused))
        if refused:
            self.checkpoint.count("changed_since_read", len(refused))
        failed = sorted({f.item.urn for f in failures} - set(self.checkpoint.failed))
        self.checkpoint.failed.extend(failed)
        self.checkpoint.count("failed_items", len(failures))
        return {f.item.urn for f in refused}

    def _items(
        self, urns: list[str], rows: dict[str, EntityRows], stored: Stored | None = None
    ) -> list[BulkItem]:
        """The writes that make the urns' projections what their rows imply, to the indices that
        exist (nothing sent). `stored`: the stored entity docs, read with the rows."""
        sysmeta, graph = system_metadata_index(self.prefix), graph_index(self.prefix)
        gone = [u for u in urns if u not in rows]
        if gone:  # rows read ahead: asked again right before their projections are deleted
            rows = {**rows, **self._rows(gone)}
        if stored is None:
            stored = self._stored_docs(urns)
        built = {}
        for urn in urns:
            self.throttle.wait()
            if (entity := rows.get(urn)) is not None:
                built[urn] = build(
                    self.registry, entity, stored.docs.get(urn), self.versions, self._target_of(urn)
                )
        kept = self._kept(built, rows, stored)
        stale_meta: dict[str, list[str]] = {}
        stale_edges: dict[str, list[str]] = {}
        if not self.v3_only:  # a V3 rebuild writes entity docs only
            # an aspect the registry does not know keeps its system-metadata doc (a plugin's)
            keep = {
                u: set(built[u].system_metadata) | built[u].kept_system_metadata if u in built else set()
                for u in urns
            }
            stale_meta = self._left_behind(sysmeta, "urn", keep)
            keep = {u: set(docs.edges) for u, docs in built.items()}
            stale_edges = self._left_behind(graph, "source.urn", keep, COMPARED_EDGE_TYPES)
            # a urn whose rows are gone loses every edge it is the source of, of any type
            stale_edges |= self._left_behind(graph, "source.urn", {u: set() for u in urns if u not in built})
        items: list[BulkItem] = []
        for urn in urns:
            index = self._target_of(urn)
            docs = built.get(urn)
            if docs is not None and urn in kept:  # the store behind on part of it: that part kept
                items += self._kept_writes(urn, index, stored, docs, kept[urn])
                continue
            if docs is None:  # rows gone (asked just now): every projection of it goes
                items += [BulkItem("delete", i, document_id(urn), urn) for i in self._mirrored(index)]
                if v3 := self.v3.get(self._name_of(urn)):
                    items += [BulkItem("delete", i, document_id_v3(urn), urn) for i in self._mirrored(v3)]
                self.checkpoint.count("deleted")
            else:
                if docs.entity_doc is not None and urn in stored.unread:
                    self._unread(urn)
                elif docs.entity_doc is not None:
                    doc = docs.entity_doc
                    self._count_kept(urn, docs.kept)
                    items += self._entity_writes(urn, index, stored, doc)
                    if v3 := self.v3.get(self._name_of(urn)):  # the same fields, its own id and type
                        doc = {**doc, V3_TYPE_FIELD: self._name_of(urn)}
                        items += [
                            BulkItem("index", i, document_id_v3(urn), urn, doc) for i in self._mirrored(v3)
                        ]
                items += [BulkItem("index", sysmeta, i, urn, d) for i, d in docs.system_metadata.items()]
                items += [BulkItem("index", graph, i, urn, d) for i, d in docs.edges.items()]
                self.checkpoint.count("rebuilt")
            items += [BulkItem("delete", sysmeta, i, urn) for i in stale_meta.get(urn, [])]
            items += [BulkItem("delete", graph, i, urn) for i in stale_edges.get(urn, [])]
        if self.v3_only:
            v3_indices = set(self.v3.values())
            v3_indices.update(m for i in list(v3_indices) for m in self.mirrors.get(i, ()))
            items = [i for i in items if i.index in v3_indices]
        return [i for i in items if self.exists(i.index)]

    def _unread(self, urn: str) -> None:
        """An entity doc whose stored one could not be read is not written: what it holds beyond
        the rules (a plugin's field) would be lost. A failure, said why (the rest is written)."""
        ck = self.checkpoint
        if urn not in ck.failed:
            ck.failed.append(urn)
        ck.why.setdefault(urn, UNREAD)

    def _count_kept(self, urn: str, kept: tuple[str, ...]) -> None:
        """The stored fields no rule derives, kept as they are: counted once per entity, for the
        report (the fields a repair leaves unchecked)."""
        if kept and urn not in self._counted:
            self._counted.add(urn)
            for name in kept:
                self.checkpoint.count(KEPT + name)

    def _kept(self, built: dict[str, Any], rows: dict[str, EntityRows], stored: Stored) -> dict[str, Kept]:
        """The built urns whose stored documents hold a later write than their rows (the store is
        behind): what of each is kept as the index holds it, recorded on the checkpoint with why."""
        if self.newer is None:
            return {}
        kept = self.newer.kept({u: rows[u] for u in built}, stored.docs)
        for urn, what in kept.items():
            if urn not in self.checkpoint.kept:
                self.checkpoint.count("kept: the store is behind")
            self.checkpoint.kept[urn] = what.why
        return kept

    def _kept_writes(
        self, urn: str, index: str, stored: Stored, docs: EntityDocuments, kept: Kept
    ) -> list[BulkItem]:
        """The writes of an entity the store is behind on in part: its document from the rows but
        for the fields the later writes hold (the live document's values), the system-metadata
        documents of the other aspects, no edge written or deleted (the later writes' edges stay)."""
        items: list[BulkItem] = []
        if docs.entity_doc is not None:
            live = stored.docs[urn]
            doc = dict(docs.entity_doc)
            for name in kept.fields:
                if name in live:
                    doc[name] = live[name]
                else:
                    doc.pop(name, None)
            items += self._entity_writes(urn, index, stored, doc)
            if v3 := self.v3.get(self._name_of(urn)):  # the same fields, its own id and type
                doc = {**doc, V3_TYPE_FIELD: self._name_of(urn)}
                items += [BulkItem("index", i, document_id_v3(urn), urn, doc) for i in self._mirrored(v3)]
        sysmeta = system_metadata_index(self.prefix)
        items += [
            BulkItem("index", sysmeta, i, urn, d)
            for i, d in docs.system_metadata.items()
            if d.get("aspect") not in kept.aspects
        ]
        return items

    def _entity_writes(self, urn: str, index: str, stored: Stored, doc: dict[str, Any]) -> list[BulkItem]:
        """The entity doc to `index` and its mirrors; to the live index it was read from on
        condition that the stored doc did not change since (a consumer's write is never lost)."""
        live, out = self._index_of(urn), []
        for name in self._mirrored(index):
            condition = stored.condition(urn) if name == live else None
            op, version = condition or ("index", None)
            out.append(BulkItem(op, name, document_id(urn), urn, doc, if_seq=version))
        return out

    def _mirrored(self, index: str) -> tuple[str, ...]:
        """`index` and the next index DataHub's zero-downtime reindex is building for it, if any
        (its consumer writes both: so does a repair, which then survives DataHub's alias swap)."""
        return (index, *self.mirrors.get(index, ()))

    def _name_of(self, urn: str) -> str:
        return self.registry.spelled(entity_type(urn))

    def _index_of(self, urn: str) -> str:
        """The live entity index (its stored docs keep their unpredictable fields)."""
        return entity_index(self._name_of(urn), self.prefix)

    def _target_of(self, urn: str) -> str:
        """Where the entity doc is written: the live index, or a full rebuild's new one."""
        return self.entity_indices.get(self._name_of(urn)) or self._index_of(urn)


def _chunks(urns: Iterator[str], size: int) -> Iterator[list[str]]:
    """The urns `size` at a time, as they come."""
    while chunk := list(islice(urns, size)):
        yield chunk
