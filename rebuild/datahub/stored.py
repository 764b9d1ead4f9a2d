"""What the search side holds of a reindex's batch: the entity docs with their versions, and the
docs the rows no longer imply.

The stored entity docs are read (in real time: the newest write, refreshed or not) for the fields
no row predicts, which a rewrite keeps, and for their (seq_no, primary_term): the rewrite is
written on condition that the doc is still the one read, so a write the consumer makes in between
is refused to us (409), never lost. What the rows no longer imply is asked of the engine directly:
a batch's docs not among the ones just built, excluded by id, so a batch whose projections are
whole reads back nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.backends.protocols import Search

# doc ids one query for what the rows no longer imply excludes: a urn with more is read whole and
# sorted out here
EXCLUDED_IDS_CAP = 10_000


@dataclass
class Stored:
    """A batch's stored entity docs, as read from the live indices."""

    docs: dict[str, dict[str, Any]] = field(default_factory=dict)  # urn -> its doc
    versions: dict[str, tuple[int, int]] = field(default_factory=dict)  # urn -> its (seq_no, term)
    unread: set[str] = field(default_factory=set)  # urns whose docs could not be read

    def condition(self, urn: str) -> tuple[str, tuple[int, int] | None] | None:
        """How the urn's doc is written so that nothing written since the read is lost: `index`
        if still at the version read, `create` if there was none; None: unconditionally (the
        read failed, or the engine gave no version)."""
        if urn in self.unread:
            return None
        if urn in self.versions:
            return "index", self.versions[urn]
        return None if urn in self.docs else ("create", None)


def read_entity_docs(search: Search, ids: Mapping[str, Mapping[str, str]]) -> Stored:
    """The docs of `ids` (index -> doc id -> urn) and their versions; an index whose read fails
    leaves its urns unread (their entity docs are then not written: a failure, said why)."""
    stored = Stored()
    for index, by_id in ids.items():
        try:
            found = search.get_versioned(index, list(by_id))
        except Exception:
            stored.unread.update(by_id.values())
            continue
        for doc_id, (doc, version) in found.items():
            if (urn := by_id.get(doc_id)) is not None:
                stored.docs[urn] = doc
                if version is not None:
                    stored.versions[urn] = version
    return stored


def left_behind(
    search: Search,
    index: str,
    field: str,
    keep: dict[str, set[str]],
    types: frozenset[str] | None = None,
) -> dict[str, list[str]]:
    """The ids of `index`'s docs of the urns in `keep` (by `field`, of relationship `types` if
    given) that are not in `keep[urn]`: what the rows no longer imply. The engine is asked for
    exactly those, the docs the rows imply excluded by id (reading every stored doc to sort them
    here was the reindex's largest wait)."""
    out: dict[str, list[str]] = {}
    for urns in groups(keep, EXCLUDED_IDS_CAP):
        query: dict[str, Any] = {"bool": {"filter": [{"terms": {field: urns}}]}}
        if types is not None:
            query["bool"]["filter"].append({"terms": {"relationshipType": sorted(types)}})
        ids = [i for u in urns for i in keep[u]]
        if ids and len(ids) <= EXCLUDED_IDS_CAP:
            query["bool"]["must_not"] = [{"ids": {"values": ids}}]
        for doc_id, doc in search.stream(index, [field], query=query, few=True, from_sort=True):
            value: Any = doc
            for part in field.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, str) and doc_id not in keep.get(value, ()):
                out.setdefault(value, []).append(doc_id)
    return out


def groups(keep: Mapping[str, Collection[str]], cap: int) -> list[list[str]]:
    """The urns in runs whose ids to keep add up to at most `cap` (a urn with more: alone)."""
    runs: list[list[str]] = []
    size = cap + 1
    for urn, ids in keep.items():
        if size + len(ids) > cap:
            runs.append([])
            size = 0
        runs[-1].append(urn)
        size += len(ids)
    return runs
