"""system-metadata.stale: `system_metadata_service_v1` disagrees with a row's systemmetadata.

Divergence: the (urn, aspect) doc is missing, has another `runId`, or another `lastUpdated`
than the row's `systemMetadata.lastObserved`; or a doc remains for an aspect with no row. A doc
recording a later write (a later `lastUpdated` under another `runId`) is not: either the store is
behind (index.store-behind) or the row's content was re-emitted (DataHub's backfill steps after an
upgrade, a RESTATE replay), which needs no repair. Nor is a doc whose `runId` is a finished
upgrade step's id and whose `lastUpdated` is no earlier than the row's version (the step
re-emitted that version; the row's `lastObserved` may be later still: a re-ingestion that changed
nothing emits no MCL). A `runId` that names no finished step is stale as before.
Cause: the consumer never applied the aspect's MCL (never published, skipped, restored index).
Consequence: `datahub delete --run-id` / rollback cannot find or wrongly finds the aspect.
Repair: `datahub-upgrade -u RestoreIndices -a urn=URN` (a RESTATE replay).
"""

from __future__ import annotations

from collections.abc import Iterator

from auditor.checks.datahub.base import Check, CheckContext
from auditor.core.model import Finding, Kind, RepairKind
from auditor.platforms.datahub.documents.entity import JoinedEntity
from auditor.platforms.datahub.naming import system_metadata_id, system_metadata_index


class StaleSystemMetadata(Check):
    id = "system-metadata.stale"
    kinds = (Kind.STALE_SYSTEM_METADATA,)
    repairs = {Kind.STALE_SYSTEM_METADATA: (RepairKind.REWRITE_SYSTEM_METADATA,)}

    def run(self, entity: JoinedEntity, ctx: CheckContext) -> Iterator[Finding]:
        index = system_metadata_index(ctx.index_prefix)
        docs = {d.get("aspect"): d for d in entity.system_metadata}
        rows = entity.rows.rows if entity.rows else {}
        # a later write than the row's: the store behind (index.store-behind says so) or a
        # re-emission of the row's own content (a backfill step, a replay): neither is stale
        later = ctx.later(entity)
        for aspect, row in rows.items():
            if not ctx.registry.has_aspect(aspect) or aspect in entity.malformed:
                continue
            if ctx.registry.aspect(aspect).timeseries or aspect in later:
                continue
            doc = docs.get(aspect)
            meta = entity.system_metadata_of(aspect) or {}
            if doc is None:
                yield self.finding(
                    Kind.STALE_SYSTEM_METADATA,
                    entity,
                    index=index,
                    aspect=aspect,
                    changed_at=row.createdon,
                    problem="missing",
                    doc_id=system_metadata_id(entity.urn, aspect),
                )
                continue
            if ctx.backfilled(doc, row.createdon):  # a backfill step's runId and time: no repair
                continue
            wrong = {}
            if meta.get("runId") is not None and doc.get("runId") != meta.get("runId"):
                wrong["runId"] = {"expected": meta.get("runId"), "actual": doc.get("runId")}
            observed = meta.get("lastObserved")
            if observed is not None and doc.get("lastUpdated") != observed:
                wrong["lastUpdated"] = {"expected": observed, "actual": doc.get("lastUpdated")}
            if wrong:
                yield self.finding(
                    Kind.STALE_SYSTEM_METADATA,
                    entity,
                    index=index,
                    aspect=aspect,
                    changed_at=row.createdon,
                    problem="stale",
                    fields=wrong,
                )
        for name, doc in docs.items():
            if name is not None and name not in rows and not doc.get("removed"):
                yield self.finding(
                    Kind.STALE_SYSTEM_METADATA,
                    entity,
                    index=index,
                    aspect=name,
                    problem="orphan",
                    doc_id=system_metadata_id(entity.urn, str(name)),
                )
