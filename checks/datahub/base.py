"""What a check is: a stable id, the kinds it reports, and `run(entity, ctx) -> findings`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from auditor.core.model import Finding, Kind, RepairKind
from auditor.platforms.datahub.documents.behind import LaterWrite, backfilled, behind, later_writes
from auditor.platforms.datahub.documents.compare import FieldDiff, compare_document
from auditor.platforms.datahub.documents.entity import JoinedEntity
from auditor.platforms.datahub.documents.expected import ExpectedDocument
from auditor.platforms.datahub.documents.projection import COMPARED_EDGE_TYPES, project_entity
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.versions.view import IndexRules


@dataclass
class CheckContext:
    """What every check may use: the registry and the scan's settings. No I/O."""

    registry: Registry
    now: datetime
    index_prefix: str = ""
    # relationship types whose edges the graph check compares
    edge_types: frozenset[str] = COMPARED_EDGE_TYPES
    unknown: dict[str, int] = field(default_factory=dict)  # registry skew counters
    # the deployment's release and its indices' mappings (None: the installed rules, no witness)
    versions: IndexRules | None = None
    # how far the store is behind its primary, in seconds, when it is a replica that says so
    # (None: a primary, or not known): a later write the index holds and the store does not yet,
    # younger than this, is in flight
    store_lag: float | None = None

    def __post_init__(self) -> None:
        if self.versions is None:  # the installed wheel's release, no mapping known
            self.versions = IndexRules.installed(self.registry)

    def searchable(self, entity_type: str) -> bool:
        """Whether DataHub writes a document for this type at all."""
        assert self.versions is not None
        return self.versions.searchable(entity_type)

    def expected(self, entity: JoinedEntity) -> ExpectedDocument:
        """The search document the entity's aspects project to (memoized on the entity): the
        fields the deployment's release writes and its index's mapping holds."""
        doc = entity.cache.get("expected")
        if doc is None:
            versions = self.versions
            assert versions is not None
            where = entity.doc.index if entity.doc is not None else entity.index
            withheld = versions.withheld(entity.entity_type, where)
            doc = project_entity(self.registry, entity.urn, entity.aspects, withheld)
            if entity.doc is not None:
                versions.note_newer(entity.entity_type, entity.doc.source)
            entity.cache["expected"] = doc
            for aspect in doc.unknown_aspects:
                key = f"{entity.entity_type}.{aspect}"
                self.unknown[key] = self.unknown.get(key, 0) + 1
        return doc

    def older_release(
        self, entity: JoinedEntity, aspects: list[str], fields: list[str], changed_at: datetime | None
    ) -> tuple[str, ...]:
        """The older releases (newest first) whose rules wrote this document, when what it lacks is
        exactly what the judged release adds (empty: no older release explains it). Rows written
        after the judged release started (its first upgrade row) were indexed by it: never
        explained so."""
        versions = self.versions
        assert versions is not None
        if versions.since is not None and changed_at is not None and changed_at >= versions.since:
            return ()
        return versions.older_releases(entity.entity_type, aspects, fields)

    def later(self, entity: JoinedEntity) -> dict[str, LaterWrite]:
        """The aspects whose system-metadata document records a later write than their row
        (a later `lastUpdated`, another `runId`): the store behind, or a re-emission."""
        found = entity.cache.get("later")
        if found is None:
            found = entity.cache["later"] = later_writes(entity)
        return dict(found)

    def backfilled(self, doc: dict[str, Any], written: datetime | None) -> bool:
        """The system-metadata document is a finished upgrade step's re-emission of its row."""
        steps = self.versions.upgrade_steps if self.versions is not None else frozenset()
        return backfilled(doc, written, steps)

    def behind(self, entity: JoinedEntity) -> dict[str, list[str]]:
        """Of `later`, the aspects whose newer content the document holds and the row does not
        (the store is behind): aspect -> the fields that differ. What these fields show is never
        a stale document, and no repair writes the row over them unless asked."""
        found = entity.cache.get("behind")
        if found is None:
            later = self.later(entity)
            ok = later and entity.rows is not None and entity.doc is not None
            found = entity.cache["behind"] = (
                behind(later, self.expected(entity), self.diffs(entity)) if ok else {}
            )
        return dict(found)

    def diffs(self, entity: JoinedEntity) -> list[FieldDiff]:
        """Differences between the expected and the actual document (memoized on the entity)."""
        found = entity.cache.get("diffs")
        if found is None:
            actual = entity.doc.source if entity.doc else {}
            found = compare_document(self.expected(entity), actual)
            entity.cache["diffs"] = found
        return list(found)


class Check:
    """A rule comparing the truth with one projection. Subclasses set the class variables.

    `repairs` declares, per kind of finding, what fixes it when it is a divergence: the repair
    plan collects these, reports render them, rebuild executes them. A custom check declares
    its own the same way.
    """

    id: ClassVar[str]
    kinds: ClassVar[tuple[Kind, ...]]
    repairs: ClassVar[dict[Kind, tuple[RepairKind, ...]]]

    def run(self, entity: JoinedEntity, ctx: CheckContext) -> Iterator[Finding]:
        raise NotImplementedError

    def repairs_for(self, kind: Kind, details: dict[str, Any]) -> tuple[RepairKind, ...]:
        """What repairs one finding of this check (by default: as declared for its kind)."""
        return self.repairs.get(kind, ())

    def finding(
        self,
        kind: Kind,
        entity: JoinedEntity,
        *,
        index: str | None = None,
        aspect: str | None = None,
        changed_at: datetime | None = None,
        **details: Any,
    ) -> Finding:
        return Finding(
            check=self.id,
            kind=kind,
            urn=entity.urn,
            entity_type=entity.entity_type,
            index=index if index is not None else entity.index,
            aspect=aspect,
            changed_at=changed_at,
            details=details,
            repairs=self.repairs_for(kind, details),
        )
