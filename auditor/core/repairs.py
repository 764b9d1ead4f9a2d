"""Repairs as data: which mode of `auditor rebuild` writes which action, and how an action reads.

The plan (`core.plan`) turns judged findings into typed actions (`RepairAction`, its type is its
`kind`). Two registries dispatch on that type, one pair per platform:

- `Executors`: per repair mode (`replay`, `reindex`), the kinds of action that mode writes, in
  the order the platform prefers its modes. The rebuild pipeline reads it (what a run writes and
  what it leaves to another mode), the face reads it (a mode with no executor is refused) and the
  reports read it (which `auditor rebuild` command repairs a finding).
- `Renderer`: one function per kind of action that spells the action with the platform's own
  tools (alembic's `renderers.dispatch_for`: registered per operation type, looked up by it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from auditor.core.model import RepairKind
from auditor.core.plan import RepairAction, RepairPlan


class Mode(StrEnum):
    """`auditor rebuild <mode>`: plan only, or write (replay through the platform, or reindex)."""

    PLAN = "plan"
    REPLAY = "replay"
    REINDEX = "reindex"


@dataclass(frozen=True)
class Executors:
    """What each of a platform's repair modes writes, in its order of preference."""

    modes: Mapping[Mode, frozenset[RepairKind]]

    def kinds(self, mode: Mode | str) -> frozenset[RepairKind]:
        """The actions `mode` writes (a plan writes nothing; a mode the platform lacks neither)."""
        return self.modes.get(Mode(mode), frozenset())

    def mode_for(self, kind: RepairKind) -> Mode | None:
        """The preferred mode that writes `kind` (None: no mode writes it: a person does)."""
        return next((mode for mode, kinds in self.modes.items() if kind in kinds), None)

    def mode_covering(self, kinds: Iterable[RepairKind]) -> Mode | None:
        """The preferred mode that writes every one of `kinds` that any mode writes (None: none
        of them is written by a repair)."""
        writes = {k for k in kinds if self.mode_for(k) is not None}
        if not writes:
            return None
        return next((mode for mode, able in self.modes.items() if writes <= able), None)

    def elsewhere(self, mode: Mode | str, repairs: RepairPlan) -> dict[str, int]:
        """Action kind -> how many of the plan's actions `mode` leaves to another mode (or to a
        person)."""
        able = self.kinds(mode)
        out: dict[str, int] = {}
        for action in repairs.actions:
            if action.kind not in able:
                out[action.kind.value] = out.get(action.kind.value, 0) + 1
        return out


Render = Callable[..., str]


class Renderer:
    """A platform's own tools, one function per kind of action (`dispatch_for`), looked up by the
    action's kind. The functions take the action and the report's context (`group`, `until`)."""

    def __init__(self, tools: str) -> None:
        self.tools = tools  # "DataHub's own tools"
        self._by_kind: dict[RepairKind, Render] = {}

    def dispatch_for(self, *kinds: RepairKind) -> Callable[[Render], Render]:
        def register(fn: Render) -> Render:
            for kind in kinds:
                if kind in self._by_kind:
                    raise ValueError(f"{self.tools}: {kind.value} is rendered twice")
                self._by_kind[kind] = fn
            return fn

        return register

    def render(self, action: RepairAction, **context: Any) -> str:
        fn = self._by_kind.get(action.kind)
        if fn is None:  # said, not raised: a report with one unexpected action still renders
            return f"{action.kind.value}: {self.tools} have no command for it: see the findings"
        return fn(action, **context)

    @property
    def kinds(self) -> frozenset[RepairKind]:
        return frozenset(self._by_kind)
