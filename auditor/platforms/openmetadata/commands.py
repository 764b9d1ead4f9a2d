"""Each repair action with OpenMetadata's own tools (the SearchIndexingApplication, a DELETE of
an orphan)."""

from __future__ import annotations

from auditor.core.absence import alias_lookup
from auditor.core.model import RepairKind
from auditor.core.plan import RepairAction
from auditor.core.repairs import Renderer
from auditor.reports.escape import shell_quote

OM_REINDEX = (
    'curl -X POST "$OPENMETADATA_URL"/api/v1/apps/trigger/SearchIndexingApplication '
    "-H \"Authorization: Bearer $OPENMETADATA_TOKEN\" -H 'Content-Type: application/json' -d "
)
RENDERER = Renderer("OpenMetadata's own tools")


@RENDERER.dispatch_for(RepairKind.DELETE_DOCUMENT)
def _delete_document(action: RepairAction, **_: object) -> str:
    doc = shell_quote(action.doc_id or action.urn or "")
    index = shell_quote(action.index or "")
    return f'curl -X DELETE "$SEARCH_URL"/{index}/_doc/{doc}   # its row is gone (re-checked first)'


@RENDERER.dispatch_for(RepairKind.REWRITE_DOCUMENT)
def _rewrite_document(action: RepairAction, **_: object) -> str:
    body = shell_quote(f'{{"entities":["{action.entity_type or "all"}"]}}')
    return f"{OM_REINDEX}{body}   # reindexes every {action.entity_type or 'entity'} from the database"


@RENDERER.dispatch_for(RepairKind.FIX_ROW)
def _fix_row(action: RepairAction, **_: object) -> str:
    return "fix the row's JSON in its entity table (it cannot be read): see the findings"


@RENDERER.dispatch_for(RepairKind.RECREATE_INDEX)
def _recreate_index(action: RepairAction, **_: object) -> str:
    body = shell_quote(f'{{"entities":["{action.entity_type or "all"}"],"recreateIndex":true}}')
    return (
        f"{OM_REINDEX}{body}   # creates the missing {action.index} with OpenMetadata's mappings and fills it"
    )


@RENDERER.dispatch_for(RepairKind.ALIAS_ONE_INDEX)
def _alias_one_index(action: RepairAction, **_: object) -> str:
    return alias_lookup(action.index or "")
