"""The watch's heal queue (auditor/heal/queue.py) on a fake heal and a test's clock: each late urn
queued once and within its cap, re-checked after the policy's persistence time, at most one heal
per interval and a batch each, and every urn counted by how its re-check ended; the watch's
sighting counts toward the policy's persistence; a scan of given urns is judged systemic by count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auditor.core.model import Classified, Evidence, Finding, Kind, Report, Selection, Verdict
from auditor.core.plan import RebuildOutcome, RepairPlan
from auditor.exit_codes import ExitCode
from auditor.heal import guards
from auditor.heal.guards import Refusal
from auditor.heal.loop import HealOutcome, Left, _choose
from auditor.heal.policy import Guards, parse_policy
from auditor.heal.queue import HealQueue
from auditor.reports.watch_metrics import _heal

T0 = datetime(2026, 1, 1, 3, 0, tzinfo=UTC)
POLICY = """\
[heal]
enabled = true

[[rule]]
entity_type = "tag"
action = "page"

[[rule]]
kind = "*"
action = "heal"
after_scans = 2
after = "5m"
"""


def late(urn: str, entity_type: str = "dataset", verdict: Verdict = Verdict.IN_FLIGHT) -> Classified:
    f = Finding("watch.propagation", Kind.MISSING_DOCUMENT, urn, entity_type, "datasetindex_v2", None, T0,
                {"platform": "datahub"})  # fmt: skip
    return Classified(f, verdict, "missing_document", Evidence("late", first_seen=None))


class Clock:
    def __init__(self) -> None:
        self.now = T0.timestamp()

    def __call__(self) -> float:
        return self.now


class FakeHeal:
    """Answers each heal by the urns it was given: `answer(urns) -> HealOutcome`."""

    def __init__(self, answer: Any) -> None:
        self.answer, self.calls = answer, []

    def __call__(self, settings: object, policy: object, **kw: Any) -> HealOutcome:
        self.calls.append(kw)
        return self.answer(kw["selection"].urns)


def outcome(healed: tuple[str, ...] = (), waiting: tuple[str, ...] = (), left: dict[str, bool] | None = None,
            refused: tuple[str, ...] = ()) -> HealOutcome:  # fmt: skip
    out = HealOutcome("heal-x", T0, "p", False, True)
    out.healed = [late(u, verdict=Verdict.DIVERGED) for u in healed]
    if healed:
        out.repair = RebuildOutcome("reindex", True, RepairPlan(), journal="run-1")
    out.undecided = [late(u) for u in waiting] + [late("urn:outdated", verdict=Verdict.OUTDATED)]
    out.left = [Left(late(u, verdict=Verdict.DIVERGED), "why", waits) for u, waits in (left or {}).items()]
    out.refused = [Refusal(g, "because") for g in refused]
    return out


def test_each_late_urn_is_queued_once_and_rechecked_after_the_policys_persistence_time() -> None:
    clock = Clock()
    heal = FakeHeal(lambda urns: outcome())
    queue = HealQueue(None, parse_policy(POLICY), every=60, batch=2, cap=3, clock=clock, heal=heal)  # type: ignore[arg-type]
    for urn in ("urn:a", "urn:a", "urn:b", "urn:c", "urn:d"):  # urn:a twice; urn:d over the cap
        queue.hand(late(urn))
    queue.hand(late("urn:tag", "tag"))  # a person's by the policy: not queued
    counts = queue.summary()
    assert counts["queued"] == 3 and counts["urns"]["handed"] == 3
    assert counts["urns"]["dropped"] == 1 and counts["urns"]["not_handed"] == 1
    clock.now += 299
    assert queue.step() is None and heal.calls == []  # not due before the policy's 5 minutes
    clock.now += 1
    assert queue.step() is not None
    (call,) = heal.calls
    assert call["selection"] == Selection(urns=("urn:a", "urn:b"))  # the batch: oldest first, 2
    assert set(call["sightings"]) == {"urn:a", "urn:b"}
    assert queue.summary()["urns"]["converged"] == 2  # the scan found nothing: dropped
    clock.now += 30
    assert queue.step() is None  # one heal per interval
    clock.now += 30
    queue.step()
    assert heal.calls[-1]["selection"].urns == ("urn:c",) and queue.summary()["queued"] == 0


def test_a_recheck_heals_what_the_scan_proves_and_requeues_what_waits() -> None:
    clock = Clock()
    answers = iter([
        outcome(healed=("urn:lost",), waiting=("urn:slow",), left={"urn:young": True, "urn:person": False}),
        outcome(refused=(guards.CONSUMER,)),
        outcome(healed=("urn:young",)),
        outcome(),
    ])  # fmt: skip
    heal = FakeHeal(lambda urns: next(answers))
    queue = HealQueue(None, parse_policy(POLICY), every=10, clock=clock, heal=heal, give_up=100)  # type: ignore[arg-type]
    for urn in ("urn:lost", "urn:slow", "urn:young", "urn:person", "urn:outdated"):
        queue.hand(late(urn))
    clock.now += 300
    queue.step()
    said = queue.summary()
    ended = {"healed": 1, "converged": 0, "left": 2, "given_up": 0, "dropped": 0, "not_handed": 0}
    assert said["urns"] == {"handed": 5, **ended}  # left: a person's, and an outdated document
    assert said["queued"] == 2 and said["journal"] == "run-1"  # in flight and not yet: re-checked
    clock.now += 10
    queue.step()  # a guard refused: both stay, the refusal counted
    assert heal.calls[-1]["selection"].urns == ("urn:slow", "urn:young")
    assert queue.summary()["refused"][guards.CONSUMER] == 1 and queue.summary()["queued"] == 2
    clock.now += 10
    queue.step()  # urn:young healed; urn:slow not in the scan's findings: converged
    counts = queue.summary()["urns"]
    assert counts["healed"] == 2 and counts["converged"] == 1 and queue.summary()["queued"] == 0
    queue.hand(late("urn:old"))
    clock.now += 401
    assert queue.step() is None and queue.summary()["urns"]["given_up"] == 1
    text = "\n".join(_heal(queue.summary()))
    assert 'auditor_watch_heal_urns_total{outcome="healed"} 2' in text
    assert 'auditor_watch_heal_refused_total{guard="consumer"} 1' in text
    assert "auditor_watch_heal_runs_total 3" in text


def test_the_watchs_sighting_counts_toward_persistence_and_a_scan_of_urns_by_count() -> None:
    policy = parse_policy(POLICY)
    found = Classified(late("urn:a").finding, Verdict.DIVERGED, "missing_document", Evidence("lost"))
    report = Report(started_at=T0, scope=Selection(urns=("urn:a",)))
    report.entities, report.findings = {"dataset": 1}, [found]
    report.sources = {"platform_version": "1.7.0"}
    alone = HealOutcome("h", T0, "p", False, True, budget_left=10)
    assert _choose(report, policy, alone, T0) == []  # one scan, just now: not persistent
    sighted = HealOutcome("h", T0, "p", False, True, budget_left=10)
    assert _choose(report, policy, sighted, T0, {"urn:a": T0 - timedelta(minutes=5)}) == [found]
    recent = HealOutcome("h", T0, "p", False, True, budget_left=10)
    assert _choose(report, policy, recent, T0, {"urn:a": T0 - timedelta(minutes=4)}) == []
    assert recent.left[0].waits and "seen by 2 of 2 scans" in recent.left[0].why
    # every urn of a scan of given urns diverged is no share of anything; the count still holds
    assert guards.check(report, Guards(), None) == []
    assert guards.check(report, Guards(max_count=0), None)[0].guard == guards.SYSTEMIC


def test_the_watch_refuses_a_heal_policy_that_enables_no_healing(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from auditor.cli import app

    off = tmp_path / "off.toml"
    off.write_text(POLICY.replace("enabled = true", "enabled = false"), encoding="utf-8")
    env = {"AUDITOR_KAFKA_BOOTSTRAP": "127.0.0.1:1", "AUDITOR_SEARCH_URL": "http://127.0.0.1:1"}
    done = CliRunner().invoke(app, ["watch", "--heal-policy", str(off), "--duration", "1"], env=env)
    assert done.exit_code == 2 and "does not enable healing" in done.output, done.output
    bad = tmp_path / "bad.toml"
    bad.write_text(POLICY.replace('after = "5m"', 'after = "soon"'), encoding="utf-8")
    done = CliRunner().invoke(app, ["watch", "--heal-policy", str(bad), "--duration", "1"], env=env)
    assert done.exit_code == 2 and "line 12: after is a duration" in done.output, done.output


@pytest.mark.parametrize(
    "knobs", [("--heal-every", "5"), ("--heal-batch", "10"), ("--heal-every", "5", "--heal-batch", "10")]
)
def test_heal_knobs_without_a_policy_are_refused_not_ignored(tmp_path: Path, knobs: tuple[str, ...]) -> None:
    """--heal-every / --heal-batch alone would start a watch that heals nothing: a usage error,
    before any server is asked."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
    done = subprocess.run(
        [sys.executable, "-m", "auditor.cli", "watch", "--duration", "1", *knobs],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == ExitCode.USAGE, (done.stdout, done.stderr)
    assert "without --heal-policy" in done.stderr and "Traceback" not in done.stderr
    for knob in knobs[::2]:
        assert knob in done.stderr
