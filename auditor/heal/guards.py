"""The guards that stop a heal and page a person instead.

A heal repairs a few lost writes. When the scan says something larger happened (a restore, the
wrong release's rules, a consumer that stopped, the platform rebuilding its own indices, a store
that looks empty), repairing "what it proved" would write the symptom of a systemic fault into
the index, or race the platform's own job: each guard names the condition, and one that holds
refuses the whole heal (nothing written), as Cruise Control's notifier can still say no.
Platform-neutral: each reads the report (its counts, partitions, sections and sources), never a
platform's modules.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from auditor.core.model import PartitionHealth, Report, Verdict
from auditor.heal.policy import Guards

# the guards' names, as the report, the metrics (`guard` label) and docs/heal.md say them
SYSTEMIC = "systemic_divergence"
CONSUMER = "consumer"
PLATFORM_REINDEX = "platform_reindex"
STORE = "store_smaller"
RELEASE = "release_unknown"
LAST_HEAL = "last_heal_failed"
NAMES = (SYSTEMIC, CONSUMER, PLATFORM_REINDEX, STORE, RELEASE, LAST_HEAL)

_BAD_CONSUMER = (PartitionHealth.STALLED, PartitionHealth.STOPPED, PartitionHealth.REWOUND)
# OpenMetadata's running reindex job, as its scan warns of it (platforms/openmetadata/reindex.py)
_OM_JOB = re.compile(r"^search_index_job \S+ is \S+: .*their findings are in flight")


@dataclass(frozen=True)
class Refusal:
    """One guard that held: its name and why, in a sentence for the page."""

    guard: str
    why: str

    def to_json(self) -> dict[str, str]:
        return {"guard": self.guard, "why": self.why}


def check(report: Report, guards: Guards, last_failed: str | None) -> list[Refusal]:
    """Every guard that holds for this scan (empty: the heal may go on)."""
    found: list[Refusal] = []
    for guard in (_store, _systemic, _consumer, _platform_reindex, _release):
        why = guard(report, guards)
        if why:
            found.append(Refusal(_NAME[guard], why))
    if last_failed:
        found.append(Refusal(LAST_HEAL, last_failed))
    return found


def _store(report: Report, guards: Guards) -> str | None:
    if report.store_smaller is not None:
        return report.store_smaller.text
    return None


def _systemic(report: Report, guards: Guards) -> str | None:
    """Entities diverged (not findings: one lost write is several, its document, system metadata
    and edges) against the entities scanned; the findings the report did not keep in detail
    count as an entity each (a bound: a report that capped them is large anyway). A scan of given
    urns (the watch's re-check of what it saw late) is judged by the count alone: those urns were
    chosen for being wrong, so their share diverged says nothing of the whole."""
    urns = {c.finding.urn for c in report.findings if c.verdict == Verdict.DIVERGED}
    diverged = len(urns) + report.findings_dropped
    entities = sum(report.entities.values())
    share = diverged / entities if entities else 1.0
    if report.scope.urns:
        share = 0.0
    if diverged and (diverged > guards.max_count or share > guards.max_share):
        return (
            f"{diverged} entities diverged of {entities} scanned ({100 * share:.1f}%; the policy heals "
            f"at most {100 * guards.max_share:g}% and {guards.max_count}): systemic (a restore, the "
            "wrong release's rules, a stopped consumer), not a few lost writes"
        )
    return None


def _consumer(report: Report, guards: Guards) -> str | None:
    bad = [p for p in report.partitions if p.health in _BAD_CONSUMER]
    if bad:
        named = ", ".join(f"{p.topic}[{p.partition}] {p.health.value}" for p in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        return f"the consumer ({report.consumer_group or 'its group'}) is not moving: {named}{more}"
    stalled = report.total(Verdict.STALLED)
    if stalled:
        return f"{stalled} findings wait on a stalled consumer"
    return None


def _platform_reindex(report: Report, guards: Guards) -> str | None:
    running = [r for r in report.sections.get("reindex") or () if r.get("phase") == "in_progress"]
    if running:
        names = ", ".join(f"{r.get('alias')} (next index {r.get('next_index')})" for r in running)
        return f"the platform's own reindex is running: {names}"
    jobs = [w for w in report.warnings if _OM_JOB.match(w)]
    if jobs:
        return f"the platform's own reindex is running: {jobs[0]}"
    return None


def _release(report: Report, guards: Guards) -> str | None:
    said = report.sources.get("platform_version", "")
    if guards.require_release and said.startswith("unknown"):
        return (
            f"the release the data was judged by was not found ({said}): a heal by the wrong "
            "release's rules would rewrite documents the platform never wrote (--platform-version "
            "names it)"
        )
    return None


_NAME: dict[Callable[[Report, Guards], str | None], str] = {
    _store: STORE,
    _systemic: SYSTEMIC,
    _consumer: CONSUMER,
    _platform_reindex: PLATFORM_REINDEX,
    _release: RELEASE,
}
