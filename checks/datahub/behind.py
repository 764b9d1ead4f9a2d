"""index.store-behind: a document holding a later write than the store (the store is behind).

Evidence: an aspect's system-metadata document records a later write than its row (a later
`lastUpdated` than the row's `lastObserved`, another `runId`) and the entity document holds
content of that aspect the row does not have (documents/behind.py).
Cause: the store is behind the index: a database replica that lags, or a database restored from
an older backup. Not a divergence of the index.
Repair: none by default. Writing the rows over the document (a reindex, a replay, a full
rebuild) would put the older state over the newer one; every repair leaves such a document as
it is unless given `--prefer-store` (a restored database whose state is to win).
"""

from __future__ import annotations

from collections.abc import Iterator

from auditor.checks.datahub.base import Check, CheckContext
from auditor.core.model import Finding, Kind
from auditor.platforms.datahub.documents.entity import JoinedEntity

PREFER_STORE = "--prefer-store"


class StoreBehind(Check):
    id = "index.store-behind"
    kinds = (Kind.STORE_BEHIND,)
    repairs = {Kind.STORE_BEHIND: ()}  # nothing unless asked: PREFER_STORE

    def run(self, entity: JoinedEntity, ctx: CheckContext) -> Iterator[Finding]:
        if entity.rows is None or entity.doc is None:
            return
        behind = ctx.behind(entity)
        if not behind:
            return
        later = ctx.later(entity)
        aspects = sorted(behind)
        rows = entity.rows.rows
        yield self.finding(
            Kind.STORE_BEHIND,
            entity,
            aspect=aspects[0] if len(aspects) == 1 else None,
            changed_at=max(rows[a].createdon for a in aspects),
            aspects=aspects,
            doc_id=entity.doc.id,
            writes=[later[a].to_json(behind[a]) for a in aspects],
            index_updated=max(later[a].index_time for a in aspects).isoformat(timespec="milliseconds"),
            ahead_seconds=max(later[a].ahead_seconds for a in aspects),
            store_lag=ctx.store_lag,
            prefer_store=PREFER_STORE,
        )
