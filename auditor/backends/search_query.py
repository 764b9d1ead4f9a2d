"""The search side of a selection: the query DSL that picks the urns a store's SQL picks (the
entity types, a LIKE pattern as a keyword wildcard, listed urns, a shard's urn range)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a signature's only: a reader process imports this module, not the model
    from auditor.core.model import Selection


def like_to_wildcard(pattern: str) -> str:
    """SQL LIKE (`%`, `_`, `\\` escaping the next character, as LIKE's default ESCAPE) -> a keyword
    wildcard query (`*`, `?`), every literal escaped: both sides select the same urns."""
    out = []
    chars = iter(pattern)
    for ch in chars:
        if ch == "\\":
            ch = next(chars, "\\")  # a trailing backslash stands for itself
            out.append("\\" + ch if ch in "*?\\" else ch)
        elif ch == "%":
            out.append("*")
        elif ch == "_":
            out.append("?")
        elif ch in "*?":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def urn_filter(field_name: str, selection: Selection) -> dict[str, Any] | None:
    """The query DSL for a selection on a urn keyword field (None: everything)."""
    must: list[dict[str, Any]] = []
    if selection.entity_types:
        must.append(
            {
                "bool": {
                    "should": [{"prefix": {field_name: f"urn:li:{t}:"}} for t in selection.entity_types],
                    "minimum_should_match": 1,
                }
            }
        )
    if selection.urn_like:
        must.append({"wildcard": {field_name: {"value": like_to_wildcard(selection.urn_like)}}})
    if selection.urns:
        must.append({"terms": {field_name: list(selection.urns)}})
    if selection.urn_range is not None:  # a keyword range compares UTF-8 bytes: code-point order
        lo, hi = selection.urn_range
        bounds = {**({"gte": lo} if lo is not None else {}), **({"lt": hi} if hi is not None else {})}
        if bounds:
            must.append({"range": {field_name: bounds}})
    return {"bool": {"filter": must}} if must else None
