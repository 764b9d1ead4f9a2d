"""A federation in the scan: every finding names its store; a urn held by several is a conflict."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from auditor.core.classify import diverged
from auditor.core.model import Classified, Finding, Kind, Observation, RepairKind
from auditor.platforms.datahub.backends.federated import FederatedRows
from auditor.platforms.datahub.documents.entity import JoinedEntity

CONFLICT_CHECK = "federation.conflict"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") if value is not None else None


def conflict_finding(entity: JoinedEntity, rows: FederatedRows) -> Finding:
    """The urn has version-0 rows in more than one store: which one the index shows is a race."""
    holders = {
        c.store: {"aspects": c.aspects, "latest_createdon": _iso(c.newest_at if c.newest else None)}
        for c in rows.claims
    }
    newest = max((c.newest_at for c in rows.claims if c.newest is not None), default=None)
    return Finding(
        check=CONFLICT_CHECK,
        kind=Kind.STORE_CONFLICT,
        urn=entity.urn,
        entity_type=entity.entity_type,
        changed_at=newest,
        details={"stores": holders, "compared": rows.store},
        repairs=(RepairKind.FIX_ROW,),
        stores=tuple(c.store for c in rows.claims),
    )


def federate(
    entity: JoinedEntity, findings: list[Finding], start: int, stores: dict[str, dict[str, int]]
) -> None:
    """Name the store of the entity's findings (those from `start` on), add its conflict, count it."""
    rows = entity.rows
    if not isinstance(rows, FederatedRows):
        return  # an orphan: no store holds the urn
    for i in range(start, len(findings)):
        findings[i] = replace(findings[i], stores=(rows.store,))
    for holder in rows.holders:
        counts = stores.setdefault(holder, {"entities": 0, "conflicts": 0})
        counts["entities"] += 1
        if rows.conflict:
            counts["conflicts"] += 1
    if rows.conflict:
        findings.append(conflict_finding(entity, rows))


def conflict_verdict(finding: Finding, observation: Observation | None) -> Classified:
    """A conflict never converges by itself: diverged, whatever the consumer does."""
    held = finding.details.get("stores", {})
    said = ", ".join(
        f"{name} ({what.get('aspects')} aspects, latest {what.get('latest_createdon')})"
        for name, what in held.items()
    )
    reason = (
        f"held by {len(held)} stores: {said}; the index shows whichever wrote last "
        f"(compared with {finding.details.get('compared')}'s rows): fix the rows so one store owns it"
    )
    return diverged(finding, reason, observation, kafka=True)  # its kind: store_conflict
