"""OpenMetadata's checks: one entity's row against its search document -> at most one finding.

missing_document (a row, no doc), orphan_document (a doc, no row; also a doc whose `_id` is
not a UUID: no OpenMetadata entity can own it), soft_delete_mismatch (deleted in the row but
searchable as live, or the reverse), stale_fields (version, updatedAt, name,
fullyQualifiedName, description, owners, tags, domains, and what the type's index class takes
from entity_relationship: service, upstreamLineage, followers, totalVotes), store_behind (the
document records a later write than the row: a higher version, or the same one updated later;
the store is behind, never repaired unless asked) and malformed_aspect (a row whose JSON cannot
be read). Each finding declares what repairs it: a rewrite of the whole document from the row,
the deletion of an orphan, a fix of the row itself, or nothing (the store behind).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from auditor.core.model import Finding, Kind, RepairKind
from auditor.platforms.openmetadata.fields import (
    BadRow,
    Key,
    KeyFields,
    differences,
    doc_fields,
    doc_values,
    key_of,
    only_the_delete_flag_moved,
    parse_entity,
    row_fields,
    row_values,
)
from auditor.platforms.openmetadata.fields import (
    keys_agree as keys_agree,  # the join's first comparison, beside the keys
)
from auditor.platforms.openmetadata.naming import OmEntity, is_uuid
from auditor.platforms.openmetadata.records import OmDoc, OmRow

CHECK_ID = "openmetadata"
PLATFORM = "openmetadata"
REPAIRS: dict[Kind, tuple[RepairKind, ...]] = {
    Kind.MISSING_DOCUMENT: (RepairKind.REWRITE_DOCUMENT,),
    Kind.STALE_FIELDS: (RepairKind.REWRITE_DOCUMENT,),
    Kind.SOFT_DELETE_MISMATCH: (RepairKind.REWRITE_DOCUMENT,),
    Kind.ORPHAN_DOCUMENT: (RepairKind.DELETE_DOCUMENT,),
    Kind.MALFORMED_ASPECT: (RepairKind.FIX_ROW,),
    # the store is behind the index (a lagging replica, a restored database): nothing, unless the
    # repair is told the store's state is to win (--prefer-store)
    Kind.STORE_BEHIND: (),
}
PREFER_STORE = "--prefer-store"


def _millis(value: int | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _finding(
    entity: OmEntity, index: str, entity_id: str, kind: Kind, changed: datetime | None, **details: Any
) -> Finding:
    details = {"platform": PLATFORM, "doc_id": entity_id, **details}
    return Finding(
        check=CHECK_ID,
        kind=kind,
        urn=entity_id,
        entity_type=entity.entity_type,
        index=index,
        changed_at=changed,
        details=details,
        repairs=REPAIRS[kind],
    )


def check(entity: OmEntity, index: str, row: OmRow | None, doc: OmDoc | None) -> Finding | None:
    """The one difference between a row and its doc that matters most (None: they agree)."""
    if row is None and doc is None:
        return None
    if row is None:
        assert doc is not None
        extra: dict[str, Any] = {"fqn": doc_fields(doc.source).fqn, "doc_index": doc.index}
        if not is_uuid(doc.id):
            extra["note"] = "the document's _id is not a UUID: no OpenMetadata entity can own it"
        return _finding(entity, index, doc.id, Kind.ORPHAN_DOCUMENT, None, **extra)
    changed = _millis(row.updated_at)
    try:
        data = parse_entity(row.json, row.id)
    except BadRow as exc:
        return _finding(entity, index, row.id, Kind.MALFORMED_ASPECT, changed, reason=str(exc))
    truth = _truth(data, row, entity.entity_type)
    changed = _millis(truth.updated_at) or changed
    if doc is None:
        return _finding(
            entity, index, row.id, Kind.MISSING_DOCUMENT, changed, fqn=truth.fqn, deleted=truth.deleted
        )
    seen = doc_fields(doc.source)
    fields = differences(truth, seen)
    if only_the_delete_flag_moved(data, seen):  # OpenMetadata's soft-delete script, as it writes
        fields = [f for f in fields if f not in ("version", "updatedAt")]
    if not fields and truth.deleted == seen.deleted:
        return None
    expected, actual = truth.as_dict(), seen.as_dict()
    # the documented shape of every platform's stale fields (docs/report.md)
    shown = [
        {"field": name, "expected": expected[name], "actual": actual[name], "kind": "mismatch"}
        for name in fields
    ]
    if newer(truth, seen):
        assert truth.updated_at is not None and seen.updated_at is not None
        return _finding(
            entity,
            index,
            row.id,
            Kind.STORE_BEHIND,
            changed,
            fqn=truth.fqn,
            fields=shown,
            index_version=seen.version,
            store_version=truth.version,
            index_updated=(_millis(seen.updated_at) or datetime.min).isoformat(timespec="milliseconds"),
            ahead_seconds=(seen.updated_at - truth.updated_at) / 1000.0,
            store_lag=None,
            prefer_store=PREFER_STORE,
        )
    if truth.deleted != seen.deleted:
        why = (
            "deleted in the database, searchable as live"
            if truth.deleted
            else "live, marked deleted in search"
        )
        return _finding(
            entity,
            index,
            row.id,
            Kind.SOFT_DELETE_MISMATCH,
            changed,
            fqn=truth.fqn,
            deleted={"expected": truth.deleted, "actual": doc.source.get("deleted")},
            note=why,
            fields=shown,
        )
    if fields:
        return _finding(entity, index, row.id, Kind.STALE_FIELDS, changed, fqn=truth.fqn, fields=shown)
    return None


def newer(truth: KeyFields, seen: KeyFields) -> bool:
    """Whether the document records a later write of the entity than its row (the store is
    behind: a lagging replica, a database restored from an older backup): a higher `version`
    (OpenMetadata raises it with each change) no older, or the same version updated later (its
    consolidation of one user's edits within a session keeps the version)."""
    if None in (truth.version, seen.version, truth.updated_at, seen.updated_at):
        return False
    assert truth.version is not None and seen.version is not None
    assert truth.updated_at is not None and seen.updated_at is not None
    if seen.version > truth.version:
        return seen.updated_at >= truth.updated_at
    return seen.version == truth.version and seen.updated_at > truth.updated_at


def row_key(row: OmRow, entity_type: str | None = None) -> Key | None:
    """The key of the row's compared fields (None: unreadable, or not one bytes can compare).
    `keys_agree(row_key(row), doc_key(doc))` means `check` finds nothing in the pair."""
    try:
        data = parse_entity(row.json, row.id)
    except BadRow:
        return None
    text = row.text if row.text is not None else row.json if isinstance(row.json, str | bytes) else None
    values = row_values(
        data, row.owners, row.tags, row.domains, row.own_hash, row.links, entity_type, text=text
    )
    return key_of(values)  # the same key as `_truth(...).key()`, without building the KeyFields


def _truth(data: dict[str, Any], row: OmRow, entity_type: str | None) -> KeyFields:
    """The row's compared fields: its JSON with its owners, tags, domains and relations."""
    return row_fields(
        data,
        row.owners,
        row.tags,
        row.domains,
        own_hash=row.own_hash,
        links=row.links,
        entity_type=entity_type,
    )


def doc_key(source: dict[str, Any]) -> Key | None:
    """The key of a document's compared fields (see `row_key`)."""
    return key_of(doc_values(source))
