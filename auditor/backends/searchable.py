"""Documents as search sees them: a multi-get at the last refresh (`realtime=false`).

A plain GET is real-time: it shows a write from the translog before a refresh makes it
searchable. The watch asks when search shows a change, so it reads what a search would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auditor.backends.search import SearchIndex
from auditor.errors import BackendUnavailable


def searchable_docs(search: SearchIndex, index: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """`_id` -> `_source` of the docs a search would find now (an absent index: none)."""
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        try:
            response = search._call(search.client.mget, index=index, body={"ids": chunk}, realtime=False)
        except Exception as exc:
            if "index_not_found" in str(exc):
                return {}
            raise BackendUnavailable(
                f"search cluster {search.description}: reading {index} failed: {exc}"
            ) from None
        for doc in response["docs"]:
            if doc.get("found"):
                out[doc["_id"]] = doc.get("_source") or {}
    return out
