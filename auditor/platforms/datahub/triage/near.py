"""Near matches of an unknown urn, found with bounded look-ups (an IN list, one capped query)."""

from __future__ import annotations

from typing import Any

from auditor.backends.protocols import Search, Store
from auditor.core.triage import NearMatch
from auditor.platforms.datahub.urn_text import dataset_name, variants

LIMIT = 5


def _wildcard_literal(text: str) -> str:
    return "".join("\\" + ch if ch in "*?\\" else ch for ch in text)


def index_query(urn: str, candidates: dict[str, str]) -> dict[str, Any]:
    """The variants by value, the urn in any case, and (datasets) the name on any platform/origin."""
    should: list[dict[str, Any]] = [
        {"terms": {"urn": sorted(candidates)}},
        {"term": {"urn": {"value": urn, "case_insensitive": True}}},
    ]
    name = dataset_name(urn)
    if name is not None:
        pattern = f"urn:li:dataset:(*,{_wildcard_literal(name)},*)"
        should.append({"wildcard": {"urn": {"value": pattern, "case_insensitive": True}}})
    return {"bool": {"should": should, "minimum_should_match": 1, "must_not": [{"term": {"urn": urn}}]}}


def near_matches(store: Store, search: Search | None, index: str | None, urn: str) -> list[NearMatch]:
    """Urns the table or the entity index knows that differ from `urn` in a small way."""
    candidates = variants(urn)
    where: dict[str, set[str]] = {}
    for rows in store.stream_entities(urns=tuple(sorted(candidates))):
        where.setdefault(rows.urn, set()).add("table")
    if search is not None and index is not None:
        seen = 0
        for _, source in search.stream(
            index, ["urn"], query=index_query(urn, candidates), source=["urn"], page=20
        ):
            found = source.get("urn")
            if isinstance(found, str) and found != urn:
                where.setdefault(found, set()).add("index")
            seen += 1
            if seen >= 4 * LIMIT:
                break
    out = []
    for found, places in where.items():
        how = candidates.get(found) or ("case" if found.lower() == urn.lower() else "platform/origin")
        out.append(NearMatch(found, "+".join(sorted(places, reverse=True)), how))
    out.sort(key=lambda m: (m.where != "table+index", m.how != "case", m.urn))
    return out[:LIMIT]
