"""The watch's heal queue: what `auditor watch --heal-policy` saw late past its SLO, re-checked
later, and healed only once a scan proves it diverged.

The watch judges an event once, when it turns late; a lost index write is still in flight then
(the consumer has not passed it, or only just), so "late" proves nothing. The queue takes each
late urn (once: an urn already queued is not queued twice; at most `cap` urns, the rest counted
`dropped`), waits the policy's persistence time for its entity type (`Policy.recheck_after`), then
hands a batch of due urns to `heal_once` with a scan of those urns only: the scan's kernel judges
them (in flight, converged, diverged), and the heal follows the same policy, guards, budgets and
journal as a scheduled heal, the watch's sighting counting as one scan that saw the entity. At
most one heal per `every` seconds, at most `batch` urns each.

After a heal, each urn of the batch is:
- healed (repaired by the heal: out of the queue; a repair its verification found still wrong
  refuses every later heal, guard `last_heal_failed`, until a person acknowledges it);
- converged (the scan found nothing wrong with it: out, nothing written);
- re-queued for the next heal: the scan says it is still in flight or stalled, the policy says
  not yet (persistence, budget, hours), a guard refused the heal, or the scan did not complete;
- left (diverged, but the policy leaves it to a person; or judged outdated, or the store behind,
  which no heal writes: out);
- given up, when it is still re-queued `give_up` seconds after its first re-check (out).

Platform-neutral: urns, the kernel's findings and `auditor.heal.loop`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from auditor.core.model import Classified, Selection, Verdict
from auditor.exit_codes import ExitCode
from auditor.heal.guards import NAMES
from auditor.heal.loop import HealOutcome, heal_once
from auditor.heal.policy import Policy
from auditor.scan.options import ScanOptions
from auditor.settings import Settings

# how each urn handed to the queue ended (the `outcome` label of the watch's heal metrics)
HANDED, HEALED, CONVERGED, LEFT, GIVEN_UP, DROPPED, NOT_HANDED = (
    "handed", "healed", "converged", "left", "given_up", "dropped", "not_handed"
)  # fmt: skip
OUTCOMES = (HANDED, HEALED, CONVERGED, LEFT, GIVEN_UP, DROPPED, NOT_HANDED)

Heal = Callable[..., HealOutcome]
_WAITING = (Verdict.IN_FLIGHT, Verdict.STALLED)  # the scan says: not yet (re-checked later)


@dataclass
class _Entry:
    urn: str
    sighted: datetime  # when the watch first saw it late
    due: float  # epoch seconds: re-checked no earlier
    first_due: float  # its first re-check: given up `give_up` seconds later


class HealQueue:
    """Late urns waiting for their re-check, and the heals that re-check them (thread-safe: the
    watch hands from its loop, `run` heals from a thread of its own)."""

    def __init__(
        self,
        settings: Settings,
        policy: Policy,
        *,
        every: float = 60.0,
        batch: int = 100,
        cap: int = 10_000,
        give_up: float = 3600.0,
        options: ScanOptions | None = None,
        state_dir: Path | None = None,
        journal_dir: Path | None = None,
        wait_seconds: float = 300.0,
        heal: Heal = heal_once,
        clock: Callable[[], float] = time.time,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.settings, self.policy, self.heal = settings, policy, heal
        self.every, self.batch, self.cap, self.give_up = every, max(1, batch), cap, give_up
        self.options, self.state_dir, self.journal_dir = options, state_dir, journal_dir
        self.wait_seconds, self.clock, self.log = wait_seconds, clock, log
        self._queued: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._last_heal: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.counts: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
        self.refused: dict[str, int] = dict.fromkeys(NAMES, 0)  # heals refused, by guard
        self.runs = 0
        self.last: HealOutcome | None = None

    # -- the watch's side ------------------------------------------------------------------
    def hand(self, late: Classified) -> None:
        """A finding the watch judged late: its urn waits for a re-check (once, within the cap)."""
        f = late.finding
        wait = self.policy.recheck_after(f.entity_type, f.platform)
        now = self.clock()
        with self._lock:
            if f.urn in self._queued:
                return
            if wait is None:  # no rule heals this entity type: a person's, nothing to re-check
                self.counts[NOT_HANDED] += 1
            elif len(self._queued) >= self.cap:
                self.counts[DROPPED] += 1
            else:
                sighted = datetime.fromtimestamp(now, UTC)
                due = now + wait.total_seconds()
                self._queued[f.urn] = _Entry(f.urn, sighted, due, due)
                self.counts[HANDED] += 1

    def summary(self) -> dict[str, Any]:
        """The queue's counters as plain data (the watch's metrics, JSON lines and console)."""
        with self._lock:
            last = self.last
            return {
                "queued": len(self._queued),
                "runs": self.runs,
                "urns": dict(self.counts),
                "refused": dict(self.refused),
                "last_run": last.run_id if last else None,
                "last_exit_code": int(last.exit_code) if last else None,
                "journal": last.journal if last else None,
            }

    # -- the heal's side -------------------------------------------------------------------
    def step(self) -> HealOutcome | None:
        """One heal of the due urns, when the last was at least `every` seconds ago (None: none)."""
        now = self.clock()
        if self._last_heal is not None and now - self._last_heal < self.every:
            return None
        batch = self._take(now)
        if not batch:
            return None
        self._last_heal = now
        sightings = {e.urn: e.sighted for e in batch}
        try:
            outcome = self.heal(
                self.settings,
                self.policy,
                selection=Selection(urns=tuple(sorted(sightings))),
                options=self.options,
                state_dir=self.state_dir,
                journal_dir=self.journal_dir,
                wait_seconds=self.wait_seconds,
                sightings=sightings,
            )
        except Exception as exc:  # a backend down: the heal is tried again, the watch goes on
            self._back(batch, now)
            self._say(f"heal of {len(batch)} late entities failed: {exc}; tried again later")
            return None
        self._settle(batch, outcome, now)
        return outcome

    def run(self, tick: float = 1.0) -> None:
        """Heal from a thread of its own until `stop` (the watch keeps timing meanwhile)."""
        self._thread = threading.Thread(target=self._loop, args=(tick,), name="watch-heal", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """No new heal; the one running (journaled, resumable) is waited for up to `timeout`."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self._say("a heal was still running when the watch stopped: its journal holds what it wrote")

    def _loop(self, tick: float) -> None:
        while not self._stop.wait(min(tick, self.every)):
            self.step()

    def _take(self, now: float) -> list[_Entry]:
        """The due urns, oldest sighting first, at most `batch`; those waited too long given up."""
        with self._lock:
            expired = [e for e in self._queued.values() if now - e.first_due > self.give_up]
            for e in expired:
                del self._queued[e.urn]
            self.counts[GIVEN_UP] += len(expired)
            due = sorted((e for e in self._queued.values() if e.due <= now), key=lambda e: (e.sighted, e.urn))
            return due[: self.batch]

    def _back(self, entries: Iterable[_Entry], now: float) -> None:
        """Re-queued: re-checked at the next heal."""
        with self._lock:
            for e in entries:
                e.due = now + self.every

    def _settle(self, batch: list[_Entry], outcome: HealOutcome, now: float) -> None:
        healed = set(outcome.healed_urns) if outcome.repair is not None and outcome.repair.applied else set()
        waits = {c.finding.urn for c in outcome.undecided if c.verdict in _WAITING}
        waits |= {x.finding.finding.urn for x in outcome.left if x.waits}
        left = {x.finding.finding.urn for x in outcome.left} | {c.finding.urn for c in outcome.undecided}
        left -= waits
        again = bool(outcome.refused) or outcome.scan_exit_code == ExitCode.INCOMPLETE
        done: dict[str, str] = {}
        for e in batch:
            if e.urn in healed:
                done[e.urn] = HEALED
            elif again or e.urn in waits:
                continue
            elif e.urn in left:
                done[e.urn] = LEFT
            else:  # nothing the scan judged wrong (nor in flight): it converged
                done[e.urn] = CONVERGED
        with self._lock:
            self.runs += 1
            self.last = outcome
            for r in outcome.refused:
                self.refused[r.guard] = self.refused.get(r.guard, 0) + 1
            for urn, how in done.items():
                self._queued.pop(urn, None)
                self.counts[how] += 1
        self._back([e for e in batch if e.urn not in done], now)
        self._say(_said(outcome, len(batch), done))

    def _say(self, text: str) -> None:
        if self.log is not None:
            self.log(text)


def _said(outcome: HealOutcome, rechecked: int, done: dict[str, str]) -> str:
    """One line per heal, for the watch's stderr."""
    by = {how: sum(1 for h in done.values() if h == how) for how in (HEALED, CONVERGED, LEFT)}
    text = (
        f"heal {outcome.run_id}: {rechecked} late entities re-checked, {by[HEALED]} healed, "
        f"{by[CONVERGED]} converged, {by[LEFT]} left to a person, {rechecked - len(done)} re-queued"
    )
    if outcome.refused:
        text += f"; refused by {', '.join(r.guard for r in outcome.refused)}"
    if outcome.journal:
        text += f"; journal {outcome.journal}"
    return text + f" (exit {int(outcome.exit_code)})"
