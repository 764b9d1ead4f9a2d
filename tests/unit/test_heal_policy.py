"""The heal policy (auditor/heal/policy.py) and guards (guards.py) on their own: an invalid policy
refused naming its line, the rules, persistence, hours and budgets the loop chooses by, and each
guard read from a report."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from auditor.core.model import (
    Classified,
    Evidence,
    Finding,
    Kind,
    PartitionHealth,
    PartitionPosition,
    Report,
    Verdict,
)
from auditor.core.sanity import StoreSmaller
from auditor.heal import guards
from auditor.heal.loop import HealOutcome, _choose
from auditor.heal.policy import Guards, Policy, PolicyError, parse_policy
from auditor.heal.record import HealRecord

T0 = datetime(2026, 1, 1, 3, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
[heal]
enabled = true
max_per_run = 2
max_per_hour = 3

[[rule]]
kind = "orphan_document"
action = "page"

[[rule]]
kind = "*"
entity_type = "dataset"
action = "heal"
after_scans = 2
after = "10m"
"""


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("[heal]\nenabled = true\nmax_per_rum = 3\n", 3, "unknown key [heal] 'max_per_rum'"),
        ("[heal]\nenabled = 'yes'\n", 2, "enabled is a bool"),
        ('[heal]\nhours = "1-6"\n', 2, "HH:MM-HH:MM"),
        ("[guards]\n\nmax_share = 5\n", 3, "between 0 and 1"),
        (GOOD + '\n[[rule]]\nkind = "missing_documnt"\naction = "heal"\n', 18, "unknown kind"),
        (GOOD.replace('after = "10m"', 'after = "ten minutes"'), 15, "a duration"),
        (GOOD.replace('action = "page"', 'action = "fix"'), 8, "heal or page"),
        (GOOD + '\n[[rule]]\nkind = "missing_index"\naction = "heal"\n', 18, "a person's"),
        ("[heal\nenabled = true\n", None, "not TOML"),
    ],
)
def test_an_invalid_policy_is_refused_naming_the_line(text: str, line: int | None, says: str) -> None:
    with pytest.raises(PolicyError) as refused:
        parse_policy(text, "heal.toml")
    message = str(refused.value)
    assert says in message, message
    if line is not None:
        assert message.startswith(f"heal.toml, line {line}: "), message


def test_without_a_policy_nothing_is_healed_and_the_readmes_policy_parses() -> None:
    assert Policy().enabled is False and Policy().rules == ()
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Heal within a policy", 1)[1]
    readme = parse_policy(section.split("```toml\n", 1)[1].split("```", 1)[0])
    assert readme.enabled and not readme.prune and readme.rules[0].after == timedelta(minutes=5)


def _finding(urn: str, kind: Kind = Kind.STALE_FIELDS, seen: int = 1, age: float = 3600.0,
             entity_type: str = "dataset") -> Classified:  # fmt: skip
    f = Finding("check", kind, urn, entity_type, "datasetindex_v2", None, T0, {"platform": "datahub"})
    evidence = Evidence("lost", seen_before=seen, first_seen=T0 - timedelta(seconds=age))
    return Classified(f, Verdict.DIVERGED, kind.value, evidence)


def _report(*findings: Classified, entities: int = 100) -> Report:
    r = Report(started_at=T0)
    r.entities = {"dataset": entities}
    r.findings = list(findings)
    for c in findings:
        key = (c.finding.entity_type, c.verdict.value, c.subkind)
        r.counts[key] = r.counts.get(key, 0) + 1
    r.sources = {"platform_version": "1.7.0 (aspect table)"}
    return r


def test_the_rules_persistence_and_budget_choose_whole_entities_oldest_first() -> None:
    policy = parse_policy(GOOD)
    report = _report(
        _finding("urn:a", age=7200),
        _finding("urn:a", Kind.STALE_SYSTEM_METADATA, age=7200),
        _finding("urn:b", age=3600),
        _finding("urn:c", age=1800),  # over the run's budget of 2 entities
        _finding("urn:young", seen=0),  # one scan only
        _finding("urn:recent", age=60),  # seen twice, but for a minute
        _finding("urn:tag", entity_type="tag"),  # no rule names tags
        _finding("urn:orphan", Kind.ORPHAN_DOCUMENT),  # prune is off
        _finding("urn:orphan", Kind.ORPHAN_EDGE),  # its edges stay with it
    )
    outcome = HealOutcome("heal-1", T0, "p", False, True, budget_left=3)
    chosen = _choose(report, policy, outcome, T0)
    assert sorted({c.finding.urn for c in chosen}) == ["urn:a", "urn:b"] and len(chosen) == 3
    why = {x.finding.finding.urn: x.why for x in outcome.left}
    assert why["urn:c"].startswith("over the budget")
    assert why["urn:young"].startswith("not persistent") and why["urn:recent"].startswith("not persistent")
    assert why["urn:tag"].startswith("no rule") and "not deleted" in why["urn:orphan"]
    assert len([x for x in outcome.left if x.finding.finding.urn == "urn:orphan"]) == 2
    hours = parse_policy(GOOD.replace("max_per_hour = 3", 'max_per_hour = 3\nhours = "22:00-02:00"'))
    late = HealOutcome("heal-2", T0, "p", False, True, budget_left=3)
    assert not _choose(report, hours, late, T0) and any("allowed hours" in x.why for x in late.left)
    assert hours.in_hours(T0.replace(hour=23)) and hours.in_hours(T0.replace(hour=1))


