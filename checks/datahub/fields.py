"""index.stale-fields / index.soft-delete: a document whose searchable fields disagree with the rows.

Divergence: the document exists but a field derived from an aspect holds another value than
the version-0 aspect projects to (search finds the entity by old values); `removed` disagrees
with the `status` aspect (a soft-deleted entity still shows, or a restored one is hidden).
Cause: an update whose MCL was never published or whose index write was skipped, or an index
restored from an older snapshot.
Repair: `datahub-upgrade -u RestoreIndices -a urn=URN` (a RESTATE replay of the entity's aspects).
A document that lacks exactly the fields the deployment's release adds over an older release,
the rest consistent, was written by that older release (an upgrade whose RestoreIndices never
ran): `outdated_document`, not a divergence; a reindex of its type brings it up to date.
A field the current aspect no longer has stays in the document for good (DataHub upserts only
the fields an aspect has): that is `field_left_behind`, which a replay cannot clear; the whole
document must be rewritten. So is a field of an aspect the entity has no row for (a `tags` field
without `globalTags`): there is no change to publish (`absent_aspects` names them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from auditor.checks.datahub.base import Check, CheckContext
from auditor.core.model import Finding, Kind, RepairKind
from auditor.platforms.datahub.documents.entity import JoinedEntity

REMOVED = "removed"


def _short(value: object, limit: int = 200) -> object:
    text = repr(value)
    return value if len(text) <= limit else text[:limit] + "..."


class StaleFields(Check):
    id = "index.stale-fields"
    kinds = (Kind.STALE_FIELDS, Kind.FIELD_LEFT_BEHIND, Kind.OUTDATED_DOCUMENT)
    # a field left behind by DataHub's per-aspect upsert: a RESTATE replay writes only the fields
    # the aspect has, so only a whole-document rewrite clears it
    repairs = {
        Kind.STALE_FIELDS: (RepairKind.REPLAY_ASPECT,),
        Kind.FIELD_LEFT_BEHIND: (RepairKind.REWRITE_DOCUMENT,),
        # written by an older release: the whole document from the rows, by today's rules
        Kind.OUTDATED_DOCUMENT: (RepairKind.REWRITE_DOCUMENT,),
    }

    def repairs_for(self, kind: Kind, details: dict[str, Any]) -> tuple[RepairKind, ...]:
        return (RepairKind.REWRITE_DOCUMENT,) if details.get("left_behind") else self.repairs.get(kind, ())

    def run(self, entity: JoinedEntity, ctx: CheckContext) -> Iterator[Finding]:
        if entity.rows is None or entity.doc is None:
            return
        expected = ctx.expected(entity)
        ahead = {f for fields in ctx.behind(entity).values() for f in fields}  # index.store-behind's
        diffs = [d for d in ctx.diffs(entity) if d.field != REMOVED and d.field not in ahead]
        if not diffs:
            return
        aspects = sorted({a for d in diffs for a in expected.field_aspects.get(d.field, ())})
        rows = entity.rows.rows
        changed = [rows[a].createdon for a in aspects if a in rows] or [entity.rows.changed_at]
        if all(d.kind == "missing" for d in diffs):
            missing = [d.field for d in diffs]
            older = ctx.older_release(entity, aspects, missing, max(changed))
            if older:
                assert ctx.versions is not None
                yield self.finding(
                    Kind.OUTDATED_DOCUMENT,
                    entity,
                    aspect=aspects[0] if len(aspects) == 1 else None,
                    changed_at=max(changed),
                    aspects=aspects,
                    doc_id=entity.doc.id,
                    written_by=older[0],  # the newest that fits; written_since the oldest next to it
                    written_since=older[-1],
                    or_older=older[-1] == ctx.versions.catalog.releases[0].release,
                    judged_by=ctx.versions.release,
                    missing=missing,
                )
                return
        # a field no version-0 row writes (its aspect has no row: the aspect's delete never reached
        # the document) is left behind too: there is no change to publish, only a rewrite clears it
        left = [d.field for d in diffs if d.kind in ("left_behind", "unexpected")]
        absent = sorted(
            {a for d in diffs if d.kind == "unexpected" for a in expected.field_aspects.get(d.field, ())}
        )
        extra: dict[str, Any] = {"absent_aspects": absent} if absent and len(left) == len(diffs) else {}
        yield self.finding(
            Kind.FIELD_LEFT_BEHIND if len(left) == len(diffs) else Kind.STALE_FIELDS,
            entity,
            aspect=aspects[0] if len(aspects) == 1 else None,
            changed_at=max(changed),
            aspects=aspects,
            left_behind=left,
            **extra,
            doc_id=entity.doc.id,
            fields=[
                {
                    "field": d.field,
                    "expected": _short(d.expected),
                    "actual": _short(d.actual),
                    "kind": d.kind,
                }
                for d in diffs
            ],
        )


class SoftDelete(Check):
    id = "index.soft-delete"
    kinds = (Kind.SOFT_DELETE_MISMATCH,)
    repairs = {Kind.SOFT_DELETE_MISMATCH: (RepairKind.REPLAY_ASPECT,)}

    def run(self, entity: JoinedEntity, ctx: CheckContext) -> Iterator[Finding]:
        if entity.rows is None or entity.doc is None:
            return
        expected = ctx.expected(entity).removed
        actual = bool(entity.doc.source.get(REMOVED) or False)
        if expected == actual or "status" in ctx.behind(entity):  # the store behind: not stale
            return
        status = entity.rows.rows.get("status")
        yield self.finding(
            Kind.SOFT_DELETE_MISMATCH,
            entity,
            aspect="status",
            changed_at=status.createdon if status else entity.rows.changed_at,
            expected_removed=expected,
            actual_removed=actual,
        )
