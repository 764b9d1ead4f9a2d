"""Triage of one OpenMetadata entity: its row, the server's retry queue, its search document.

OpenMetadata has no change log: its server writes the row, then the document, in one request,
and queues a search write that failed in `search_index_retry_queue`. So its boundaries are
those three. The entity is found by its fully qualified name or its id (in every entity type,
or those asked for); the verdict is the OpenMetadata scan's on that one entity (the row and
the document re-read, judged on the retry queue, the change's age and the state file, which
is read, never written).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from auditor.backends.protocols import State
from auditor.checks.openmetadata import check
from auditor.core.triage import Boundary, Status, Step, TriageResult
from auditor.errors import ConfigError
from auditor.platforms.openmetadata.fields import BadRow, parse_entity
from auditor.platforms.openmetadata.join import OmScanner
from auditor.platforms.openmetadata.naming import OmEntity, is_uuid
from auditor.platforms.openmetadata.pasted import unwrap
from auditor.platforms.openmetadata.records import OmDoc, OmRow, RetryRow
from auditor.platforms.openmetadata.reindex_read import read_reindex
from auditor.platforms.openmetadata.reindex_rows import first_line
from auditor.platforms.openmetadata.scan import OmScanOptions, judge, reobserve
from auditor.platforms.openmetadata.search import OmSearch
from auditor.platforms.openmetadata.store import OmStore
from auditor.triage.place import place


def resolve(
    store: OmStore, search: OmSearch, entities: Sequence[OmEntity], asked: str
) -> list[tuple[OmEntity, str]]:
    """(entity type, id) of every entity whose id or fully qualified name is `asked`: by its row,
    else (no row of any type has it: an orphan) by a document. A name is looked up by the tables'
    hash columns first; only when no table knows it so is each table's JSON read for it (as a
    rebuild does). The indices are asked only when no row was found: over a slow link, a triage
    of an entity that exists waited on dozens of them. Round trips (bench/net_bench.py): the
    tables' columns in one statement, the ids or name hashes of every table in one, the indices
    resolved in one request and searched in one; a table or a statement the server refuses is
    asked on its own, as before."""
    # the tables' columns in one statement; none of them at all: the wrong database (exit 2)
    present = store.present(entities)
    if is_uuid(asked):
        rows = store.holders(present, entity_id=asked)
        if rows is None:
            rows = {e.entity_type: asked for e in present if store.read(e, [asked])}
    else:
        rows = store.holders(present, fqn=asked)
        if rows is None:
            rows = _by_name(store, present, asked, scan=False)
        rows = rows or _by_name(store, present, asked, scan=True)
    if rows:
        return [(e, rows[e.entity_type]) for e in present if e.entity_type in rows]
    return search.find_everywhere(present, asked, by_id=is_uuid(asked))


def _by_name(store: OmStore, entities: Sequence[OmEntity], asked: str, *, scan: bool) -> dict[str, str]:
    """Entity type -> the id of its entity named `asked` (see `OmStore.find_by_fqn`)."""
    out = {}
    for entity in entities:
        ids = store.find_by_fqn(entity, [asked], scan=scan)
        if asked in ids:
            out[entity.entity_type] = ids[asked]
    return out


def om_walk(
    store: OmStore,
    search: OmSearch,
    state: State,
    entities: Sequence[OmEntity],
    text: str,
    options: OmScanOptions,
) -> TriageResult:
    """One OpenMetadata entity from its row to its document; ConfigError when `text` names
    entities of several types (the caller narrows with --entity-type)."""
    began = time.monotonic()
    asked, _ = unwrap(text)  # only quotes around the whole: a name's own quoted parts stay
    matches = resolve(store, search, entities, asked)
    if not matches and asked != text.strip():  # `"lake.prod"`: a name of one quoted part
        matches = resolve(store, search, entities, text.strip())
        asked = text.strip() if matches else asked
    out = TriageResult(asked=text, urn=asked)
    if not matches:
        what = "id" if is_uuid(asked) else "fully qualified name"
        absent = {"present": False}
        out.steps = [
            Step(Boundary.ROWS, Status.INFO, f"no row of any entity type has this {what}", absent),
            Step(Boundary.DOCUMENT, Status.INFO, f"no document has this {what}", dict(absent)),
        ]
        return _finish(out, began)
    if len(matches) > 1:
        kinds = ", ".join(sorted({f"{e.entity_type} {i}" for e, i in matches}))
        raise ConfigError(
            f"{asked!r} names more than one OpenMetadata entity ({kinds})",
            hint="narrow it with --entity-type TYPE (or give the id)",
        )
    entity, entity_id = matches[0]
    out.urn = entity_id
    if entity_id != asked:
        out.read_as.append(f"the {entity.entity_type} whose fully qualified name it is: id {entity_id}")
    name, _ = search.resolve(entity)
    index = name or entity.index_name(search.cluster_alias)
    row = store.read(entity, [entity_id]).get(entity_id)
    doc = search.get(name, [entity_id]).get(entity_id) if name else None
    fqn = _fqn(row) or (str(doc.source.get("fullyQualifiedName") or "") if doc else "")
    retries = store.retry_queue([entity_id], [fqn] if fqn else [])
    found = check(entity, index, row, doc)
    if found is not None:
        seen = reobserve(
            OmScanner(store, search),
            {entity.entity_type: entity},
            {entity.entity_type: index},
            [found],
            visibility=options.visibility,
            rounds=options.rounds,
        )
        history = state.history(f.key for f in seen.still)
        out.findings = judge(seen, history, retries, grace=options.grace)
        reindex, said = read_reindex(OmScanner(store, search), {entity.entity_type: entity}, [found])
        out.unchecked += [f"reindex: {w}" for w in said]
        if reindex is not None:  # the verdict the scan gives it: a running reindex job, a failure row
            out.findings = [reindex.judge(c) for c in out.findings]
            out.warnings += reindex.warnings([entity.entity_type], {entity.entity_type: index})
    out.steps = [
        _row_step(entity, row),
        _retry_step(retries, entity_id, fqn),
        _document_step(index, doc),
    ]
    if retries is None:
        out.unchecked.append("retry queue: no search_index_retry_queue table (an older OpenMetadata)")
    place(out)
    return _finish(out, began)


def _fqn(row: OmRow | None) -> str:
    if row is None:
        return ""
    try:
        return str(parse_entity(row.json, row.id).get("fullyQualifiedName") or "")
    except BadRow:
        return ""


def _row_step(entity: OmEntity, row: OmRow | None) -> Step:
    if row is None:
        return Step(Boundary.ROWS, Status.INFO, f"no row in {entity.table}", {"present": False})
    facts: dict[str, Any] = {"present": True, "table": entity.table, "deleted": bool(row.deleted)}
    try:
        data = parse_entity(row.json, row.id)
    except BadRow as exc:
        facts["error"] = str(exc)
        return Step(Boundary.ROWS, Status.OK, f"a row in {entity.table} whose JSON cannot be read", facts)
    facts.update(
        fqn=data.get("fullyQualifiedName"),
        version=data.get("version"),
        updated_at=_when(data.get("updatedAt")),
        updated_by=data.get("updatedBy"),
        owners=len(row.owners),
        tags=sorted(str(t.get("tagFQN")) for t in row.tags),
    )
    detail = (
        f"{entity.entity_type} {data.get('fullyQualifiedName')!s} in {entity.table}: version "
        f"{data.get('version')}, updated {facts['updated_at'] or '?'} by {data.get('updatedBy') or '?'}"
        + ("; soft-deleted (deleted = true)" if row.deleted else "")
    )
    return Step(Boundary.ROWS, Status.OK, detail, facts)


def _retry_step(retries: dict[str, RetryRow] | None, entity_id: str, fqn: str) -> Step:
    if retries is None:
        return Step(Boundary.RETRY_QUEUE, Status.UNCHECKED, "no search_index_retry_queue table", {})
    retry = retries.get(entity_id) or (retries.get(fqn) if fqn else None)
    if retry is None:
        return Step(Boundary.RETRY_QUEUE, Status.OK, "no search write queued for a retry", {"queued": False})
    facts = {"queued": True, "status": retry.status, "retry_count": retry.retry_count}
    detail = f"queued: status {retry.status}" + (
        f", {retry.retry_count} retries" if retry.retry_count is not None else ""
    )
    said = first_line(retry.failure_reason)  # never its stack trace
    if said:
        detail += f" ({said})"
    return Step(Boundary.RETRY_QUEUE, Status.INFO, detail, facts)


def _document_step(index: str, doc: OmDoc | None) -> Step:
    if doc is None:
        return Step(Boundary.DOCUMENT, Status.OK, f"no document in {index}", {"present": False})
    source = doc.source
    facts = {
        "present": True,
        "index": doc.index,
        "version": source.get("version"),
        "updated_at": _when(source.get("updatedAt")),
        "deleted": source.get("deleted"),
    }
    detail = (
        f"present in {doc.index} (_id {doc.id}): version {source.get('version')}, "
        f"updated {facts['updated_at'] or '?'}"
        + ("; deleted" if str(source.get("deleted")).lower() == "true" else "")
    )
    return Step(Boundary.DOCUMENT, Status.OK, detail, facts)


def _when(millis: Any) -> str | None:
    try:
        return datetime.fromtimestamp(int(millis) / 1000, UTC).isoformat(timespec="seconds")
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _finish(out: TriageResult, began: float) -> TriageResult:
    out.checked_at = datetime.now(UTC)
    out.seconds = time.monotonic() - began
    return out
