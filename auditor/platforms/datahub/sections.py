"""DataHub's own sections of a scan's report: its zero-downtime reindexes (`reindex`) and its V3
index (`v3`), and how a sharded scan's sections merge."""

from __future__ import annotations

from typing import Any

from auditor.core.model import Section


def merge_reindex(into: list[dict[str, Any]], part: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reindexes the shards saw, each once."""
    return into + [r for r in part if r not in into]


def merge_v3(into: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    """The V3 section of shards: indices united, the one-version-only urns joined."""
    if not part:
        return into
    out = dict(into)
    out["indices"] = {**(into.get("indices") or {}), **(part.get("indices") or {})}
    for key in ("wrong_in_v3_only", "wrong_in_v2_only"):
        out[key] = sorted(set(into.get(key) or []) | set(part.get(key) or []))[:100]
    out["disagreeing"] = int(into.get("disagreeing") or 0) + int(part.get("disagreeing") or 0)
    return out


SECTIONS = {
    # DataHub's own zero-downtime reindexes of the scanned indices (in progress or swapped)
    "reindex": Section(list, merge_reindex),
    # its V3 index, when it exists: its indices and the entities wrong in one version only
    "v3": Section(dict, merge_v3),
}


def reindexes(report: Any) -> list[dict[str, Any]]:
    """The report's reindex section (created empty)."""
    found: list[dict[str, Any]] = report.sections.setdefault("reindex", [])
    return found
