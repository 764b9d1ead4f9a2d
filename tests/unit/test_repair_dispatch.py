"""Repairs as data: the executor registry and the renderer dispatch on the action's type, and
every registered platform's tables agree with what it declares."""

from __future__ import annotations

import pytest

from auditor import platforms
from auditor.core.model import RepairKind
from auditor.core.plan import RepairAction, RepairPlan
from auditor.core.repairs import Executors, Mode, Renderer
from auditor.platforms.base import Capability

REPLAY = frozenset({RepairKind.REPLAY_ASPECT, RepairKind.REWRITE_EDGES})
MODES = Executors({Mode.REPLAY: REPLAY, Mode.REINDEX: REPLAY | {RepairKind.REWRITE_DOCUMENT}})


def test_the_preferred_mode_writes_an_action() -> None:
    assert MODES.mode_for(RepairKind.REPLAY_ASPECT) == Mode.REPLAY
    assert MODES.mode_for(RepairKind.REWRITE_DOCUMENT) == Mode.REINDEX
    assert MODES.mode_for(RepairKind.FIX_ROW) is None  # a person fixes a row


def test_a_finding_gets_the_first_mode_that_writes_all_its_actions() -> None:
    assert MODES.mode_covering([RepairKind.REPLAY_ASPECT, RepairKind.REWRITE_EDGES]) == Mode.REPLAY
    assert MODES.mode_covering([RepairKind.REPLAY_ASPECT, RepairKind.REWRITE_DOCUMENT]) == Mode.REINDEX
    assert MODES.mode_covering([RepairKind.FIX_ROW, RepairKind.RESTART_CONSUMER]) is None


def test_what_a_mode_leaves_elsewhere_is_counted_by_kind() -> None:
    repairs = RepairPlan(
        [
            RepairAction(RepairKind.REWRITE_DOCUMENT, "a"),
            RepairAction(RepairKind.REWRITE_DOCUMENT, "b"),
            RepairAction(RepairKind.REPLAY_ASPECT, "c"),
            RepairAction(RepairKind.FIX_ROW, "d"),
        ]
    )
    assert MODES.elsewhere(Mode.REPLAY, repairs) == {"rewrite_document": 2, "fix_row": 1}
    assert MODES.elsewhere("reindex", repairs) == {"fix_row": 1}
    assert MODES.kinds(Mode.PLAN) == frozenset()


def test_the_renderer_dispatches_on_the_kind_and_refuses_a_second_function() -> None:
    tools = Renderer("toolctl")

    @tools.dispatch_for(RepairKind.REWRITE_DOCUMENT, RepairKind.DELETE_DOCUMENT)
    def _doc(action: RepairAction, *, group: str = "", **_: object) -> str:
        return f"toolctl {action.kind.value} {action.urn} {group}"

    assert (
        tools.render(RepairAction(RepairKind.DELETE_DOCUMENT, "x"), group="g")
        == "toolctl delete_document x g"
    )
    with pytest.raises(ValueError, match="rendered twice"):
        tools.dispatch_for(RepairKind.DELETE_DOCUMENT)(_doc)
    # an action no function was registered for is said, not raised: the report still renders
    said = tools.render(RepairAction(RepairKind.REPLAY_WINDOW))
    assert "replay_window" in said and "toolctl have no command" in said


@pytest.mark.parametrize("name", platforms.names())
def test_each_platform_renders_every_action_it_plans(name: str) -> None:
    platform = platforms.get(name)
    written = frozenset().union(*platform.executors.modes.values())
    # every kind a mode writes, and a row to fix, has the platform's own command
    assert written | {RepairKind.FIX_ROW} <= platform.renderer.kinds
    # a replay mode exactly when the platform declares the capability (one truth, two readers)
    assert bool(platform.executors.kinds(Mode.REPLAY)) == platform.supports(Capability.REPLAY)
    assert platform.executors.kinds(Mode.REINDEX), "every platform repairs by reindexing from its truth"
