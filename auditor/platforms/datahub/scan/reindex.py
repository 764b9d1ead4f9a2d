"""DataHub's own zero-downtime reindex (DataHub 1.7's system-update), as the scan sees it.

DataHub builds a "next" index with a versioned backing name (`<alias>_<version>_<epoch ms>`)
by an asynchronous `_reindex` from the live name, has the MAE consumer write both indices,
catches up the writes of the gap with RESTATE MCLs, waits for the consumer's lag, then moves the
alias. It keeps the per-index state in the table: the `dataHubUpgradeResult` aspect of
`urn:li:dataHubUpgrade:BuildIndicesIncremental_<version>`, a flat map of
`<index>.nextIndexName`, `<index>.status`, `<index>.reindexStartTime`, ...

Users read the alias; so does the scan. A next index not yet behind the alias is half-built by
design (its copy, its catch-up): it is reported as a notice, never audited, and a `--full`
rebuild of that index is refused (two swaps of one alias would race). Once DataHub moved the
alias, the scan audits the new backing index like any other: what its catch-up missed is found.

Read from the table first; without the state row (a database user that cannot read it, a
deployment that removed it), from the index names alone: an index `<alias>_<version>_<13
digits>`, behind no alias, created after every index the alias serves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

from auditor.core.model import Report, Verdict
from auditor.errors import AuditorError
from auditor.exit_codes import ExitCode
from auditor.platforms.datahub.naming import entity_index, prefixed

PHASE1 = "urn:li:dataHubUpgrade:BuildIndicesIncremental_"
CATCH_UP = "urn:li:dataHubUpgrade:IncrementalReindexCatchUp_"
WAITING = frozenset({"", "PENDING"})  # a catch-up not run yet (FAILED, SKIPPED, COMPLETED: it ran)
STATE_ASPECT = "dataHubUpgradeResult"
UPGRADE_TYPE = "dataHubUpgrade"
_VERSIONED = r"_.+_\d{13}$"  # `<alias>_<version>_<epoch ms>` (the auditor's own `--full` has no version)


class DataHubReindexRunning(AuditorError):
    """A repair that would race DataHub's own reindex of the same alias."""

    exit_code = ExitCode.INCOMPLETE


@dataclass(frozen=True)
class IndexReindex:
    """One entity index's DataHub reindex: in progress (next not behind the alias) or swapped."""

    alias: str
    phase: str  # "in_progress" | "swapped"
    next_index: str
    serving: tuple[str, ...]  # the concrete indices the live name serves now
    status: str  # DataHub's per-index status ("" when read from index names alone)
    source: str  # "upgrade state" | "index names"
    upgrade: str = ""  # the upgrade's urn
    reindex_start_ms: int | None = None
    dual_write_start_ms: int | None = None
    catch_up: str = ""  # DataHub's catch-up status for the index ("": not run yet)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["serving"] = list(self.serving)
        return out

    def notice(self) -> str:
        serving = ", ".join(self.serving) or "nothing"
        if self.phase == "in_progress":
            return (
                f"DataHub's zero-downtime reindex of {self.alias} is in progress ({self.source}"
                f"{', status ' + self.status if self.status else ''}): next index {self.next_index} is not "
                f"behind the alias yet; the scan audits what {self.alias} serves ({serving}), not the "
                "next index's partial copy"
            )
        return (
            f"DataHub's zero-downtime reindex of {self.alias} swapped the alias to {self.next_index} "
            f"({self.source}): the findings of {self.alias} are against this new backing index "
            "(what its catch-up missed)"
        )


