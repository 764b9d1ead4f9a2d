"""The join: stream the truth and the projections of a selection in urn order, run the checks."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from auditor.backends import search_readers
from auditor.backends.protocols import Search, Store
from auditor.backends.search import urn_filter
from auditor.backends.search_readers import StreamSpec, read_in_process
from auditor.checks.datahub import BUILTIN_CHECKS, Check, CheckContext
from auditor.core.join import merge_join, ordered, ordered_groups
from auditor.core.join import prefetch as prefetch_in_thread
from auditor.core.model import Finding, Selection
from auditor.core.records import EntityRows, SearchDoc
from auditor.errors import ConfigError
from auditor.platforms.datahub.documents.compare import compare_document
from auditor.platforms.datahub.documents.entity import JoinedEntity
from auditor.platforms.datahub.naming import (
    ENTITY_INDEX_V3_SUFFIX,
    PLATFORM,
    entity_index,
    graph_index,
    system_metadata_index,
)
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.absence import Copy, Duplicate, fingerprint, no_index_under
from auditor.platforms.datahub.scan.federation import federate
from auditor.platforms.datahub.urns import UrnError, entity_type
from auditor.platforms.datahub.versions.view import IndexRules
from auditor.scan.engine import Joined, Sink
from auditor.scan.options import Progress


def owned(findings: list[Finding], start: int) -> None:
    """DataHub's name on the findings from `start` on (`details.platform`, first, as every
    platform's findings carry it): the one place its checks' findings leave for the scan, the
    re-observation, the triage and a repair's verification, a custom check's included."""
    for i in range(start, len(findings)):
        f = findings[i]
        if f.details.get("platform") != PLATFORM:
            details = {"platform": PLATFORM, **{k: v for k, v in f.details.items() if k != "platform"}}
            findings[i] = replace(f, details=details)


@dataclass
class ScanPlan:
    """What one join reads: the selection, its entity types, their indices and the checks run."""

    selection: Selection
    types: list[str]
    indices: dict[str, str]  # entity type -> its entity index (only the ones that exist)
    sysmeta: str | None = None  # the system-metadata index, when it exists
    graph: str | None = None  # the graph index, when it exists
    checks: list[Check] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # index -> ids of documents without a string urn (not DataHub's), skipped by the join
    misshapen: dict[str, list[str]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)  # index -> its documents, as listed
    # urn -> every copy its entity index answered with (an alias over several indices)
    duplicates: dict[str, list[SearchDoc]] = field(default_factory=dict)


@dataclass
class Witness:
    """What the joins of a scan read of a few urns, kept for a triage to show instead of reading
    them again: the plan of the last join and, per urn it judged, the joined entity (None: that
    join read nothing of it). The scan's own join judges the urns, then each round of the causal
    re-observation judges again those whose rows held still (its later reads replace the join's);
    an urn a round could not settle is dropped, to be read afresh."""

    urns: frozenset[str]
    plan: ScanPlan | None = None
    entities: dict[str, JoinedEntity | None] = field(default_factory=dict)

    def judging(self, plan: ScanPlan, settled: Iterable[str]) -> None:
        """A join of `plan` is about to judge the `settled` of its urns on what it reads."""
        self.plan = plan
        settled = set(settled)
        for urn in self.urns.intersection(plan.selection.urns):
            if urn in settled:
                self.entities[urn] = None  # until the join yields it
            else:
                self.entities.pop(urn, None)

    def saw(self, entity: JoinedEntity) -> None:
        if entity.urn in self.urns:
            self.entities[entity.urn] = entity


def _type_order(types: list[str]) -> list[str]:
    # urns of one type are contiguous in byte order, and types come in `urn:li:<type>:` order
    return sorted(types, key=lambda t: f"urn:li:{t}:")


class Scanner:
    """Joins the store with the search cluster for a selection and runs the checks."""

    def __init__(
        self,
        store: Store,
        search: Search,
        registry: Registry,
        *,
        index_prefix: str = "",
        index_overrides: dict[str, str] | None = None,
        checks: tuple[type[Check], ...] = BUILTIN_CHECKS,
        now: datetime | None = None,
        prefetch: bool = False,
        readers: int = 0,
        type_field: str | None = None,
        versions: IndexRules | None = None,
        witness: Witness | None = None,
    ) -> None:
        self.witness = witness  # a triage's urn: what the joins read of it, kept (None: nothing kept)
        self.type_field = type_field  # a unified index (V3): the field naming each doc's type
        self.store = store
        self.search = search
        self.registry = registry
        self.index_prefix = index_prefix
        self.index_overrides = index_overrides or {}  # entity type -> the index to read instead
        self.checks = [c() for c in checks]
        self.ctx = CheckContext(registry, now or datetime.now(UTC), index_prefix, versions=versions)
        self._read: Callable[[Iterable[Any]], Iterator[Any]] = prefetch_in_thread if prefetch else iter
        # how many index streams a full read gives a process of their own (search_readers.py)
        self.readers = readers if callable(getattr(search, "spec", None)) else 0
        # the last join's absences: entity type -> its entities with rows whose index does not
        # exist; the documents an alias answered with more than once (scan/absence.py)
        self.absent: dict[str, int] = {}
        self.duplicated: list[Duplicate] = []
        # id(spec) -> the first page of a `few` stream, asked with the others in one request
        self._answered: dict[int, list[dict[str, Any]]] = {}

    def _hits(
        self, specs: list[StreamSpec], few: bool, apart: bool
    ) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """`(spec number, _id, _source)` of each stream in turn: in a reader process when `apart`
        and the read is a full one (a handful of urns is one request: a child costs more), else
        here."""
        if apart and not few:
            yield from read_in_process(self.search, specs)
            return
        for n, s in enumerate(specs):
            answered = self._answered.pop(id(s), None) if few else None
            for doc_id, source in self.search.stream(
                s.index,
                list(s.sort),
                query=s.query,
                source=s.source,
                few=few,
                from_sort=s.from_sort,
                answered=answered,
            ):
                yield n, doc_id, source

    def index_of(self, entity_type: str) -> str:
        return self.index_overrides.get(entity_type) or entity_index(entity_type, self.index_prefix)

    def entity_types(self, selection: Selection) -> list[str]:
        if not selection.entity_types:
            # a look at a few urns (a repair's verification): their types' indices, not every one
            # (a request each over a network); a urn of no type the registry knows: every one
            named = {self._named_type(u) for u in selection.urns}
            if selection.urns and None not in named:
                return _type_order(sorted(n for n in named if n is not None))
            return _type_order(list(self.registry.entity_names))
        unknown = [t for t in selection.entity_types if not self.registry.has_entity(t)]
        if unknown:
            raise ConfigError(
                f"unknown entity type(s): {', '.join(unknown)}",
                hint="`auditor registry` lists the entity types DataHub's schemas define",
            )
        return _type_order([self.registry.entity(t).name for t in selection.entity_types])

    def _named_type(self, urn: str) -> str | None:
        """The urn's entity type as the registry spells it (None: not a urn of a known type)."""
        try:
            name = entity_type(urn)
        except UrnError:
            return None
        return self.registry.entity(name).name if self.registry.has_entity(name) else None

    # -- the streams ----------------------------------------------------------------------
    def _rows(self, selection: Selection, types: list[str]) -> Iterator[tuple[str, EntityRows]]:
        stream = self.store.stream_entities(
            tuple(types) if selection.entity_types else (),
            selection.urn_like,
            selection.since,
            selection.urns,
            urn_range=selection.urn_range,
        )
        checked = ordered(self._read(stream), lambda e: e.urn, f"store {self.store.description}")
        return ((e.urn, e) for e in checked)

    def _doc_specs(self, plan: ScanPlan) -> list[StreamSpec]:
        """The entity documents' streams: one an entity type whose index exists."""
        query = urn_filter("urn", plan.selection)
        specs: list[StreamSpec] = []
        for t in plan.types:
            index = plan.indices.get(t)
            if index is None:
                continue
            q = query
            if self.type_field:  # a search group's index holds several entity types
                term = {"term": {self.type_field: t}}
                q = {"bool": {"filter": [term, query]}} if query else term
            specs.append(StreamSpec(index, ("urn",), q))
        return specs

    def _docs(
        self, plan: ScanPlan, specs: list[StreamSpec], apart: bool = False
    ) -> Iterator[tuple[str, SearchDoc]]:
        selection = plan.selection

        def all_docs() -> Iterator[tuple[str, SearchDoc]]:
            few = bool(selection.urns)  # a triage or a confirmation: one request an index
            for n, doc_id, source in self._hits(specs, few, apart):
                urn = source.get("urn")
                if not isinstance(urn, str):  # sorted by the index where no urn string is
                    plan.misshapen.setdefault(specs[n].index, []).append(doc_id)
                    continue
                yield urn, SearchDoc(specs[n].index, doc_id, source)

        for urn, docs in ordered_groups(self._read(all_docs()), "entity indices"):
            if len(docs) > 1:  # one index a type: several copies are an alias over several indices
                plan.duplicates[urn] = docs
            yield urn, docs[0]

    def _group_stream(
        self, plan: ScanPlan, spec: StreamSpec, key_field: str, apart: bool = False
    ) -> Iterator[tuple[str, list[dict[str, Any]]]]:
        outer, _, inner = key_field.partition(".")  # "urn" or "source.urn"
        assert "." not in inner, key_field
        index = spec.index

        def docs() -> Iterator[tuple[str, dict[str, Any]]]:
            for _, doc_id, source in self._hits([spec], bool(plan.selection.urns), apart):
                key = source.get(outer)
                if inner:
                    key = key.get(inner) if isinstance(key, dict) else None
                if not isinstance(key, str):
                    plan.misshapen.setdefault(index, []).append(doc_id)
                    continue
                yield key, source

        return ordered_groups(self._read(docs()), index)

    # -- the join -------------------------------------------------------------------------
    def plan(self, selection: Selection) -> ScanPlan:
        """What a join of `selection` reads: the types, the indices that exist, the checks."""
        types = self.entity_types(selection)
        pattern = f"{self.index_prefix}*" if self.index_prefix else "*"
        # the sizes decide the reader processes, which a look at a few urns never starts: counting
        # every document of every index is then a request for nothing
        sizes = {} if selection.urns else self.search.indices(pattern)
        existing = self.search.names(pattern) if selection.urns else set(sizes)  # sizes name them all
        indices = {t: name for t in types if (name := self.index_of(t)) in existing}
        plan = ScanPlan(selection, types, indices, sizes=sizes)
        sysmeta = system_metadata_index(self.index_prefix)
        graph = graph_index(self.index_prefix)
        if not (indices or self.type_field or {sysmeta, graph} & existing) and not any(
            n.endswith(ENTITY_INDEX_V3_SUFFIX) for n in existing
        ):  # not one of DataHub's indices under the prefix: a mistyped prefix, not a clean catalog
            raise no_index_under(self.search, self.index_prefix)
        if self.type_field:  # a V3 pass: the entity documents only (the rest is shared with V2)
            plan.checks = [c for c in self.checks if c.id not in ("system-metadata.stale", "graph.edges")]
            return plan
        if sysmeta in existing:
            plan.sysmeta = sysmeta
        else:
            plan.warnings.append(f"{sysmeta} does not exist: system metadata not checked")
        if graph in existing:
            plan.graph = graph
        else:
            plan.warnings.append(f"{graph} does not exist: edges not checked")
        if selection.since is not None:
            plan.warnings.append("--since: documents without rows (orphans) are not looked for")
        # a projection that does not exist is reported once, not as one finding per entity
        skipped = set()
        if plan.sysmeta is None:
            skipped.add("system-metadata.stale")
        if plan.graph is None:
            skipped.add("graph.edges")
        plan.checks = [c for c in self.checks if c.id not in skipped]
        return plan

    def row_stream(self, plan: ScanPlan) -> Iterator[tuple[str, EntityRows]]:
        """The truth: version-0 rows per urn, in byte order."""
        return self._rows(plan.selection, plan.types)

    def projection_streams(self, plan: ScanPlan) -> dict[str, Iterator[tuple[str, Any]]]:
        """The projections: the entity doc, the system-metadata docs and the edges, per urn. The
        largest streams, when large enough, get the reader processes there are."""
        size = {
            "doc": sum(plan.sizes.get(i, 0) for i in set(plan.indices.values())),  # V3: one index, many types
            "sysmeta": plan.sizes.get(plan.sysmeta or "", 0),
            "edges": plan.sizes.get(plan.graph or "", 0),
        }
        least = max(1, search_readers.MIN_DOCS)
        large = sorted((n for n in size if size[n] >= least), key=lambda n: -size[n])
        apart = set(large[: self.readers])
        docs = self._doc_specs(plan)
        specs = list(docs)  # every stream's, asked together when they are a look at a few urns
        streams: dict[str, Iterator[tuple[str, Any]]] = {"doc": self._docs(plan, docs, "doc" in apart)}
        if plan.sysmeta is not None:
            spec = StreamSpec(plan.sysmeta, ("urn", "aspect"), urn_filter("urn", plan.selection))
            specs.append(spec)
            streams["sysmeta"] = self._group_stream(plan, spec, "urn", apart="sysmeta" in apart)
        if plan.graph is not None:
            # the edge check compares exactly the three sort keys: read from the sort values, no
            # `_source` (measured on 615k edges: 11.8 s against 14.7 s with the documents)
            sort = ("source.urn", "relationshipType", "destination.urn")
            spec = StreamSpec(plan.graph, sort, urn_filter("source.urn", plan.selection), from_sort=True)
            specs.append(spec)
            streams["edges"] = self._group_stream(plan, spec, "source.urn", apart="edges" in apart)
        self._ask_together(plan, specs)
        return streams

    def _ask_together(self, plan: ScanPlan, specs: list[StreamSpec]) -> None:
        """A look at a few urns (a triage, a re-observation's round, a confirmation): the first
        search of every stream in one request (`first_pages`), each stream taking its answer."""
        together = getattr(self.search, "first_pages", None)
        self._answered.clear()
        if not plan.selection.urns or together is None or len(specs) < 2:
            return
        for spec, hits in zip(specs, together(specs), strict=True):
            if hits is not None:
                self._answered[id(spec)] = hits

    def run(self, selection: Selection, progress: Progress | None = None, sink: Sink | None = None) -> Joined:
        """Stream the rows and every projection of `selection` at once, join them, run the checks
        (the findings go to `sink` when given: the scan engine's spill)."""
        plan = self.plan(selection)
        if self.witness is not None:
            self.witness.judging(plan, selection.urns)
        streams = {"rows": self.row_stream(plan), **self.projection_streams(plan)}
        return self.join(plan, streams, progress, sink)

    def _duplicate(self, entity: JoinedEntity, copies: list[SearchDoc]) -> None:
        """Every copy of an entity's document, each judged against its rows (stale or current)."""
        expected = self.ctx.expected(entity)
        judged = [
            Copy(d.id, bool(compare_document(expected, d.source)), fingerprint(d.source)) for d in copies
        ]
        self.duplicated.append(Duplicate(entity.urn, entity.entity_type, copies[0].index, judged))

    def join(
        self,
        plan: ScanPlan,
        streams: dict[str, Iterator[tuple[str, Any]]],
        progress: Progress | None = None,
        sink: Sink | None = None,
    ) -> Joined:
        """Merge-join the streams by urn and run the checks on every joined entity; its findings
        go to `sink` as they are made (in urn order), or to the result's list."""
        selection, indices = plan.selection, plan.indices
        result = Joined(warnings=list(plan.warnings))
        found: Sink = result.findings if sink is None else sink
        for name in indices.values():
            result.documents[name] = 0
        for store in getattr(self.store, "names", ()):  # a federation: every store, even empty
            result.stores[store] = {"entities": 0, "conflicts": 0}
        checks = plan.checks
        self.duplicated = []
        seen = 0
        for urn, parts in merge_join(streams):
            rows: EntityRows | None = parts.get("rows")
            if selection.since is not None and rows is None:
                continue
            if not selection.in_shard(urn):
                continue
            try:
                etype = entity_type(urn)
            except UrnError:
                result.unknown["(not a urn)"] = result.unknown.get("(not a urn)", 0) + 1
                continue
            if not self.registry.has_entity(etype):
                result.unknown[etype] = result.unknown.get(etype, 0) + 1
                continue
            etype = self.registry.entity(etype).name
            entity = JoinedEntity(
                urn=urn,
                entity_type=etype,
                index=indices.get(etype),
                rows=rows,
                doc=parts.get("doc"),
                system_metadata=parts.get("sysmeta") or [],
                edges=parts.get("edges") or [],
            )
            if self.witness is not None:
                self.witness.saw(entity)
            if rows is not None:
                result.entities[etype] = result.entities.get(etype, 0) + 1
                if plan.duplicates and (copies := plan.duplicates.pop(urn, None)):
                    self._duplicate(entity, copies)
            if entity.doc is not None:
                result.documents[entity.doc.index] = result.documents.get(entity.doc.index, 0) + 1
            mine: list[Finding] = []
            for check in checks:
                mine.extend(check.run(entity, self.ctx))
            if result.stores:
                federate(entity, mine, 0, result.stores)
            owned(mine, 0)
            found.extend(mine)
            seen += 1
            if progress is not None and seen % 1000 == 0:
                progress(seen)
        if progress is not None:
            progress(seen)
        for key, n in self.ctx.unknown.items():
            result.unknown[key] = result.unknown.get(key, 0) + n
        self.ctx.unknown.clear()
        missing = [
            t
            for t in plan.types
            if t not in indices and result.entities.get(t) and self.ctx.searchable(t)  # no doc, no index
        ]
        self.absent = {t: result.entities[t] for t in missing}  # findings or notices: scan/absence.py
        for index, ids in sorted(plan.misshapen.items()):
            shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
            result.warnings.append(
                f"{len(ids)} document(s) in {index} have no urn string (not DataHub's documents): "
                f"not compared, never repaired; ids: {shown}"
            )
        return result
