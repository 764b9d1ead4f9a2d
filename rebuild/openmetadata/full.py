"""OpenMetadata's full rebuild, on the staged-index engine (rebuild/staged.py).

As OpenMetadata's own recreateIndex: a staged `<index>_rebuild_<ms>` with the live index's
mappings and settings, loaded from every row (the auditor's own document projection, with what
OpenMetadata derives), caught up with the rows written meanwhile, checked by the scan's own
steps (the join, then each candidate's row, doc, row again; what differs is rewritten) and by
count, then in ONE `_aliases` request the index name and every alias (`<clusterAlias>_<entity>`,
its parents) move to it. The server keeps writing the live name until the swap: every row written
since the check began is written again after it. A staged index that is not swapped in is deleted
(OpenMetadata's OrphanedIndexCleaner would).

The live name follows the engine's one rule, as `--help` says: behind an alias (any run after the
first), the old index is kept (how to drop it or roll back is said); a concrete index (as a fresh
install creates them) is replaced, removed in the swap, only with `--replace-concrete-index`,
and a copy of it kept for the undo (rebuild/kept.py).
A row that cannot be read (malformed JSON) holds no promotion: its document is carried over from
the live index as it is, and the row is reported `invalid`, as the scan reports it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from auditor.backends.index_writer import BulkItem, IndexWriter
from auditor.checks.openmetadata import PREFER_STORE, check
from auditor.core.model import Classified, Evidence, Finding, Kind, Verdict
from auditor.errors import ConfigError
from auditor.platforms.openmetadata.join import OmScanner
from auditor.platforms.openmetadata.naming import OmEntity
from auditor.platforms.openmetadata.scan import reobserve
from auditor.platforms.openmetadata.search import OmSearch
from auditor.platforms.openmetadata.store import OmStore
from auditor.rebuild.kept import kept_note
from auditor.rebuild.openmetadata import OmRepair
from auditor.rebuild.staged import NotPromoted, cleared_note, ledger_of, old_kept, promote, refuse_concrete


def _said(details: Any) -> str:
    """Why a document newer than its row is kept: both versions and the document's time."""
    return (
        f"the document holds version {details.get('index_version')} of {details.get('index_updated')}, "
        f"the row version {details.get('store_version')}"
    )


LOAD_BATCH = 500
UNREADABLE = "the stored row cannot be read: its document was carried over from the live index as it was"
# rows created between the check and the count (caught up after the swap)
CATCH_UP_SLACK = 50


class FullRebuild:
    """One entity type at a time, through the engine."""

    def __init__(
        self,
        store: OmStore,
        search: OmSearch,
        writer: IndexWriter,
        release: str | None = None,
        rate: float | None = None,
        allow_delete: int | None = None,
        replace_concrete: bool = False,
        state_dir: Path | None = None,
        leave_out_invalid: bool = False,
        prefer_store: bool = False,
    ) -> None:
        self.store, self.search, self.writer = store, search, writer
        self.allow_delete = allow_delete  # --allow-delete: documents the swap may drop from search
        self.work = OmRepair(store, search, writer, release=release, rate=rate)
        self.replace_concrete = replace_concrete  # a concrete live index may be removed in the swap
        self.state_dir = state_dir  # where the ledger of a staged index lives (None: no ledger)
        self.leave_out_invalid = leave_out_invalid  # an unreadable row's document: not carried over
        self.notes: list[str] = []
        self.invalid: list[Classified] = []  # unreadable rows, their documents carried over
        self.loaded = 0  # documents loaded into the indices swapped in (each one verified)
        # documents newer than their rows (the store behind) are carried into the new index as they
        # are, unless the store's state is to win (a restored database): id -> why
        self.prefer_store = prefer_store
        self.kept: dict[str, str] = {}

    def run(self, entity: OmEntity) -> None:
        stage = OmStage(self, entity)
        ledger = ledger_of(self.state_dir, stage.live) if self.state_dir is not None else None
        done = promote(self.writer, stage, ledger, self.allow_delete)
        self.loaded += done.loaded
        if done.cleared is not None:
            self.notes.append(f"{entity.entity_type}: {cleared_note(done.cleared)}")
        moved = (
            f"{entity.entity_type}: {done.loaded} documents loaded into {done.fresh}; {done.live} and its "
            "aliases now point at it"
        )
        if done.is_alias:
            self.notes += [moved, old_kept(done.old, done.live)]
        else:
            self.notes.append(f"{moved}; removed {', '.join(done.old)} (--replace-concrete-index)")
        if done.kept is not None:
            self.notes.append(f"{entity.entity_type}: {kept_note(done.live, done.kept)}")
        if stage.carried:
            self.notes.append(
                f"{entity.entity_type}: {len(stage.carried)} documents of rows that cannot be read carried "
                f"over into {done.fresh} as the live index held them (reported invalid: fix the rows)"
            )
        self.invalid += [
            Classified(f, Verdict.INVALID, Kind.MALFORMED_ASPECT.value, Evidence(UNREADABLE))
            for f in stage.invalid
        ]
        kept = {i: why for i, why in self.kept.items() if i in self.work.kept_of.get(entity.entity_type, ())}
        if kept:
            first = min(kept)
            self.notes.append(
                f"{entity.entity_type}: {len(kept)} documents newer than their rows (the store is behind: a "
                f"lagging replica, a restored database) carried into {done.fresh} as they are, e.g. {first}: "
                f"{kept[first]}; to write the store's older state over them, run again with {PREFER_STORE}"
            )
        refused = self.work.refused.get(entity.entity_type)
        if refused:
            self.notes.append(
                f"{entity.entity_type}: {len(refused)} documents the search cluster refused are not in "
                f"{done.fresh} (as in OpenMetadata's own reindex, a SINK failure each): named among the "
                "failures, with the cluster's reason"
            )