def test_each_guard_reads_its_condition_from_the_report(tmp_path: Path) -> None:
    few = _report(_finding("urn:a"), _finding("urn:a", Kind.STALE_SYSTEM_METADATA))
    assert guards.check(few, Guards(), None) == []
    many = _report(*(_finding(f"urn:{i}") for i in range(6)))
    assert [r.guard for r in guards.check(many, Guards(max_share=0.05), None)] == [guards.SYSTEMIC]
    assert guards.check(many, Guards(max_share=0.5, max_count=5), None)[0].guard == guards.SYSTEMIC
    stalled = _report()
    stalled.partitions = [PartitionPosition("mcl", 0, 5, 9, 0, None, PartitionHealth.REWOUND, None, 1)]
    assert [r.guard for r in guards.check(stalled, Guards(), None)] == [guards.CONSUMER]
    reindexing = _report()
    reindexing.warnings = ["search_index_job 7f is RUNNING: table 10/90; their findings are in flight"]
    assert [r.guard for r in guards.check(reindexing, Guards(), None)] == [guards.PLATFORM_REINDEX]
    reindexing.warnings, reindexing.sections["reindex"] = [], [{"alias": "x", "phase": "in_progress"}]
    assert [r.guard for r in guards.check(reindexing, Guards(), None)] == [guards.PLATFORM_REINDEX]
    unknown = _report()
    unknown.sources["platform_version"] = "unknown: judged by 1.7.0's rules"
    assert [r.guard for r in guards.check(unknown, Guards(), None)] == [guards.RELEASE]
    assert guards.check(unknown, Guards(require_release=False), None) == []
    smaller = _report()
    smaller.store_smaller = StoreSmaller(0, 40, 40)
    assert [r.guard for r in guards.check(smaller, Guards(), None)] == [guards.STORE]
    record = HealRecord(tmp_path / "state.sqlite")
    try:
        record.add("heal-1", T0, 2, False, "run-1", "1 findings still wrong after the repair")
        failed = record.last_failure()
        assert failed and "heal-1" in failed and "--acknowledge" in failed
        assert [r.guard for r in guards.check(few, Guards(), failed)] == [guards.LAST_HEAL]
        assert record.healed_since(T0) == 2 and record.healed_since(T0 + timedelta(seconds=1)) == 0
        assert record.acknowledge() == 1 and record.last_failure() is None
    finally:
        record.close()


def test_a_policy_that_heals_nothing_refuses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Off (no `enabled = true`): the heal is the scan, its code the scan's, no guard pages; on,
    the same systemic scan is refused (11) before anything is chosen."""
    from auditor import api
    from auditor.heal.loop import heal_once
    from auditor.settings import load_settings

    many = _report(*(_finding(f"urn:{i}") for i in range(20)))
    monkeypatch.setattr(api, "scan", lambda *a, **k: many)
    settings = load_settings(env={}, state_file=str(tmp_path / "state.sqlite"))
    off = heal_once(settings, Policy(), now=T0)
    assert not off.refused and off.exit_code == 1 and off.repair is None
    assert all("does not enable" in x.why for x in off.left) and len(off.left) == 20
    on = heal_once(settings, parse_policy(GOOD), now=T0)
    assert [r.guard for r in on.refused] == [guards.SYSTEMIC] and on.exit_code == 11 and on.repair is None


def test_the_console_groups_an_entitys_findings_and_escapes_the_data() -> None:
    import io

    from rich.console import Console

    from auditor.heal.loop import Left
    from auditor.heal.report import render_console, to_dict

    urn = "urn:li:dataset:(urn:li:dataPlatform:hive,[red]x[/red]\x1b[2J,PROD)"
    outcome = HealOutcome("heal-1", T0, "heal.toml", False, True, budget_left=7)
    outcome.left = [Left(_finding(urn, k), "an orphan: reported, not deleted") for k in
                    (Kind.ORPHAN_DOCUMENT, Kind.ORPHAN_EDGE, Kind.ORPHAN_EDGE)]  # fmt: skip
    outcome.refused = [guards.Refusal(guards.CONSUMER, "the consumer (g) is not moving: mcl[0] stalled")]
    out = io.StringIO()
    render_console(outcome, Console(file=out, width=300, force_terminal=False))
    text = out.getvalue()
    assert "1 entities not healed (3 findings)" in text and "orphan_document, orphan_edge x2" in text
    assert "[red]x[/red]" in text and "\x1b" not in text  # the data's markup shown as text, no escape code
    assert "REFUSED by guard consumer" in text and "nothing written" in text
    assert to_dict(outcome)["exit_code"] == 11 and to_dict(outcome)["refused"][0]["guard"] == "consumer"
