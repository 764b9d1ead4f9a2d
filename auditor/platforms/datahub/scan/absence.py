"""What search lacks or holds twice, as a whole: an entity index that does not exist while its type
has rows, an alias over several indices holding the same document, a prefix naming no index.

Silence is a claim: an entity with rows and no document anywhere (no V2 index, no V3 index holding
its type) is a divergence, whatever removed the index (by hand, a rebuild, a mistyped override).
It is one finding per index with its count, not one per entity: nothing entity by entity repairs
it. The auditor's `rebuild reindex --full` builds from the live index's mappings and settings, so
it cannot recreate an index that is gone; DataHub's own BuildIndices step (`datahub-upgrade -u
SystemUpdate`) creates every missing index with DataHub's mappings, then a reindex of the type
fills it. A V2 index missing where the V3 index holds the type is a notice (a deployment with
`ELASTICSEARCH_ENTITY_INDEX_V2_ENABLED=false` writes no V2 index).

An alias over two indices (a swap that added the new index and did not remove the old) answers a
search with every copy, the stale one included: one finding per alias, the copies judged against
the rows, and the index to take out of the alias.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from auditor.core import absence
from auditor.core.model import Finding
from auditor.errors import BackendUnavailable, ConfigError
from auditor.platforms.datahub.naming import (
    ENTITY_INDEX_SUFFIX,
    GRAPH_INDEX,
    PLATFORM,
    SYSTEM_METADATA_INDEX,
)

V2_SETTING = "ELASTICSEARCH_ENTITY_INDEX_V2_ENABLED"
BUILD_INDICES = "datahub-upgrade -u SystemUpdate"
GET_MANY = 1000  # document ids a multi-get asks for


def fingerprint(source: Mapping[str, Any]) -> str:
    """A document's content in a few bytes: which concrete index holds which copy is told by it
    (an alias over two whole copies of an index holds every document twice: sources not kept)."""
    text = json.dumps(source, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Copy:
    """One of the documents an index answered with for one entity."""

    doc_id: str
    stale: bool  # departs from what the rows project
    print: str  # its fingerprint


@dataclass(frozen=True)
class Duplicate:
    """An entity whose index answered with several documents: each copy, judged by its rows."""

    urn: str
    entity_type: str
    alias: str
    copies: list[Copy]


def existing_prefixes(search: Any) -> list[str]:
    """The prefixes under which the cluster holds DataHub's indices ('' for none), from the
    system-metadata, graph and V2 entity indices' names (empty when listing is refused)."""
    try:
        names = search.names("*")
    except BackendUnavailable:  # a role that may read only its own indices: nothing to offer
        return []
    found = set()
    for name in names:
        for suffix in (SYSTEM_METADATA_INDEX, GRAPH_INDEX):
            if name.endswith(suffix):
                found.add(name[: -len(suffix)].removesuffix("_"))
        if name.endswith(ENTITY_INDEX_SUFFIX) and "_" in name[: -len(ENTITY_INDEX_SUFFIX)]:
            found.add(name[: -len(ENTITY_INDEX_SUFFIX)].rpartition("_")[0])
    return sorted(found)


def no_index_under(search: Any, prefix: str) -> ConfigError:
    """None of DataHub's indices exists under `prefix`: a configuration error naming the prefixes
    that do exist (a scan would otherwise audit nothing and call it clean)."""
    named = f"the prefix {prefix!r}" if prefix else "no prefix"
    others = [p for p in existing_prefixes(search) if p != prefix]
    shown = ", ".join(repr(p) if p else "'' (no prefix)" for p in others)
    hint = (
        f"{search.description} holds DataHub's indices under {shown}: set --index-prefix (INDEX_PREFIX)"
        if others
        else f"{search.description} holds no DataHub index at all: has DataHub's system-update "
        f"({BUILD_INDICES}, its BuildIndices step) run against it?"
    )
    return ConfigError(
        f"none of DataHub's indices exists with {named} (no entity index, no {SYSTEM_METADATA_INDEX}, "
        f"no {GRAPH_INDEX}): a mistyped index prefix, or the wrong cluster",
        hint=hint,
    )


def recreate_text(index: str, entity_type: str) -> str:
    """How a missing index comes back: DataHub's mappings, then the type's documents."""
    return (
        f"{BUILD_INDICES} (its BuildIndices step creates {index} with DataHub's mappings; "
        f"`auditor rebuild reindex --full` rebuilds from a live index's mappings and cannot), then "
        f"reindex the type: auditor rebuild reindex -t {entity_type} --apply (or "
        f"datahub-upgrade -u RestoreIndices -a urnLike='urn:li:{entity_type}:%')"
    )


def missing_indices(
    absent: Mapping[str, int], index_of: Callable[[str], str], v3: Mapping[str, str]
) -> tuple[list[Finding], list[str]]:
    """One finding per entity index that does not exist while its type has rows; a notice instead
    where the V3 index holds the type (a deployment may be configured without V2)."""
    findings, notices = [], []
    for etype, n in sorted(absent.items()):
        index = index_of(etype)
        repair = recreate_text(index, etype)
        if etype in v3:
            notices.append(
                f"no index {index} for {n} {etype} entities; their documents are in the V3 index "
                f"{v3[etype]}: a deployment with {V2_SETTING}=false writes no V2 index (if yours "
                f"writes it, it was deleted: {repair})"
            )
            continue
        looked = "and no V3 index holds the type"
        findings.append(absence.missing_index(PLATFORM, etype, index, n, looked, repair))
    return findings, notices


def duplicate_documents(search: Any, duplicated: list[Duplicate]) -> list[Finding]:
    """One finding per alias whose indices hold the same documents: the copies, which are stale
    (and in which index), and the index to take out of the alias."""
    by_alias: dict[str, list[Duplicate]] = {}
    for d in duplicated:
        by_alias.setdefault(d.alias, []).append(d)
    out = []
    for alias, dups in sorted(by_alias.items()):
        behind = search.index_meta(alias)  # concrete index -> (aliases, creation ms)
        holders = _holders(search, sorted(behind), dups)
        copies = {
            d.urn: [
                {"index": holders.get((c.doc_id, c.print), alias), "doc_id": c.doc_id, "stale": c.stale}
                for c in d.copies
            ]
            for d in dups
        }
        created = {index: meta[1] for index, meta in behind.items()}
        out.append(absence.duplicate_documents(PLATFORM, dups[0].entity_type, alias, created, copies))
    return out


def _holders(search: Any, concrete: list[str], dups: list[Duplicate]) -> dict[tuple[str, str], str]:
    """(document id, its fingerprint) -> the concrete index holding that copy (multi-gets on each
    concrete index behind the alias)."""
    ids = sorted({c.doc_id for d in dups for c in d.copies})
    out: dict[tuple[str, str], str] = {}
    for index in concrete:
        for i in range(0, len(ids), GET_MANY):
            for doc_id, source in search.get_many(index, ids[i : i + GET_MANY]).items():
                out.setdefault((doc_id, fingerprint(source)), index)
    return out
