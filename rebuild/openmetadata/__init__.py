"""OpenMetadata repair: rewrite documents from the database (targeted), then verify with the scan.

Each document is the auditor's own projection of the entity's row (auditor/core/om_document.py)
with its owners and tags; an orphan's document is deleted only after its row is re-read and
found gone. Ordering guard: a document newer than the row just read is left alone, and the rows
are read again after each batch is written: an entity the server wrote meanwhile is written
again from its newer row, so an older state never stays over a newer one. The repair runs under
the shared guard (auditor/rebuild/guard.py): one repair at a time per database and cluster alias,
a checkpoint after each confirmed batch (entity types in name order, ids in byte order), and
`--resume` starts after the last confirmed id. Writes are idempotent: a run again without
`--resume` rewrites everything it covers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from auditor.backends.index_writer import BulkFailure, BulkItem, IndexWriter
from auditor.core.classify import decided, diverged, explained
from auditor.core.model import Classified, Finding, Kind, RepairKind, Report, Selection, Verdict
from auditor.core.plan import RebuildOutcome, plan
from auditor.core.repairs import Mode
from auditor.errors import ConfigError, UnknownUrn
from auditor.platforms.openmetadata import relations
from auditor.platforms.openmetadata.document import build_document, fqn_hash, split_fqn
from auditor.platforms.openmetadata.fields import BadRow, parse_entity
from auditor.platforms.openmetadata.join import OmScanner
from auditor.platforms.openmetadata.modes import EXECUTORS
from auditor.platforms.openmetadata.naming import OmEntity
from auditor.platforms.openmetadata.records import OmRow
from auditor.platforms.openmetadata.scan import OmParts, OmScanOptions
from auditor.platforms.openmetadata.search import OmSearch
from auditor.platforms.openmetadata.store import OmStore, reference
from auditor.platforms.openmetadata.version import migration_level, release_key
from auditor.rebuild.guard import Guarded, guarded, index_count, planned_deletes, refuse_mass_delete
from auditor.rebuild.request import RebuildRequest
from auditor.rebuild.throttle import Throttle
from auditor.rebuild.verify import RepairSight, still_wrong
from auditor.scan import engine
from auditor.scan.engine import Judging

GUARD_ROUNDS = 3  # writes of an entity the server keeps changing under the repair


def _first_part(entity: dict[str, Any]) -> str:
    fqn = entity.get("fullyQualifiedName")
    return split_fqn(fqn)[0].strip('"') if isinstance(fqn, str) and fqn else ""


@dataclass
class OmRepairRequest:
    """What to repair: judged findings (a report) or, for a selection, what the join finds now."""

    entities: list[OmEntity]
    findings: Sequence[Classified] | None = None
    include: frozenset[Verdict] = frozenset({Verdict.DIVERGED})
    ids: tuple[str, ...] = ()  # ids (or FQNs, resolved first)
    apply: bool = False
    batch: int = 500
    full: bool = False
    visibility: float = 2.0
    progress: Callable[[str, int], None] | None = None
    release: str | None = None  # --platform-version: the release whose documents to write
    rate: float | None = None  # --rate: entities per second
    # --prefer-store: a document newer than its row (the store behind) is rewritten from the row
    # too (a restored database whose state is to win); without it, left as it is
    prefer_store: bool = False
    # the repair as asked: its lock, checkpoint, --resume and --break-stale-lock (rebuild/guard.py)
    guard: RebuildRequest = field(default_factory=lambda: RebuildRequest("reindex"))


@dataclass
class OmRepair:
    """The read side, the writer, and what a repair has done so far."""

    store: OmStore
    search: OmSearch
    writer: IndexWriter
    counts: dict[str, int] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    # entity type -> ids whose documents the cluster refused (400: too deep for its mapping or its
    # parser, say) or that cannot be written as JSON: no write will ever take them
    refused: dict[str, set[str]] = field(default_factory=dict)
    release: str | None = None  # given (--platform-version); else the database's migration level
    rate: float | None = None  # --rate: entities written per second (None: as fast as it goes)
    # entity type -> ids whose documents, newer than their rows, a full rebuild carried over
    kept_of: dict[str, set[str]] = field(default_factory=dict)
    _level: list[tuple[int, ...] | None] = field(default_factory=list, repr=False)
    _throttle: Throttle | None = field(default=None, repr=False)

    def pace(self, n: int) -> None:
        """Wait until `n` more entities may be written (--rate, smoothed)."""
        if self._throttle is None:
            self._throttle = Throttle(self.rate)
        for _ in range(n):
            self._throttle.wait()

    def level(self) -> tuple[int, ...] | None:
        """The release whose documents a repair writes (None: unknown, the newest shape)."""
        if not self._level:
            given = release_key(self.release) if self.release else None
            found = migration_level(self.store.migrations() or ())
            self._level.append(given or (release_key(found) if found else None))
        return self._level[0]

    def add(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    def record(self, entity_type: str, failures: Sequence[BulkFailure], sent: Sequence[str] = ()) -> None:
        """The writes that failed, each with the cluster's reason; a document refused as it is
        (400, or not writable as JSON: status 0) is remembered as refused. `sent`: the ids of
        the documents written meanwhile (a success clears an earlier failure)."""
        bad = {f.item.urn for f in failures}
        for i in sent:
            if i not in bad:
                self.failed.pop(i, None)
                self.refused.get(entity_type, set()).discard(i)
        for failure in failures:
            urn = failure.item.urn
            self.failed[urn] = f"{failure.status}: {failure.reason}" if failure.status else failure.reason
            if failure.status in (0, 400):
                self.refused.setdefault(entity_type, set()).add(urn)

    def documents(self, entity: OmEntity, rows: Sequence[OmRow]) -> dict[str, dict[str, Any]]:
        """id -> the document for each readable row (an unreadable row is a failure, said why)."""
        refs = [o for r in rows for o in (*r.owners, *r.domains)]
        known = self.store.owner_refs(refs) if refs else {}

        def named(ref: dict[str, Any]) -> dict[str, Any]:  # an inherited one stays marked so
            found = known.get(str(ref.get("id")), ref)
            return {**found, "inherited": True} if ref.get("inherited") else found

        out: dict[str, dict[str, Any]] = {}
        parsed: dict[str, dict[str, Any]] = {}
        for row in rows:
            try:
                parsed[row.id] = parse_entity(row.json, row.id)
            except BadRow as exc:
                self.failed[row.id] = f"its row cannot be read: {exc}"
        kind = entity.entity_type
        found = self.store.entity_json(
            {w for r in rows if r.id in parsed for w in relations.wanted(kind, r.links)}
        )
        services = self._services(entity, parsed.values())
        for row in rows:
            data = parsed.get(row.id)
            if data is None:
                continue
            related = relations.derived(kind, data, list(row.links), found, reference, fqn_hash)
            if "service" not in related and "service" not in data:  # no `contains` row: its FQN's
                service = services.get(_first_part(data))
                if service is not None:
                    related["service"] = service
            owners = [named(o) for o in row.owners]
            domains = [named(d) for d in row.domains]
            out[row.id] = build_document(data, kind, owners, row.tags, domains, self.level(), related=related)
        return out

    def _services(self, entity: OmEntity, rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """An asset's service where no `contains` row names it (a hand-written database): the service
        its FQN begins with."""
        kind = next((p for p in entity.parent_aliases if p.endswith("Service")), None)
        if kind is None:
            return {}
        return self.store.refs_by_name(kind, [_first_part(r) for r in rows if "service" not in r])

    def write_index(self, entity: OmEntity, name: str | None) -> str:
        """Where to write: the index name, or the one index behind its alias."""
        if name is None:
            raise ConfigError(
                f"no index {entity.index_name(self.search.cluster_alias)} (nor its alias) to repair",
                hint="create it (OpenMetadata's SearchIndexingApplication), or run reindex --full",
            )
        concrete, _ = self.writer.concrete(name)
        if len(concrete) != 1:
            raise ConfigError(
                f"{name} points at {len(concrete)} indices ({', '.join(concrete)}): which to write?"
            )
        return concrete[0]

    def rewrite(self, entity: OmEntity, index: str, ids: Sequence[str]) -> None:
        """Rewrite these entities' docs from their rows; delete those whose rows are gone.

        The rows are read, the docs built, the rows read again just before the write (an entity
        written meanwhile waits for the next round: never an older state over a newer one), and
        again after it (an entity the server wrote during the write is written again)."""
        todo = list(ids)
        self.pace(len(todo))
        for _ in range(GUARD_ROUNDS):
            if not todo:
                return
            rows = self.store.read(entity, todo)
            docs = self.documents(entity, list(rows.values()))
            before = self.store.read(entity, todo)
            same = [i for i in docs if i in before and before[i].fingerprint == rows[i].fingerprint]
            gone = [i for i in todo if i not in rows and i not in before]
            items = [BulkItem("index", index, i, i, docs[i]) for i in same]
            items += [BulkItem("delete", index, i, i) for i in gone]
            failures = self.writer.bulk(items)
            self.record(entity.entity_type, failures, same)
            self.add("documents written", len(same) - len({f.item.urn for f in failures} & set(same)))
            self.add("orphans deleted (rows re-checked: gone)", len(gone))
            after = self.store.read(entity, todo)
            done = set(gone) | {i for i in same if i in after and after[i].fingerprint == rows[i].fingerprint}
            done |= {i for i in todo if i in rows and i not in docs}  # unreadable: a failure, said why
            todo = [i for i in todo if i not in done]
            if todo:
                self.add("written again (the server wrote them meanwhile)", len(todo))
        for i in todo:
            self.failed[i] = f"its row kept changing during {GUARD_ROUNDS} rounds: run the repair again"


def chosen_findings(
    findings: Sequence[Classified], include: frozenset[Verdict], prefer_store: bool = False
) -> list[Classified]:
    """The report's findings of the verdicts asked for; an in-flight one asked for explicitly
    (`--include in_flight`: a pending retry, say) is repaired as its kind says. A document newer
    than its row (the store behind) only with `prefer_store`, whatever `include` says."""
    out = []
    for c in findings:
        if prefer_store and c.finding.kind == Kind.STORE_BEHIND:
            c = diverged(store_wins(c.finding), c.evidence.reason)
        elif c.verdict not in include:
            continue
        if c.verdict == Verdict.IN_FLIGHT:
            c = decided(c, Verdict.DIVERGED, c.evidence)
        out.append(c)
    return out


def selected_findings(scanner: OmScanner, request: OmRepairRequest) -> list[Classified]:
    """Without a report: what the join finds now over the selection, each to be repaired (a
    document newer than its row only with --prefer-store: otherwise it has nothing to repair)."""
    joined = scanner.run(request.entities, request.ids)
    wins = store_wins if request.prefer_store else (lambda f: f)
    return [diverged(wins(f), "selected for repair") for f in joined.findings]


def store_wins(finding: Finding) -> Finding:
    """A finding of the store behind, repaired as the store's state winning: the document
    rewritten from the row (--prefer-store)."""
    if finding.kind != Kind.STORE_BEHIND:
        return finding
    return dataclasses.replace(finding, repairs=(RepairKind.REWRITE_DOCUMENT,))


def resolve_ids(store: OmStore, entities: list[OmEntity], given: tuple[str, ...]) -> tuple[str, ...]:
    """`--urn` values as ids: a UUID as it is, a fully qualified name looked up in each table."""
    from auditor.platforms.openmetadata.naming import is_uuid

    names = [g for g in given if not is_uuid(g)]
    found: dict[str, str] = {}
    for entity in entities:
        found.update(store.find_by_fqn(entity, names))
    unknown = [n for n in names if n not in found]
    if unknown:
        raise UnknownUrn(
            f"no entity has the id or fully qualified name {unknown[0]!r}",
            hint="pass an entity's id (a UUID) or its fullyQualifiedName; --entity-type narrows the lookup",
        )
    return tuple(g if is_uuid(g) else found[g] for g in given)


def repair(store: OmStore, search: OmSearch, writer: IndexWriter, request: OmRepairRequest) -> RebuildOutcome:
    """Plan; with `apply`, rewrite/delete per entity type, refresh, and verify with the scan's steps."""
    began = datetime.now(UTC)
    scanner = OmScanner(store, search)
    if request.findings is not None:
        chosen = chosen_findings(request.findings, request.include, request.prefer_store)
    else:
        chosen = selected_findings(scanner, request)
    repairs = plan(chosen)
    outcome = RebuildOutcome("reindex", request.apply, repairs)
    outcome.rows = len(repairs.urns)
    outcome.elsewhere = EXECUTORS.elsewhere(Mode.REINDEX, repairs)
    held = index_count(search.search)
    refuse_mass_delete(request.guard, outcome, planned_deletes(repairs), held, store.description)
    if not request.apply:
        return outcome
    work = OmRepair(store, search, writer, release=request.release, rate=request.rate)
    by_type = {e.entity_type: e for e in request.entities}
    touched: dict[str, list[str]] = {}
    for action in repairs.actions:
        if action.kind in EXECUTORS.kinds(Mode.REINDEX) and action.urn:
            touched.setdefault(action.entity_type or "", []).append(action.urn)
    for entity_type in touched:
        if entity_type not in by_type:
            raise ConfigError(f"the report names an entity type {entity_type!r} outside this repair's scope")
    with guarded(
        request.guard, outcome, _scope(request, chosen), store.description, search.cluster_alias
    ) as guard:
        work.counts.update(guard.checkpoint.counts)  # a resumed run's counts go on
        work.failed.update(guard.checkpoint.why)
        _walk(work, request, touched, guard)
        writer.refresh_written()
        outcome.counts, outcome.failed, outcome.why = work.counts, sorted(work.failed), dict(work.failed)
        verify(scanner, request, touched, outcome, began)
        guard.finish(outcome)
    return outcome


