"""store.malformed-aspect: a version-0 row whose metadata is not a readable aspect.

Divergence: the row's JSON does not parse, is not an object, or does not fit its aspect's
schema; DataHub itself cannot serve or index it.
Cause: a manual edit, a truncated write, a bad migration.
Repair: restore the row from its previous version (version 1) or re-ingest; the auditor
never repairs from a row it cannot read.
"""

from __future__ import annotations

from collections.abc import Iterator

from auditor.checks.datahub.base import Check, CheckContext
from auditor.core.model import Finding, Kind, RepairKind
from auditor.platforms.datahub.documents.entity import JoinedEntity


class MalformedAspect(Check):
    id = "store.malformed-aspect"
    kinds = (Kind.MALFORMED_ASPECT,)
    repairs = {Kind.MALFORMED_ASPECT: (RepairKind.FIX_ROW,)}

    def run(self, entity: JoinedEntity, ctx: CheckContext) -> Iterator[Finding]:
        if entity.rows is None:
            return
        problems = dict(entity.malformed)
        for error in ctx.expected(entity).errors:
            problems.setdefault(error.aspect, error.reason)
        for aspect, reason in sorted(problems.items()):
            row = entity.rows.rows.get(aspect)
            yield self.finding(
                Kind.MALFORMED_ASPECT,
                entity,
                index=None,
                aspect=aspect,
                changed_at=row.createdon if row else None,
                reason=reason,
            )
