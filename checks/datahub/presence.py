"""index.missing-document / index.orphan-document: an entity without a doc, a doc without an entity.

Divergence: the entity index has no document for an entity that has rows (search cannot find
it), or holds a document for a urn with no rows (search shows a ghost).
Cause: an MCL never published, an index write that failed and was skipped, a restore from an
old snapshot, or a hard delete whose event never reached the consumer.
Repair: DataHub's `datahub-upgrade -u RestoreIndices -a urn=URN` (a RESTATE replay); an orphan
doc is deleted from the index (RestoreIndices never deletes).
"""

from __future__ import annotations

from collections.abc import Iterator

from auditor.checks.datahub.base import Check, CheckContext
from auditor.core.model import Finding, Kind, RepairKind
from auditor.platforms.datahub.documents.entity import JoinedEntity
from auditor.platforms.datahub.naming import ENTITY_INDEX_V3_SUFFIX, document_id, document_id_v3


class MissingDocument(Check):
    id = "index.missing-document"
    kinds = (Kind.MISSING_DOCUMENT,)
    repairs = {Kind.MISSING_DOCUMENT: (RepairKind.REPLAY_ASPECT,)}

    def run(self, entity: JoinedEntity, ctx: CheckContext) -> Iterator[Finding]:
        if entity.rows is None or entity.doc is not None or entity.index is None:
            return
        if not ctx.searchable(entity.entity_type):
            return  # no searchable field (telemetry, globalSettings, dataHubUpgrade...): no document
        # the _id the document should have (V3: the SHA-256 of the urn), as stale and orphan say
        v3 = entity.index.endswith(ENTITY_INDEX_V3_SUFFIX)
        doc_id = document_id_v3(entity.urn) if v3 else document_id(entity.urn)
        yield self.finding(Kind.MISSING_DOCUMENT, entity, changed_at=entity.rows.changed_at, doc_id=doc_id)


class OrphanDocument(Check):
    id = "index.orphan-document"
    kinds = (Kind.ORPHAN_DOCUMENT,)
    # its rows are gone: delete the doc, its system-metadata docs and its edges
    repairs = {Kind.ORPHAN_DOCUMENT: (RepairKind.DELETE_DOCUMENT,)}

    def run(self, entity: JoinedEntity, ctx: CheckContext) -> Iterator[Finding]:
        if entity.rows is None and entity.doc is not None:
            yield self.finding(Kind.ORPHAN_DOCUMENT, entity, index=entity.doc.index, doc_id=entity.doc.id)
