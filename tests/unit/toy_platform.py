"""A third platform that lives in the tests: an in-memory store and index, no services.

It proves the seam (docs/adding-a-platform.md): it registers through the same registry as
DataHub and OpenMetadata, and the face (auditor.api, the CLI), the verdict rules, the repair
plan and the reports work for it without a line of theirs naming it. Its knowledge is what a
real platform's home holds, in small: naming (`doc_id`), derivation (`expected`), a reader and
a writer (the `World`), a check (`check`), triage steps and its repair commands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from auditor.backends.connect import open_state
from auditor.core.classify import classify
from auditor.core.model import Finding, Kind, PlatformKind, RepairKind, Report, Selection
from auditor.core.plan import RebuildOutcome, RepairAction, plan
from auditor.core.repairs import Executors, Mode, Renderer
from auditor.core.triage import Boundary, Status, Step, TriageResult
from auditor.errors import ConfigError
from auditor.platforms.base import Capability, Platform
from auditor.scan import engine
from auditor.scan.engine import Joined, Judging, Parts

NAME = "toy"
CHECK = "toy.document"
LEGACY = PlatformKind(NAME, "legacy_document")  # a document its older format wrote


@dataclass
class Row:
    name: str
    description: str
    updated_at: datetime


@dataclass
class World:
    """One toy deployment: its truth (rows by id) and its search index (documents by id)."""

    rows: dict[str, Row] = field(default_factory=dict)
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    writes: int = 0  # documents written by repairs


WORLDS: dict[str, World] = {}


def world_of(settings: Any) -> World:
    url = settings.store_url.get_secret_value() if settings.store_url else ""
    if url not in WORLDS:
        raise ConfigError(f"no toy world at {url!r}")
    return WORLDS[url]


def expected(row: Row) -> dict[str, Any]:
    """How the toy platform derives a search document from its row."""
    return {"name": row.name, "description": row.description}


def check(entity_id: str, row: Row | None, doc: dict[str, Any] | None) -> Finding | None:
    """The one check: missing, orphan or stale, in the documented shapes (docs/report.md)."""
    base: dict[str, Any] = {"platform": NAME, "doc_id": entity_id}
    if row is not None and doc is None:
        return Finding(CHECK, Kind.MISSING_DOCUMENT, entity_id, "thing", "things", None, row.updated_at,
                       base, (RepairKind.REWRITE_DOCUMENT,))  # fmt: skip
    if row is None and doc is not None:
        return Finding(CHECK, Kind.ORPHAN_DOCUMENT, entity_id, "thing", "things", None, None,
                       base, (RepairKind.DELETE_DOCUMENT,))  # fmt: skip
    if row is None or doc is None:
        return None
    if doc.get("legacy"):  # a kind only the toy has, in its own namespace (the kernel's Kind untouched)
        return Finding(CHECK, LEGACY, entity_id, "thing", "things", None, row.updated_at, base,
                       (RepairKind.REWRITE_DOCUMENT,))  # fmt: skip
    want = expected(row)
    fields = [{"field": k, "expected": v, "actual": doc.get(k)} for k, v in want.items() if doc.get(k) != v]
    if not fields:
        return None
    return Finding(CHECK, Kind.STALE_FIELDS, entity_id, "thing", "things", None, row.updated_at,
                   {**base, "fields": fields}, (RepairKind.REWRITE_DOCUMENT,))  # fmt: skip


class ToyParts(Parts):
    """What the toy brings to the scan engine: its join, nothing else (no re-reads, no change
    log: the engine's defaults judge by time and history)."""

    platform = NAME

    def __init__(self, world: World) -> None:
        self.world = world

    def types(self, selection: Selection) -> tuple[str, ...]:
        return ("thing",)

    def join(self, selection: Selection, progress: Any = None, sink: Any = None) -> Joined:
        w = self.world  # a few findings: returned in the result (the engine spills them)
        found = [
            f for i in sorted(set(w.rows) | set(w.docs)) if (f := check(i, w.rows.get(i), w.docs.get(i)))
        ]
        return Joined(found, {"thing": len(w.rows)}, {"things": len(w.docs)})


TOYCTL = Renderer("toyctl")


@TOYCTL.dispatch_for(RepairKind.REWRITE_DOCUMENT, RepairKind.DELETE_DOCUMENT)
def _toyctl(action: RepairAction, **_: object) -> str:
    return f"toyctl reindex {action.urn}"


class Toy(Platform):
    name = NAME
    title = "Toy"
    capabilities = frozenset({Capability.TRIAGE})
    instead: ClassVar[dict[Capability, str]] = {Capability.REPLAY: "use `auditor rebuild reindex`"}
    # its repairs as data: one mode, and its own tool per action
    executors = Executors(
        {Mode.REINDEX: frozenset({RepairKind.REWRITE_DOCUMENT, RepairKind.DELETE_DOCUMENT})}
    )
    renderer = TOYCTL
    weak_evidence = "the toy platform has no change log: verdicts rest on time and history"

    def scan(
        self,
        settings: Any,
        selection: Selection,
        options: Any,
        progress: Any = None,
        *,
        registry: Any = None,
        log: Callable[[str], None] | None = None,
    ) -> Report:
        self.require_selection(selection)
        report = Report(started_at=datetime.now(UTC), scope=selection, sources={"platform": NAME})
        grace = settings.grace_seconds if options.grace is None else options.grace
        judging = Judging(grace=grace, max_findings=options.max_findings, use_state=options.use_state)
        with closing(open_state(settings, options.use_state)) as state:  # a second sight: persistent
            return engine.run(ToyParts(world_of(settings)), state, report, judging, progress)

    def triage(
        self,
        settings: Any,
        text: str,
        *,
        entity_types: Sequence[str] = (),
        grace: float | None = None,
        settle: float = 10.0,
    ) -> TriageResult:
        w = world_of(settings)
        key = text.strip()
        row, doc = w.rows.get(key), w.docs.get(key)
        out = TriageResult(asked=text, urn=key, checked_at=datetime.now(UTC))
        out.steps = [
            Step(Boundary.ROWS, Status.OK if row else Status.INFO, "the row", {"present": row is not None}),
            Step(Boundary.DOCUMENT, Status.OK, "the document", {"present": doc is not None}),
        ]
        f = check(key, row, doc)
        if f is not None:
            g = settings.grace_seconds if grace is None else grace
            c = classify(f, datetime.now(UTC), grace=g, settle=0.0, position=None, kafka=None, history=None)
            out.findings = [c]
            out.steps[1].status = Status.PENDING if c.verdict.value == "in_flight" else Status.BROKEN
        return out

    def rebuild(self, settings: Any, request: Any) -> RebuildOutcome:
        w = world_of(settings)
        findings = [c for c in request.findings or () if c.verdict in request.include]
        repairs = plan(findings)
        if not request.apply:
            return RebuildOutcome("plan", False, repairs)
        for a in repairs.actions:
            row = w.rows.get(a.urn or "")
            if a.kind == RepairKind.DELETE_DOCUMENT and row is None:
                w.docs.pop(a.urn or "", None)
            elif a.kind == RepairKind.REWRITE_DOCUMENT and row is not None:
                w.docs[a.urn or ""] = expected(row)
            w.writes += 1
        return RebuildOutcome("reindex", True, repairs)