def _scope(request: OmRepairRequest, chosen: Sequence[Classified]) -> dict[str, Any]:
    """What the repair covers, for its checkpoint's name: a report's findings, or the selection
    (a resumed selection finds only what is still wrong, and starts after the last confirmed id)."""
    types = sorted(e.entity_type for e in request.entities)
    if request.findings is not None:
        return {"types": types, "report": sorted(f"{c.finding.entity_type}/{c.finding.urn}" for c in chosen)}
    return {"types": types, "ids": sorted(request.ids)}


def _walk(work: OmRepair, request: OmRepairRequest, touched: dict[str, list[str]], guard: Guarded) -> None:
    """Rewrite the touched entities type by type (name order), ids in byte order, batch by batch,
    the checkpoint saved after each; a resumed walk skips what an earlier run confirmed."""
    by_type = {e.entity_type: e for e in request.entities}
    for part, entity_type in enumerate(sorted(touched)):
        entity = by_type[entity_type]
        read_name, _ = work.search.resolve(entity)
        ids = sorted(set(touched[entity_type]), key=lambda i: i.encode())
        todo = [i for i in ids if not guard.past(part, i)]
        if len(todo) < len(ids):
            work.add("skipped (confirmed by the run resumed)", len(ids) - len(todo))
        index = work.write_index(entity, read_name) if todo else ""
        for start in range(0, len(todo), request.batch):
            batch = todo[start : start + request.batch]
            work.rewrite(entity, index, batch)
            c = guard.checkpoint
            c.counts, c.failed, c.why = dict(work.counts), sorted(work.failed), dict(work.failed)
            guard.confirm(part, batch[-1])
            if request.progress:
                request.progress(f"{entity_type} entities", len(ids) - len(todo) + start + len(batch))


def verify(
    scanner: OmScanner,
    request: OmRepairRequest,
    touched: dict[str, list[str]],
    outcome: RebuildOutcome,
    began: datetime,
) -> None:
    """The shared verification (rebuild/verify.py): the scan engine with OpenMetadata's parts over
    the touched entities, judged by the repair's own sight; what still differs."""
    ids = tuple(i for group in touched.values() for i in group)
    if not ids:
        return
    entities = [e for e in request.entities if e.entity_type in touched]
    options = OmScanOptions(grace=0.0, visibility=request.visibility, use_state=False)
    judging = Judging(grace=0.0, use_state=False)
    sight = RepairSight(began)  # the repair saw each finding when it began

    def scan(scope: Selection) -> Report:
        report = Report(started_at=datetime.now(UTC), scope=scope)
        parts = OmParts(scanner.store, scanner.search, entities, report, options)
        return engine.run(parts, sight, report, judging)

    # every touched entity in one batch: the re-read's wait is paid once
    found = still_wrong(scan, ids, batch=0)
    outcome.still_wrong = [explained(c, "still differs after the repair") for c in found]
    outcome.verified_urns = len(ids)
