"""The repair's console words: what was not repaired is never "consistent"."""

from __future__ import annotations

import io

from rich.console import Console

from auditor.core.plan import RebuildOutcome, RepairPlan
from auditor.reports.rebuild_report import render_console


def shown(outcome: RebuildOutcome) -> str:
    out = io.StringIO()
    render_console(outcome, Console(file=out, width=200, color_system=None))
    return out.getvalue()


def test_a_repair_whose_every_action_is_a_persons_says_nothing_was_repaired() -> None:
    """A report whose findings only a person can fix (a missing index, an alias on two indices,
    a stopped consumer) printed "verified: 0 entities consistent" beside "need a person"."""
    person = RebuildOutcome("reindex", True, RepairPlan([]), elsewhere={"recreate_index": 1})
    text = shown(person)
    assert "consistent" not in text and "nothing repaired here" in text and "1 actions" in text
    some = RebuildOutcome("reindex", True, RepairPlan([]), elsewhere={"fix_row": 2}, verified_urns=3)
    assert "3 entities consistent" in shown(some) and "2 actions above still to do" in shown(some)
    clean = RebuildOutcome("reindex", True, RepairPlan([]), verified_urns=4)
    assert "verified: 4 entities consistent" in shown(clean) and "still to do" not in shown(clean)
