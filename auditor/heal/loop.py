"""One heal: scan -> guards -> policy -> repair -> verification -> journal and record.

`heal_once` is the whole loop's one iteration (`auditor heal` runs it once; a scheduler runs the
command; a test or the soak calls the function). Platform-neutral: the scan and the repair are
`auditor.api`'s, which ask the registry for the platform, as every command does.

What it writes is an ordinary repair (`auditor.api.rebuild`, a targeted one from the scan's
findings): journaled, so `auditor rebuild undo RUN` takes it back, and verified, so a heal that
did not fix what it wrote says so, and the next heal refuses until a person has looked.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from auditor.core.model import Classified, Kind, Report, Selection, Verdict
from auditor.core.plan import RebuildOutcome
from auditor.exit_codes import ExitCode
from auditor.heal.guards import Refusal, check
from auditor.heal.policy import DELETING, Policy
from auditor.heal.record import HealRecord
from auditor.scan.options import ScanOptions
from auditor.settings.model import Settings


@dataclass
class Left:
    """A finding the heal did not repair, and why (a person's, not yet persistent, over budget)."""

    finding: Classified
    why: str
    waits: bool = False  # a later heal may heal it (not persistent yet, over the budget, the hours)

    def to_json(self) -> dict[str, Any]:
        f = self.finding.finding
        return {"urn": f.urn, "entity_type": f.entity_type, "kind": f.kind.value,
                "verdict": self.finding.verdict.value, "why": self.why}  # fmt: skip


@dataclass
class HealOutcome:
    """What one heal saw, refused, healed and left (data only: auditor/heal/report.py renders it)."""

    run_id: str
    started_at: datetime
    policy: str  # the policy file it followed
    dry_run: bool
    enabled: bool
    scan_exit_code: int = 0
    diverged: int = 0  # diverged findings the scan judged
    unseen: int = 0  # findings the scan counted but did not keep in detail (never healed)
    refused: list[Refusal] = field(default_factory=list)
    healed: list[Classified] = field(default_factory=list)  # repaired (or, a dry run, would be)
    left: list[Left] = field(default_factory=list)
    # the scan's findings a heal never writes: in flight, stalled, outdated, the store behind
    undecided: list[Classified] = field(default_factory=list)
    repair: RebuildOutcome | None = None
    budget_left: int = 0  # entities the hourly budget allows after this run
    finished_at: datetime | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def healed_urns(self) -> list[str]:
        return sorted({c.finding.urn for c in self.healed})

    @property
    def verified(self) -> bool:
        """The repair fixed what it wrote (or wrote nothing)."""
        return self.repair is None or not self.repair.applied or self.repair.exit_code == ExitCode.OK

    @property
    def journal(self) -> str | None:
        return self.repair.journal if self.repair is not None else None

    @property
    def exit_code(self) -> int:
        """11 a guard refused (a person is paged); 3 the scan incomplete; 1 the repair still wrong
        after verification, or something diverged left for a person; else the scan's own code for
        what is left (0 when everything persistent was healed)."""
        if self.scan_exit_code == ExitCode.INCOMPLETE:
            return ExitCode.INCOMPLETE
        if self.refused:
            return ExitCode.HEAL_REFUSED
        if not self.verified:
            return ExitCode.PERSISTENT
        if self.unseen or any(x.finding.verdict in (Verdict.DIVERGED, Verdict.INVALID) for x in self.left):
            return ExitCode.PERSISTENT
        if self.scan_exit_code == ExitCode.PERSISTENT:
            return ExitCode.OK if not self.dry_run else ExitCode.PERSISTENT
        return self.scan_exit_code


def heal_once(
    settings: Settings,
    policy: Policy,
    *,
    dry_run: bool = False,
    options: ScanOptions | None = None,
    selection: Selection | None = None,
    now: datetime | None = None,
    state_dir: Path | None = None,
    journal_dir: Path | None = None,
    wait_seconds: float = 300.0,
    sightings: Mapping[str, datetime] | None = None,
) -> HealOutcome:
    """One iteration of the loop. `now` (a test's clock) decides persistence, hours and budget.
    `sightings`: when another observer (the watch) saw an entity wrong, each counted as one more
    scan that saw its findings, at that time (a scan of given urns has no history of its own)."""
    from auditor import api

    started = now or datetime.now(UTC)
    outcome = HealOutcome(
        f"heal-{started:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}",
        started,
        policy.source,
        dry_run,
        policy.enabled,
    )
    report = api.scan(settings, selection or Selection(), options or ScanOptions())
    outcome.scan_exit_code = int(report.exit_code)
    outcome.diverged, outcome.unseen = report.total(Verdict.DIVERGED), report.findings_dropped
    outcome.undecided = [c for c in report.findings if c.verdict not in _JUDGED]
    record = HealRecord(settings.state_file)
    try:
        used = record.healed_since(started - timedelta(hours=1))
        outcome.budget_left = max(0, policy.max_per_hour - used)
        if not report.complete:
            outcome.notes.append("the scan could not complete: nothing healed")
            return _done(outcome)
        if policy.enabled:  # a policy that heals nothing refuses nothing: the scan's code is the answer
            outcome.refused = check(report, policy.guards, record.last_failure())
        chosen = _choose(report, policy, outcome, started, sightings)
        if outcome.refused or not chosen:
            outcome.left += [Left(c, "not healed: a guard refused the heal") for c in chosen]
            return _done(outcome)
        outcome.healed = chosen
        outcome.repair = _repair(settings, policy, chosen, dry_run, state_dir, journal_dir, wait_seconds)
        if outcome.repair.applied:
            healed = len(outcome.healed_urns)
            outcome.budget_left = max(0, outcome.budget_left - healed)
            why = api.why_unverified(outcome.repair)
            record.add(outcome.run_id, started, healed, outcome.verified, outcome.journal, why)
        return _done(outcome)
    finally:
        record.close()


def acknowledge(settings: Settings) -> int:
    """A person has looked at the failed heals: the next heal is no longer refused for them."""
    record = HealRecord(settings.state_file)
    try:
        return record.acknowledge()
    finally:
        record.close()


def _done(outcome: HealOutcome) -> HealOutcome:
    outcome.finished_at = datetime.now(UTC)
    return outcome


_JUDGED = (Verdict.DIVERGED, Verdict.INVALID)  # what a heal chooses from


def _choose(
    report: Report,
    policy: Policy,
    outcome: HealOutcome,
    now: datetime,
    sightings: Mapping[str, datetime] | None = None,
) -> list[Classified]:
    """The findings this run heals, within the policy and the budget; the rest go to `outcome.left`
    with why. Oldest first (first seen), whole entities: every finding of an urn or none."""
    judged = [c for c in report.findings if c.verdict in _JUDGED]
    # in flight, stalled (a guard's), outdated, store behind: nothing to heal
    held: dict[str, str] = {}  # an entity with one finding left keeps all (an orphan's edges too)
    for c in judged:
        why = _why_not(c, policy, now, (sightings or {}).get(c.finding.urn))
        if why:
            held.setdefault(c.finding.urn, why)
    wanted: list[Classified] = []
    for c in judged:
        why = held.get(c.finding.urn)
        if why:
            outcome.left.append(Left(c, why, why.startswith(_NOT_YET)))
        else:
            wanted.append(c)
    if report.findings_dropped:
        outcome.notes.append(
            f"{report.findings_dropped} findings not kept in the report's detail: not healed"
        )
    if not wanted:
        return []
    if not policy.in_hours(now):
        start, end = policy.hours or (None, None)
        outcome.left += [
            Left(c, f"outside the allowed hours ({start:%H:%M}-{end:%H:%M} UTC)", True) for c in wanted
        ]
        return []
    cap = min(policy.max_per_run, outcome.budget_left)
    oldest = sorted(wanted, key=lambda c: (c.evidence.first_seen or now, c.finding.urn))
    urns: list[str] = []
    for c in oldest:
        if c.finding.urn not in urns and len(urns) < cap:
            urns.append(c.finding.urn)
    chosen = [c for c in wanted if c.finding.urn in urns]
    over = [c for c in wanted if c.finding.urn not in urns]
    outcome.left += [
        Left(c, f"over the budget ({cap} entities this run): left for the next", True) for c in over
    ]
    return chosen


_NOT_YET = "not persistent long enough yet"


def _why_not(c: Classified, policy: Policy, now: datetime, sighted: datetime | None = None) -> str | None:
    """Why the policy does not heal this finding now (None: it does)."""
    if not policy.enabled:
        return "the policy does not enable healing ([heal] enabled = true)"
    if c.verdict == Verdict.INVALID:
        return "an unreadable row: a person fixes the row"
    if c.finding.kind in DELETING and not policy.prune:
        return "an orphan: reported, not deleted ([heal] prune = true deletes)"
    rule = policy.rule_for(c)
    if rule is None:
        return "no rule of the policy names it: a person's"
    if rule.action != "heal":
        return f"the policy leaves it to a person (rule at line {rule.line})"
    if not rule.persistent(c, now, sighted):
        seen = c.evidence.seen_before + 1 + (sighted is not None)
        return f"{_NOT_YET} (seen by {seen} of {rule.after_scans} scans; {rule.after} asked)"
    if c.finding.kind == Kind.ORPHAN_DOCUMENT and policy.mode == "replay":
        return 'an orphan: a replay cannot delete it ([heal] mode = "reindex")'
    return None


def _repair(
    settings: Settings,
    policy: Policy,
    chosen: list[Classified],
    dry_run: bool,
    state_dir: Path | None,
    journal_dir: Path | None,
    wait_seconds: float,
) -> RebuildOutcome:
    """The heal's repair: a targeted one of the chosen findings, journaled and verified."""
    from auditor import api
    from auditor.rebuild.request import RebuildRequest

    request = RebuildRequest(
        policy.mode,
        findings=chosen,
        include=frozenset({Verdict.DIVERGED}),
        apply=not dry_run,
        rate=policy.rate,
        wait_seconds=wait_seconds,
        state_dir=state_dir or Path(settings.state_file).parent,
        journal_dir=journal_dir,
    )
    return api.rebuild(settings, request)
