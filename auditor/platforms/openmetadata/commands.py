"""OpenMetadata's repair commands: `auditor rebuild reindex --platform openmetadata` and its own
tools (the SearchIndexingApplication, a DELETE of an orphan)."""

from __future__ import annotations

from collections.abc import Iterable

from auditor.core.model import Classified, RepairKind
from auditor.core.plan import REINDEX_ONLY, RepairAction, RepairPlan, actions_for, plan
from auditor.reports.escape import shell_line, shell_quote

OM = "openmetadata"
OM_REINDEX = (
    'curl -X POST "$OPENMETADATA_URL"/api/v1/apps/trigger/SearchIndexingApplication '
    "-H \"Authorization: Bearer $OPENMETADATA_TOKEN\" -H 'Content-Type: application/json' -d "
)


def om_command(action: RepairAction) -> str:
    """One action with OpenMetadata's own tools: its SearchIndexingApplication, or a DELETE."""
    if action.kind == RepairKind.DELETE_DOCUMENT:
        doc = shell_quote(action.doc_id or action.urn or "")
        index = shell_quote(action.index or "")
        return f'curl -X DELETE "$SEARCH_URL"/{index}/_doc/{doc}   # its row is gone (re-checked first)'
    if action.kind == RepairKind.REWRITE_DOCUMENT:
        body = shell_quote(f'{{"entities":["{action.entity_type or "all"}"]}}')
        return f"{OM_REINDEX}{body}   # reindexes every {action.entity_type or 'entity'} from the database"
    return "fix the row's JSON in its entity table (it cannot be read): see the findings"


def finding_commands(c: Classified) -> list[str]:
    """OpenMetadata's own tools that repair one judged finding."""
    return [om_command(a) for a in actions_for(c)]


def finding_rebuild(c: Classified) -> str | None:
    """The `auditor rebuild` command that repairs one judged finding (None: nothing to write)."""
    if not {a.kind for a in actions_for(c)} & REINDEX_ONLY:
        return None
    return f"auditor rebuild reindex --platform openmetadata --urn {shell_quote(c.finding.urn)} --apply"


def repair_commands(findings: Iterable[Classified]) -> list[str]:
    """What to run for a report's findings."""
    return om_plan_commands(plan(findings))


def om_plan_commands(repairs: RepairPlan, per_urn: int = 5) -> list[str]:
    """An OpenMetadata plan: `auditor rebuild reindex --platform openmetadata`, then its own tools."""
    urns = sorted({a.urn for a in repairs.actions if a.kind in REINDEX_ONLY and a.urn})
    out: list[str] = []
    if urns and len(urns) <= per_urn:
        picked = " ".join(f"--urn {shell_quote(u)}" for u in urns)
        out.append(f"auditor rebuild reindex --platform openmetadata {picked} --apply")
    elif urns:
        out.append(
            "auditor rebuild reindex --platform openmetadata --from-report scan.json --apply"
            f"   # {len(urns)} entities; scan.json: this scan's --format json report"
        )
    native = list(dict.fromkeys(om_command(a) for a in repairs.actions))
    if out and native:
        out.append("# or with OpenMetadata's own tools:")
    return [shell_line(c) for c in out + native[: per_urn * 2]]
