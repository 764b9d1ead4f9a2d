"""DataHub's own sections of a scan's report: its zero-downtime reindexes (`reindex`), its V3
index (`v3`), the documents an older release wrote (`outdated`), and how a sharded scan's
sections merge."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from auditor.core.model import Classified, Kind, Section, Verdict

EXAMPLES = 5  # example urns kept per line of the outdated section


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


def outdated_groups(classified: Iterable[Classified], index_prefix: str = "") -> list[dict[str, Any]]:
    """One line per entity type, missing field and release that wrote the documents: how many,
    a few urns, and the one repair (a reindex of the type; DataHub's RestoreIndices as well)."""
    groups = OutdatedGroups(index_prefix)
    for c in classified:
        groups.add(c)
    return groups.lines()


class OutdatedGroups:
    """The outdated section gathered verdict by verdict as a scan counts them (a line per type,
    field and release: its count and a few urns, never every finding)."""

    def __init__(self, index_prefix: str = "") -> None:
        self.index_prefix = index_prefix
        self._lines: dict[tuple[str, str, str], dict[str, Any]] = {}

    def add(self, c: Classified) -> None:
        f = c.finding
        if c.verdict != Verdict.OUTDATED or f.kind != Kind.OUTDATED_DOCUMENT:
            return
        written_by, judged_by = str(f.details.get("written_by")), str(f.details.get("judged_by"))
        for name in f.details.get("missing") or ():
            line = self._lines.get((f.entity_type, str(name), written_by))
            if line is None:
                line = self._lines[(f.entity_type, str(name), written_by)] = {
                    "entity_type": f.entity_type,
                    "field": str(name),
                    "written_by": written_by,
                    "written_span": _span(f.details),
                    "judged_by": judged_by,
                    "documents": 0,
                    "examples": [],
                    "repair": _repair(f.entity_type, self.index_prefix),
                    "native": f"datahub-upgrade -u RestoreIndices -a urnLike=urn:li:{f.entity_type}:%",
                }
            line["documents"] += 1
            if len(line["examples"]) < EXAMPLES:
                line["examples"].append(f.urn)

    def lines(self) -> list[dict[str, Any]]:
        return [self._lines[k] for k in sorted(self._lines)]


def _span(details: Mapping[str, Any]) -> str:
    """The releases that index such a document alike: "1.0.0 to 1.2.0 or older"."""
    newest = str(details.get("written_by"))
    oldest = str(details.get("written_since") or newest)
    span = newest if oldest == newest else f"{oldest} to {newest}"
    return f"{span} or older" if details.get("or_older", True) else span


def _repair(entity_type: str, index_prefix: str) -> str:
    prefix = f" --index-prefix {index_prefix}" if index_prefix else ""
    return f"auditor rebuild reindex --entity-type {entity_type}{prefix} --apply"


def merge_outdated(into: list[dict[str, Any]], part: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The shards' lines added up: counts summed, examples joined (at most a few)."""
    keyed = {
        (d["entity_type"], d["field"], d["written_by"]): dict(d, examples=list(d["examples"])) for d in into
    }
    for d in part:
        key = (d["entity_type"], d["field"], d["written_by"])
        if key not in keyed:
            keyed[key] = dict(d, examples=list(d["examples"]))
            continue
        line = keyed[key]
        line["documents"] += d["documents"]
        line["examples"] = (line["examples"] + [u for u in d["examples"] if u not in line["examples"]])[
            :EXAMPLES
        ]
    return [keyed[k] for k in sorted(keyed)]


def outdated(report: Any) -> list[dict[str, Any]]:
    """The report's outdated section (created empty)."""
    found: list[dict[str, Any]] = report.sections.setdefault("outdated", [])
    return found


def restores(report: Any) -> list[dict[str, Any]]:
    """The report's restores section (created empty)."""
    found: list[dict[str, Any]] = report.sections.setdefault("restores", [])
    return found


def restore_lines(
    found: Mapping[str, Any], types: Mapping[str, str], index_prefix: str = ""
) -> list[dict[str, Any]]:
    """One line per index found holding an older snapshot's state (core/classify.py's
    `RestoredIndex`): since when, its entities behind among those changed since, and the one
    repair (a replay of the window, which `rebuild after-restore` runs; a reindex of the type)."""
    prefix = f" --index-prefix {index_prefix}" if index_prefix else ""
    out = []
    for index in sorted(found):
        r = found[index]
        since = r.instant.isoformat(timespec="seconds")
        entity_type = types.get(index, "")
        out.append(
            {
                "index": index,
                "entity_type": entity_type,
                "since": since,
                "behind": r.behind,
                "changed_since": r.changed,
                "repair": f"auditor rebuild after-restore{prefix} --apply",
                "reindex": _repair(entity_type, index_prefix) if entity_type else "",
            }
        )
    return out


def merge_restores(into: list[dict[str, Any]], part: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The shards' restore lines: per index, the earliest since, the counts summed."""
    keyed = {line["index"]: dict(line) for line in into}
    for line in part:
        mine = keyed.get(line["index"])
        if mine is None:
            keyed[line["index"]] = dict(line)
            continue
        mine["since"] = min(mine["since"], line["since"])
        mine["behind"] += line["behind"]
        mine["changed_since"] += line["changed_since"]
    return [keyed[k] for k in sorted(keyed)]


def reindexes(report: Any) -> list[dict[str, Any]]:
    """The report's reindex section (created empty)."""
    found: list[dict[str, Any]] = report.sections.setdefault("reindex", [])
    return found


SECTIONS = {
    # DataHub's own zero-downtime reindexes of the scanned indices (in progress or swapped)
    "reindex": Section(list, merge_reindex),
    # its V3 index, when it exists: its indices and the entities wrong in one version only
    "v3": Section(dict, merge_v3),
    # documents an older release wrote: per entity type, missing field and release (docs/report.md)
    "outdated": Section(list, merge_outdated),
    # indices holding an older snapshot's state (a search restore): one line each, its one repair
    "restores": Section(list, merge_restores),
}