def _states(
    store: Any, upgrades: Sequence[tuple[str, str, Any]] | None = None
) -> Iterable[tuple[str, dict[str, str]]]:
    """(upgrade urn, its result map) per BuildIndicesIncremental upgrade in the table; from
    `upgrades` (the `dataHubUpgradeResult` rows a scan's release detection read: `upgrade_rows`)
    when given, else read."""
    if upgrades is not None:
        metadata: Iterable[tuple[str, str]] = ((urn, value) for urn, value, _ in upgrades)
    else:
        stream = getattr(store, "stream_entities", None)
        if stream is None:
            return
        # by the type's urn range, which the primary key serves (a LIKE scans the whole table on
        # PostgreSQL: 0.45 s of every scan and triage on a 100k catalog's 786,812 rows)
        metadata = (
            (e.urn, row.metadata)
            for e in stream((UPGRADE_TYPE,))
            if (row := e.rows.get(STATE_ASPECT)) is not None
        )
    for urn, text in metadata:
        if not urn.startswith(f"urn:li:{UPGRADE_TYPE}:"):
            continue
        try:
            value = json.loads(text)
        except ValueError:
            continue
        result = value.get("result") if isinstance(value, dict) else None
        if isinstance(result, dict):
            yield urn, {str(k): str(v) for k, v in result.items()}


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def detect(
    store: Any,
    search: Any,
    index_prefix: str,
    aliases: Iterable[str],
    upgrades: Sequence[tuple[str, str, Any]] | None = None,
) -> list[IndexReindex]:
    """DataHub reindexes of `aliases` (the live entity index names) in progress or swapped
    (`upgrades`: the upgrade rows already read, see `_states`)."""
    wanted = set(aliases)
    meta_of = getattr(search, "index_meta", None)
    if meta_of is None or not wanted:
        return []
    meta: dict[str, tuple[list[str], int]] = meta_of(prefixed("*index_v*", index_prefix))

    def serving(alias: str) -> tuple[str, ...]:
        if alias in meta:
            return (alias,)
        return tuple(sorted(i for i, (names, _) in meta.items() if alias in names))

    found: dict[str, IndexReindex] = {}
    latest: dict[str, int] = {}
    states = list(_states(store, upgrades))
    catch_ups = {u[len(CATCH_UP) :]: r for u, r in states if u.startswith(CATCH_UP)}
    for urn, result in states:
        if not urn.startswith(PHASE1):
            continue
        caught = catch_ups.get(urn[len(PHASE1) :], {})
        for key, status in result.items():
            alias, _, prop = key.rpartition(".")
            if prop != "status" or alias not in wanted:
                continue
            nxt = result.get(f"{alias}.nextIndexName", "")
            start = _int(result.get(f"{alias}.reindexStartTime")) or 0
            if not nxt or nxt == alias or nxt not in meta or start < latest.get(alias, -1):
                continue
            now = serving(alias)
            phase = "swapped" if nxt in now else "in_progress"
            latest[alias] = start
            found[alias] = IndexReindex(
                alias,
                phase,
                nxt,
                now,
                status,
                "upgrade state",
                urn,
                start,
                _int(result.get(f"{alias}.dualWriteStartTime")),
                caught.get(f"{alias}.catchUpStatus", ""),
            )
    for alias in sorted(wanted - found.keys()):
        now = serving(alias)
        if not now:
            continue
        newest = max(meta[i][1] for i in now)
        pattern = re.compile(re.escape(alias) + _VERSIONED)
        candidates = sorted(
            i
            for i, (names, created) in meta.items()
            if i not in now and not names and pattern.match(i) and created > newest
        )
        if candidates:
            found[alias] = IndexReindex(alias, "in_progress", candidates[-1], now, "", "index names")
    return [found[a] for a in sorted(found)]


def refuse_full(store: Any, search: Any, index_prefix: str, aliases: Iterable[str]) -> None:
    """A `--full` swap of an alias DataHub is reindexing would race DataHub's own swap: refused."""
    running = [r for r in detect(store, search, index_prefix, aliases) if r.phase == "in_progress"]
    if running:
        first = running[0]
        raise DataHubReindexRunning(
            f"DataHub's zero-downtime reindex of {first.alias} is in progress (next index "
            f"{first.next_index}, {first.source}): --full would race its alias swap",
            hint="wait for DataHub's system-update to swap the alias, scan again, then repair "
            "(a targeted reindex or replay is not refused)",
        )


def reindex_mirrors(
    store: Any, search: Any, index_prefix: str, registry: Any, v3: Iterable[str] = ()
) -> dict[str, list[str]]:
    """Live entity index (V2, or one of the `v3` indices) -> the next index DataHub is building
    for it (a repair writes both)."""
    aliases = [entity_index(name, index_prefix) for name in registry.entity_names] + list(v3)
    found = detect(store, search, index_prefix, aliases)
    return {r.alias: [r.next_index] for r in found if r.phase == "in_progress"}


def hold_for_catch_up(report: Report) -> None:
    """DataHub swapped the alias before its catch-up ran (its newest order: copy, swap, catch-up):
    a diverged finding of that index on an entity changed in the gap (after the copy began,
    before the consumer wrote both indices) is in flight, DataHub's RESTATE catch-up will write it.
    A catch-up that ran (or failed) leaves the verdict alone: what it missed is divergence."""
    waiting = {
        r["alias"]: r
        for r in report.sections.get("reindex") or []
        if r.get("phase") == "swapped" and r.get("catch_up", "") in WAITING and r.get("reindex_start_ms")
    }
    if not waiting:
        return
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    kept = []
    for c in report.findings:
        r = waiting.get(c.finding.index or "")
        changed = c.finding.changed_at
        if r and c.verdict == Verdict.DIVERGED and changed is not None:
            ms = int(changed.timestamp() * 1000)
            if r["reindex_start_ms"] <= ms <= (r.get("dual_write_start_ms") or now_ms):
                reason = (
                    f"changed while DataHub's reindex of {r['alias']} copied it (before its consumer "
                    "wrote both indices); the alias was swapped and DataHub's catch-up (RESTATE) has not "
                    "run yet: it will write this entity"
                )
                old = (c.finding.entity_type, c.verdict.value, c.subkind)
                report.counts[old] -= 1
                if not report.counts[old]:
                    del report.counts[old]
                c = replace(c, verdict=Verdict.IN_FLIGHT, subkind=Verdict.IN_FLIGHT.value)
                c = replace(c, evidence=replace(c.evidence, reason=reason))
                new = (c.finding.entity_type, c.verdict.value, c.subkind)
                report.counts[new] = report.counts.get(new, 0) + 1
        kept.append(c)
    report.findings = kept
