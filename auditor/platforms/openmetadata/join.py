"""The OpenMetadata join: each entity table against its index, both in id order, streaming."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from auditor.checks.openmetadata import check
from auditor.core.model import Finding
from auditor.errors import BackendUnavailable
from auditor.platforms.openmetadata.naming import OmEntity
from auditor.platforms.openmetadata.records import OmDoc, OmRow
from auditor.platforms.openmetadata.search import OmSearch
from auditor.platforms.openmetadata.store import OmStore

Progress = Callable[[int], None]


@dataclass
class OmJoinResult:
    """The join's candidates and what it read."""

    findings: list[Finding] = field(default_factory=list)
    entities: dict[str, int] = field(default_factory=dict)  # entity type -> rows
    documents: dict[str, int] = field(default_factory=dict)  # index read -> docs
    warnings: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # entity type -> the name its docs were read through


def _ordered(items: Iterable[OmRow] | Iterable[OmDoc], what: str) -> Iterator[OmRow | OmDoc]:
    last: str | None = None
    for item in items:
        if last is not None and item.id < last:
            raise BackendUnavailable(
                f"{what} did not arrive in id byte order ({item.id!r} after {last!r}): "
                "the join would report false differences"
            )
        last = item.id
        yield item


def merge(rows: Iterable[OmRow], docs: Iterable[OmDoc]) -> Iterator[tuple[OmRow | None, OmDoc | None]]:
    """Full outer join of two id-ordered streams; a doc under two indices pairs with its row twice."""
    row_it = _ordered(rows, "the entity rows")
    doc_it = _ordered(docs, "the documents")
    row = next(row_it, None)
    doc = next(doc_it, None)
    paired = False  # the current row met a doc already
    while row is not None or doc is not None:
        if doc is None or (row is not None and row.id < doc.id):
            if not paired:
                yield row, None  # type: ignore[misc]
            row, paired = next(row_it, None), False  # type: ignore[assignment]
        elif row is None or doc.id < row.id:
            yield None, doc  # type: ignore[misc]
            doc = next(doc_it, None)  # type: ignore[assignment]
        else:
            yield row, doc  # type: ignore[misc]
            paired = True
            doc = next(doc_it, None)  # type: ignore[assignment]


class OmScanner:
    """Runs the join and the checks over the selected entity types (or over given ids)."""

    def __init__(self, store: OmStore, search: OmSearch) -> None:
        self.store = store
        self.search = search

    def run(
        self,
        entities: list[OmEntity],
        ids: tuple[str, ...] = (),
        progress: Progress | None = None,
        names: dict[str, str] | None = None,
    ) -> OmJoinResult:
        """`names`: entity type -> an index to read instead of the live one (a full rebuild's)."""
        out = OmJoinResult()
        seen = 0
        for entity in entities:
            name: str | None
            if names and entity.entity_type in names:
                name, concrete = names[entity.entity_type], [names[entity.entity_type]]
            else:
                name, concrete = self.search.resolve(entity)
            out.names[entity.entity_type] = name or entity.index_name(self.search.cluster_alias)
            if name is None:
                out.warnings.append(
                    f"neither the index {entity.index_name(self.search.cluster_alias)} nor the alias "
                    f"{entity.aliases(self.search.cluster_alias)[0]} exists: every {entity.entity_type} "
                    "row is reported missing from search"
                )
            elif len(concrete) > 1:
                out.warnings.append(f"{name} points at {len(concrete)} indices: {', '.join(concrete)}")
            if ids:
                rows: Iterable[OmRow] = sorted(self.store.read(entity, ids).values(), key=lambda r: r.id)
                docs: Iterable[OmDoc] = (
                    sorted(self.search.get(name, ids).values(), key=lambda d: d.id) if name else []
                )
            else:
                rows = self.store.stream(entity)
                docs = self.search.stream_sorted(name) if name else []
            n_rows = n_docs = 0
            last: str | None = None
            for row, doc in merge(rows, docs):
                if row is not None and row.id != last:
                    n_rows, last = n_rows + 1, row.id
                n_docs += doc is not None
                finding = check(entity, out.names[entity.entity_type], row, doc)
                if finding is not None:
                    out.findings.append(finding)
                seen += 1
                if progress and seen % 1000 == 0:
                    progress(seen)
            out.entities[entity.entity_type] = n_rows
            out.documents[out.names[entity.entity_type]] = n_docs
        return out
