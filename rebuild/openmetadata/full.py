"""OpenMetadata full rebuild: per entity type a fresh index from the database, swapped in atomically.

As OpenMetadata's own recreateIndex: a staged `<index>_rebuild_<ms>` with the live index's
mappings and settings, loaded from every row (the auditor's own document projection), caught
up with the rows written meanwhile, checked by the scan's own steps (the join, then each
candidate's row, doc, row again; what differs is rewritten) and by count, then in ONE
`_aliases` request the index name and every alias (`<clusterAlias>_<entity>`, its parents)
move to it and the old index is removed. The server keeps writing the live name until the
swap: every row written since the check began is written again after it."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from auditor.backends.index_writer import BulkItem, IndexWriter
from auditor.core.model import Kind
from auditor.errors import BackendUnavailable, ConfigError
from auditor.platforms.openmetadata.join import OmScanner
from auditor.platforms.openmetadata.naming import OmEntity
from auditor.platforms.openmetadata.scan import reobserve
from auditor.platforms.openmetadata.search import OmSearch
from auditor.platforms.openmetadata.store import OmStore
from auditor.rebuild.openmetadata import OmRepair

log = logging.getLogger(__name__)
CATCH_UP_SKEW_MS = 5_000  # rows written this long before a mark are caught up too (clock skew)
LOAD_BATCH = 500
# rows created between the check and the count (caught up after the swap)
CATCH_UP_SLACK = 50


def _ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


class FullRebuild:
    """One entity type at a time: create, load, catch up, verify, swap, catch up again."""

    def __init__(self, store: OmStore, search: OmSearch, writer: IndexWriter) -> None:
        self.store, self.search, self.writer = store, search, writer
        self.work = OmRepair(store, search, writer)
        self.notes: list[str] = []

    def run(self, entity: OmEntity) -> None:
        alias = self.search.cluster_alias
        live = entity.index_name(alias)
        read_name, old = self.search.resolve(entity)
        if read_name is None or not old:
            raise ConfigError(
                f"no index {live} (nor its alias) for {entity.entity_type}: nothing to take mappings from",
                hint="create the index first (OpenMetadata creates it at start-up)",
            )
        fresh = f"{live}_rebuild_{_ms()}"
        settings = self.writer.create_like(old[0], fresh)
        started = _ms()
        try:
            loaded = self._load(entity, fresh)
            self.writer.put_settings(
                fresh,
                {
                    "number_of_replicas": settings.get("number_of_replicas", "1"),
                    "refresh_interval": settings.get("refresh_interval", "1s"),
                },
            )
            mark = _ms()
            self._catch_up(entity, fresh, started)
            self._verify(entity, fresh, mark)
        except Exception:
            self._drop(fresh)
            raise
        self._swap(entity, live, fresh, old)
        self._catch_up(entity, fresh, mark)  # what the server wrote to the old index since the mark
        self.writer.refresh(fresh)
        self.notes.append(
            f"{entity.entity_type}: {loaded} documents loaded into {fresh}; {live} and its aliases now "
            f"point at it; removed {', '.join(old)}"
        )

    def _load(self, entity: OmEntity, fresh: str) -> int:
        batch: list[Any] = []
        loaded = 0
        for row in self.store.stream(entity):
            batch.append(row)
            if len(batch) >= LOAD_BATCH:
                loaded += self._write(entity, fresh, batch)
                batch = []
        if batch:
            loaded += self._write(entity, fresh, batch)
        self.writer.refresh(fresh)
        return loaded

    def _write(self, entity: OmEntity, fresh: str, rows: list[Any]) -> int:
        docs = self.work.documents(entity, rows)
        items = [BulkItem("index", fresh, i, i, doc) for i, doc in docs.items()]
        failures = self.writer.bulk(items)
        for failure in failures:
            self.work.failed[failure.item.urn] = f"{failure.status}: {failure.reason}"
        self.work.add("documents loaded", len(items) - len(failures))
        return len(items) - len(failures)

    def _catch_up(self, entity: OmEntity, index: str, since_ms: int) -> None:
        """Rows written since the mark: written again (re-read, ordering-guarded) into `index`."""
        since = datetime.fromtimestamp((since_ms - CATCH_UP_SKEW_MS) / 1000, UTC)
        ids = [r.id for r in self.store.stream(entity, since=since)]
        for i in range(0, len(ids), LOAD_BATCH):
            self.work.rewrite(entity, index, ids[i : i + LOAD_BATCH])
        self.writer.refresh(index)

    def _verify(self, entity: OmEntity, fresh: str, mark: int) -> None:
        """The scan's own steps over the fresh index (join, then each candidate's row, doc, row
        again): what still differs is rewritten, up to three times; then it must hold a document
        per readable row. A row written since `mark` (the server writes the old index until the
        swap) is not a failure: the catch-up after the swap writes everything since the mark."""
        scanner = OmScanner(self.store, self.search)
        names = {entity.entity_type: fresh}
        malformed = 0
        for attempt in range(3):
            joined = scanner.run([entity], names=names)
            malformed = sum(1 for f in joined.findings if f.kind == Kind.MALFORMED_ASPECT)
            candidates = [f for f in joined.findings if f.kind != Kind.MALFORMED_ASPECT]
            seen = reobserve(scanner, {entity.entity_type: entity}, names, candidates, visibility=0.5)
            since = datetime.fromtimestamp((mark - CATCH_UP_SKEW_MS) / 1000, UTC)
            wrong = [
                f.urn
                for f, _ in seen.observed
                if f.kind != Kind.MALFORMED_ASPECT
                and not (f.changed_at is not None and f.changed_at >= since)
            ]
            if not wrong:
                break
            if attempt == 2:
                raise BackendUnavailable(
                    f"{fresh}: {len(wrong)} documents still differ from the rows after loading: "
                    "not swapped; run again"
                )
            self.work.rewrite(entity, fresh, wrong)
            self.writer.refresh(fresh)
        rows = self.store.count(entity) - malformed
        docs = self.search.count(fresh)
        if docs < rows - CATCH_UP_SLACK:
            raise BackendUnavailable(f"{fresh} holds {docs} documents for {rows} readable rows: not swapped")
        self.work.add("verified by the scan's steps and by count", 1)

    def _swap(self, entity: OmEntity, live: str, fresh: str, old: list[str]) -> None:
        """One `_aliases` request: every alias of the old index (and the index name) to the fresh
        one, the old index removed in the same request."""
        aliases = set(entity.aliases(self.search.cluster_alias))
        for index in old:
            found = self.search.client.indices.get_alias(index=index)
            body = found.body if hasattr(found, "body") else found
            aliases |= set(body.get(index, {}).get("aliases", {}))
        aliases.discard(live)
        actions: list[dict[str, Any]] = [{"remove_index": {"index": index}} for index in old]
        actions += [{"add": {"index": fresh, "alias": live}}]
        actions += [{"add": {"index": fresh, "alias": a}} for a in sorted(aliases)]
        self.writer.swap(actions)

    def _drop(self, index: str) -> None:
        try:
            self.search.client.indices.delete(index=index)
        except Exception:  # best effort: the failure that brought us here is what matters
            log.warning("could not delete the unswapped index %s", index, exc_info=True)
