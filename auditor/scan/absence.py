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
from typing import Any

from auditor.core.classify import diverged, in_flight
from auditor.core.model import Classified, Finding, Kind, RepairKind

MISSING_CHECK = "index.missing-index"
DUPLICATE_CHECK = "index.duplicate-document"
EXAMPLES = 10  # duplicated documents named in a finding's details


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


def judged(exists: Callable[[str], bool], findings: Iterable[Finding]) -> list[Classified]:
    """The verdicts: a missing index is diverged unless it exists by now (created during the
    scan: judged again by the next); the copies an alias answers with stay until someone moves
    the alias."""
    out = []
    for f in findings:
        d = f.details
        if f.kind == Kind.MISSING_INDEX:
            if f.index and exists(f.index):
                out.append(in_flight(f, f"{f.index} was created during the scan: judged again by the next"))
                continue
            why = (
                f"{f.index} does not exist ({d['looked']}): {d['entities']} {f.entity_type} entities "
                f"with rows have no document in search; recreate it: {d['repair']}"
            )
        else:
            stale = ", ".join(f"{n} in {i}" for i, n in sorted(d["stale_copies"].items())) or "none stale"
            why = (
                f"{f.index} serves {len(d['indices'])} indices ({', '.join(d['indices'])}) holding "
                f"{d['duplicates']} {f.entity_type} documents more than once: search returns every copy "
                f"(stale copies: {stale}); keep the alias on one index: {d['repair']}"
            )
        out.append(diverged(f, why))
    return out
