"""OpenMetadata's full rebuild, on the staged-index engine (rebuild/staged.py).

As OpenMetadata's own recreateIndex: a staged `<index>_rebuild_<ms>` with the live index's
mappings and settings, loaded from every row (the auditor's own document projection, with what
OpenMetadata derives), caught up with the rows written meanwhile, checked by the scan's own
steps (the join, then each candidate's row, doc, row again; what differs is rewritten) and by
count, then in ONE `_aliases` request the index name and every alias (`<clusterAlias>_<entity>`,
its parents) move to it and the old index is removed. The server keeps writing the live name
until the swap: every row written since the check began is written again after it. A staged
index that is not swapped in is deleted (OpenMetadata's OrphanedIndexCleaner would)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from auditor.backends.index_writer import BulkItem, IndexWriter
from auditor.checks.openmetadata import PREFER_STORE, check
from auditor.core.model import Kind
from auditor.errors import ConfigError
from auditor.platforms.openmetadata.join import OmScanner
from auditor.platforms.openmetadata.naming import OmEntity
from auditor.platforms.openmetadata.scan import reobserve
from auditor.platforms.openmetadata.search import OmSearch
from auditor.platforms.openmetadata.store import OmStore
from auditor.rebuild.openmetadata import OmRepair
from auditor.rebuild.staged import NotPromoted, promote


def _said(details: Any) -> str:
    """Why a document newer than its row is kept: both versions and the document's time."""
    return (
        f"the document holds version {details.get('index_version')} of {details.get('index_updated')}, "
        f"the row version {details.get('store_version')}"
    )


LOAD_BATCH = 500
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
        prefer_store: bool = False,
    ) -> None:
        self.store, self.search, self.writer = store, search, writer
        self.work = OmRepair(store, search, writer, release=release, rate=rate)
        self.notes: list[str] = []
        # documents newer than their rows (the store behind) are carried into the new index as they
        # are, unless the store's state is to win (a restored database): id -> why
        self.prefer_store = prefer_store
        self.kept: dict[str, str] = {}

    def run(self, entity: OmEntity) -> None:
        done = promote(self.writer, OmStage(self, entity))
        self.notes.append(
            f"{entity.entity_type}: {done.loaded} documents loaded into {done.fresh}; {done.live} and its "
            f"aliases now point at it; removed {', '.join(done.old)}"
        )
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

    keep_unpromoted = False

    def __init__(self, full: FullRebuild, entity: OmEntity) -> None:
        self.full, self.entity = full, entity
        self.live = entity.index_name(full.search.cluster_alias)
        self.malformed = 0

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
        return old, True  # the old indices are removed in the swap, alias or not

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
        failures = self.full.writer.bulk(items)
        work.record(self.entity.entity_type, failures, [i.urn for i in items])
        work.add("documents loaded", len(items) - len(failures))
        return len(items) - len(failures)

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
        self.malformed = sum(1 for f in joined.findings if f.kind == Kind.MALFORMED_ASPECT)
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
        the cluster refused."""
        rows = self.full.store.count(self.entity) - self.malformed - len(self.refused())
        docs = self.full.search.count(index)
        if docs < rows - CATCH_UP_SLACK:
            raise NotPromoted(f"{index} holds {docs} documents for {rows} readable rows: not swapped")
        self.full.work.add("verified by the scan's steps and by count", 1)

    def swap_actions(self, fresh: str, old: list[str], is_alias: bool) -> list[dict[str, Any]]:
        """Every alias of the old index (and the index name) to the fresh one, the old index
        removed in the same request."""
        aliases = set(self.entity.aliases(self.full.search.cluster_alias))
        for index in old:
            found = self.full.search.client.indices.get_alias(index=index)
            body = found.body if hasattr(found, "body") else found
            aliases |= set(body.get(index, {}).get("aliases", {}))
        aliases.discard(self.live)
        actions: list[dict[str, Any]] = [{"remove_index": {"index": index}} for index in old]
        actions += [{"add": {"index": fresh, "alias": self.live}}]
        actions += [{"add": {"index": fresh, "alias": a}} for a in sorted(aliases)]
        return actions