class OmStage:
    """One entity type's steps for the engine: OpenMetadata's documents, from its rows."""

    def __init__(self, full: FullRebuild, entity: OmEntity) -> None:
        self.full, self.entity = full, entity
        self.live = entity.index_name(full.search.cluster_alias)
        self.old: list[str] = []  # the indices the live name served: unreadable rows' docs come from them
        self.invalid: list[Finding] = []  # the last check's unreadable rows
        self.carried: set[str] = set()  # ids whose documents were carried over

    def fresh_name(self) -> str:
        return f"{self.live}_rebuild_{int(datetime.now(UTC).timestamp() * 1000)}"

    def locate(self, writer: IndexWriter) -> tuple[list[str], bool]:
        read_name, old = self.full.search.resolve(self.entity)
        if read_name is None or not old:
            raise ConfigError(
                f"no index {self.live} (nor its alias) for {self.entity.entity_type}: nothing to take "
                "mappings from",
                hint="create the index first (OpenMetadata creates it at start-up)",
            )
        concrete = self.live in old  # the index name is an index, not an alias
        if concrete and not self.full.replace_concrete:
            raise refuse_concrete(self.live)
        self.old = old
        return old, not concrete

    def load(self, index: str, since: datetime | None = None) -> int:
        if since is not None:  # rows written since: re-read, ordering-guarded, written again
            ids = [r.id for r in self.full.store.stream(self.entity, since=since)]
            for i in range(0, len(ids), LOAD_BATCH):
                self.full.work.rewrite(self.entity, index, ids[i : i + LOAD_BATCH])
            return len(ids)
        batch: list[Any] = []
        loaded = 0
        for row in self.full.store.stream(self.entity):
            batch.append(row)
            if len(batch) >= LOAD_BATCH:
                loaded += self._write(index, batch)
                batch = []
        if batch:
            loaded += self._write(index, batch)
        self.full.writer.refresh(index)
        return loaded

    def _write(self, index: str, rows: list[Any]) -> int:
        work = self.full.work
        work.pace(len(rows))
        docs = {**work.documents(self.entity, rows), **self._newer(rows)}
        items = [BulkItem("index", index, i, i, doc) for i, doc in docs.items()]
        items += self._carried(index, [r.id for r in rows if r.id not in docs])
        failures = self.full.writer.bulk(items)
        work.record(self.entity.entity_type, failures, [i.urn for i in items])
        loaded = len(docs) - len({f.item.urn for f in failures} & docs.keys())  # from rows (carried: apart)
        work.add("documents loaded", loaded)
        return loaded

    def _carried(self, index: str, unreadable: list[str]) -> list[BulkItem]:
        """The live documents of rows that cannot be read, as they are (no write from the row can
        fix them: dropping them would take the entity out of search); each row is reported
        invalid beside the promotion rather than as a failed write."""
        found: dict[str, Any] = {}
        if self.full.leave_out_invalid:  # asked: left out, the row reported invalid all the same
            for i in unreadable:
                self.full.work.failed.pop(i, None)
            self.full.work.add("documents of unreadable rows left out (--leave-out-invalid)", len(unreadable))
            return []
        for old in self.old:
            found.update({i: d.source for i, d in self.full.search.realtime(old, unreadable).items()})
        self.carried.update(found)
        for i in found:
            self.full.work.failed.pop(i, None)  # reported invalid instead, beside the promotion
        self.full.work.add("documents carried over (rows unreadable)", len(found))
        return [BulkItem("index", index, i, i, doc) for i, doc in found.items()]

    def _newer(self, rows: list[Any]) -> dict[str, dict[str, Any]]:
        """The live documents of these rows that record a later write than them (the store is
        behind), as they are: what the new index takes instead of the rows' (none with
        --prefer-store)."""
        full = self.full
        if full.prefer_store or not rows:
            return {}
        live = full.search.get(self.live, [r.id for r in rows])
        out = {}
        for row in rows:
            doc = live.get(row.id)
            found = check(self.entity, self.live, row, doc) if doc is not None else None
            if doc is not None and found is not None and found.kind == Kind.STORE_BEHIND:
                out[row.id] = doc.source
                full.kept[row.id] = _said(found.details)
                full.work.kept_of.setdefault(self.entity.entity_type, set()).add(row.id)
        if out:
            full.work.add("kept: the store is behind", len(out))
        return out

    def rewrite(self, index: str, ids: list[str]) -> None:
        self.full.work.rewrite(self.entity, index, ids)

    def refused(self) -> set[str]:
        return self.full.work.refused.get(self.entity.entity_type, set())

    def still_wrong(self, index: str, before: datetime) -> list[str]:
        """The scan's own steps over the fresh index (join, then each candidate's row, doc, row
        again). A row written since `before` is not a failure: the server writes the old index
        until the swap, and the catch-up after it writes everything since the mark. A document
        the cluster refused as it is (named among the failures) is not one to write again: no
        index of this cluster takes it, OpenMetadata's own reindex promotes without it too."""
        scanner = OmScanner(self.full.store, self.full.search)
        names = {self.entity.entity_type: index}
        joined = scanner.run([self.entity], names=names)
        self.invalid = [f for f in joined.findings if f.kind == Kind.MALFORMED_ASPECT]
        candidates = [f for f in joined.findings if f.kind != Kind.MALFORMED_ASPECT]
        seen = reobserve(scanner, {self.entity.entity_type: self.entity}, names, candidates, visibility=0.5)
        refused = self.refused()
        kept = Kind.STORE_BEHIND if not self.full.prefer_store else None  # carried over: not wrong
        return [
            f.urn
            for f in (o.finding for o in seen.observed)
            if f.kind not in (Kind.MALFORMED_ASPECT, kept)
            and not (f.changed_at is not None and f.changed_at >= before)
            and f.urn not in refused
        ]

    def check(self, index: str) -> None:
        """A document per readable row (give or take the rows created since the check), but those
        the cluster refused; the unreadable rows' carried-over documents are not counted."""
        rows = self.full.store.count(self.entity) - len(self.invalid) - len(self.refused())
        docs = self.full.search.count(index)
        if docs < rows - CATCH_UP_SLACK:
            raise NotPromoted(f"{index} holds {docs} documents for {rows} readable rows: not swapped")
        self.full.work.add("verified by the scan's steps and by count", 1)

    def swap_actions(self, fresh: str, old: list[str], is_alias: bool) -> list[dict[str, Any]]:
        """Every alias of the old index (and the index name) to the fresh one, in one request: a
        concrete live index removed in it (--replace-concrete-index), an old index behind the
        alias kept, its aliases taken off it."""
        aliases = set(self.entity.aliases(self.full.search.cluster_alias))
        held: dict[str, set[str]] = {}
        for index in old:
            found = self.full.search.client.indices.get_alias(index=index)
            body = found.body if hasattr(found, "body") else found
            held[index] = set(body.get(index, {}).get("aliases", {}))
            aliases |= held[index]
        aliases.discard(self.live)
        actions: list[dict[str, Any]]
        if is_alias:
            actions = [{"remove": {"index": i, "alias": a}} for i in old for a in sorted(held[i])]
        else:
            actions = [{"remove_index": {"index": index}} for index in old]
        actions += [{"add": {"index": fresh, "alias": self.live}}]
        actions += [{"add": {"index": fresh, "alias": a}} for a in sorted(aliases)]
        return actions
