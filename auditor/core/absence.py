"""Every platform's findings on a whole index: one that does not exist while its entities have
rows (`missing_index`), an alias over several indices holding the same documents
(`duplicate_document`). Silence is a claim: neither is a warning line beside a clean verdict.

Each is one finding per index (its count in the details), never re-read entity by entity: the
platform's join names them, and the engine's verdict step takes them as they are (`judged`). A
platform says what it looked for and how the index comes back (its own job: the auditor's
rebuilds write into an index that exists)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from auditor.core.classify import diverged, in_flight
from auditor.core.model import Classified, Finding, Kind, RepairKind, Verdict

MISSING_CHECK = "index.missing-index"
DUPLICATE_CHECK = "index.duplicate-document"
EXAMPLES = 10  # duplicated documents named in a finding's details
WHOLE_INDEX = (Kind.MISSING_INDEX, Kind.DUPLICATE_DOCUMENT)  # one finding per index, not per entity


def missing_index(
    platform: str, entity_type: str, index: str, rows: int, looked: str, repair: str
) -> Finding:
    """An entity type's index that does not exist while `rows` of its entities have rows.
    `looked`: what else was looked for (a V3 index, an alias); `repair`: how it comes back."""
    details = {"platform": platform, "entities": rows, "looked": looked, "repair": repair}
    return Finding(
        check=MISSING_CHECK,
        kind=Kind.MISSING_INDEX,
        urn=index,  # a finding on the index, not an entity: its name where a urn would be
        entity_type=entity_type,
        index=index,
        details=details,
        repairs=(RepairKind.RECREATE_INDEX,),
    )


def alias_command(alias: str, index: str) -> str:
    """The alias taken off `index` (one `_aliases` request)."""
    body = {"actions": [{"remove": {"index": index, "alias": alias}}]}
    payload = shlex.quote(json.dumps(body, separators=(",", ":")))
    return f"curl -X POST \"$SEARCH_URL\"/_aliases -H 'Content-Type: application/json' -d {payload}"


def alias_lookup(alias: str) -> str:
    """The indices an alias serves, to choose the one it keeps (the finding names the stale one)."""
    return (
        f'curl "$SEARCH_URL"/_alias/{shlex.quote(alias)}   # it serves several indices holding the same '
        "documents: keep it on one (the finding names the stale one)"
    )


def duplicate_documents(
    platform: str,
    entity_type: str,
    alias: str,
    behind: Mapping[str, int],
    copies: Mapping[str, list[dict[str, Any]]],
) -> Finding:
    """An alias whose indices hold the same documents: `behind` is each concrete index with its
    creation time (epoch ms), `copies` each duplicated entity's copies (`index`, `stale`, ...).
    The index to take out of the alias: the one holding the stale copies, else the oldest."""
    stale: dict[str, int] = {}
    for held in copies.values():
        for c in held:
            if c["stale"]:
                stale[c["index"]] = stale.get(c["index"], 0) + 1
    oldest = min(behind, key=lambda i: behind[i], default=alias)
    out_of_alias = max(stale, key=lambda i: stale[i]) if stale else oldest
    examples = [{"entity": key, "copies": held} for key, held in sorted(copies.items())[:EXAMPLES]]
    details = {
        "platform": platform,
        "indices": sorted(behind),
        "duplicates": len(copies),
        "stale_copies": stale,
        "examples": examples,
        "repair": alias_command(alias, out_of_alias),
    }
    return Finding(
        check=DUPLICATE_CHECK,
        kind=Kind.DUPLICATE_DOCUMENT,
        urn=alias,  # a finding on the alias: its name where a urn would be
        entity_type=entity_type,
        index=alias,
        details=details,
        repairs=(RepairKind.ALIAS_ONE_INDEX,),
    )


def reason(f: Finding) -> str:
    """Why a finding on a whole index is a divergence, with its count and its repair."""
    d = f.details
    if f.kind == Kind.MISSING_INDEX:
        return (
            f"{f.index} does not exist ({d['looked']}): {d['entities']} {f.entity_type} entities "
            f"with rows have no document in search; recreate it: {d['repair']}"
        )
    stale = ", ".join(f"{n} in {i}" for i, n in sorted(d["stale_copies"].items())) or "none stale"
    return (
        f"{f.index} serves {len(d['indices'])} indices ({', '.join(d['indices'])}) holding "
        f"{d['duplicates']} {f.entity_type} documents more than once: search returns every copy "
        f"(stale copies: {stale}); keep the alias on one index: {d['repair']}"
    )


def judged(exists: Callable[[str], bool], findings: Iterable[Finding]) -> list[Classified]:
    """The verdicts: a missing index is diverged unless it exists by now (created during the
    scan: judged again by the next); the copies an alias answers with stay until someone moves
    the alias."""
    out = []
    for f in findings:
        if f.kind == Kind.MISSING_INDEX and f.index and exists(f.index):
            out.append(in_flight(f, f"{f.index} was created during the scan: judged again by the next"))
            continue
        out.append(diverged(f, reason(f)))
    return out


def one_per_index(findings: list[Classified]) -> tuple[list[Classified], list[Classified]]:
    """The shards' findings on a whole index made one per index (each shard names the index with
    its share of the entities): (the findings, those folded into another). The worst verdict
    stays; the counts, the copies and the stale copies are added."""
    groups: dict[str, list[Classified]] = {}
    out: list[Classified] = []
    for c in findings:
        if c.finding.kind in WHOLE_INDEX:
            if c.finding.key not in groups:
                out.append(c)  # its place, filled below
            groups.setdefault(c.finding.key, []).append(c)
        else:
            out.append(c)
    folded: list[Classified] = []
    for n, c in enumerate(out):
        group = groups.get(c.finding.key) if c.finding.kind in WHOLE_INDEX else None
        if not group or len(group) == 1:
            continue
        head, *rest = sorted(group, key=lambda g: g.verdict.rank)
        folded += rest
        out[n] = _added(head, rest)
    return out, folded


def _added(head: Classified, rest: list[Classified]) -> Classified:
    """`head` with the counts of `rest` (the same index, other shards) added."""
    d = dict(head.finding.details)
    for c in rest:
        o = c.finding.details
        if head.finding.kind == Kind.MISSING_INDEX:
            d["entities"] = d["entities"] + o["entities"]
            continue
        d["duplicates"] = d["duplicates"] + o["duplicates"]
        d["indices"] = sorted({*d["indices"], *o["indices"]})
        d["examples"] = (list(d["examples"]) + list(o["examples"]))[:EXAMPLES]
        stale = dict(d["stale_copies"])
        for index, k in o["stale_copies"].items():
            stale[index] = stale.get(index, 0) + k
        d["stale_copies"] = stale
        if stale:
            d["repair"] = alias_command(head.finding.index or "", max(stale, key=lambda i: stale[i]))
    finding = replace(head.finding, details=d)
    if head.verdict != Verdict.DIVERGED:
        return replace(head, finding=finding)
    return replace(head, finding=finding, evidence=replace(head.evidence, reason=reason(finding)))
