"""The staged-index engine's sequence (pure logic; both platforms' full rebuilds against the real
servers: tests/scenarios/test_rebuild.py, tests/integration/test_om_profile.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from auditor.backends.protocols import Capability
from auditor.errors import ConfigError, DeletionRefused
from auditor.rebuild.staged import ROUNDS, NotPromoted, promote


class Writer:
    """Records what the engine asks of the search cluster."""

    description = "a recording writer"
    capabilities = frozenset(Capability)

    def __init__(self, counts: dict[str, int] | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.counts = counts or {}  # index -> documents (none given: the fresh one as full as the old)

    def documents(self, *indices: str) -> int:
        return sum(self.counts.get(i, 10) for i in indices)

    def create_like(self, source: str, name: str) -> dict[str, Any]:
        self.calls.append(("create_like", (source, name)))
        return {"number_of_replicas": "2", "refresh_interval": "5s"}

    def put_settings(self, index: str, settings: dict[str, Any]) -> None:
        self.calls.append(("put_settings", (index, settings)))

    def refresh(self, *indices: str) -> None:
        self.calls.append(("refresh", indices))

    def swap(self, actions: list[dict[str, Any]]) -> None:
        self.calls.append(("swap", actions))

    def delete_index(self, index: str) -> None:
        self.calls.append(("delete_index", index))


class Stage:
    live = "things"

    def __init__(self, wrong: list[list[str]], keep: bool = False) -> None:
        self.wrong, self.keep_unpromoted = wrong, keep
        self.loads: list[datetime | None] = []
        self.rewrites: list[list[str]] = []
        self.checked = False

    def fresh_name(self) -> str:
        return "things_new"

    def locate(self, writer: Any) -> tuple[list[str], bool]:
        return ["things_old"], True

    def load(self, index: str, since: datetime | None = None) -> int:
        self.loads.append(since)
        return 10 if since is None else 1

    def still_wrong(self, index: str, before: datetime) -> list[str]:
        return self.wrong.pop(0) if self.wrong else []

    def rewrite(self, index: str, ids: list[str]) -> None:
        self.rewrites.append(ids)

    def check(self, index: str) -> None:
        self.checked = True

    def swap_actions(self, fresh: str, old: list[str], is_alias: bool) -> list[dict[str, Any]]:
        return [{"add": {"index": fresh, "alias": self.live}}]


def test_load_catch_up_verify_swap_then_catch_up_again() -> None:
    writer, stage = Writer(), Stage([["u1"], []])
    done = promote(writer, stage)  # type: ignore[arg-type]
    assert (done.fresh, done.old, done.loaded, done.caught_up, done.rounds) == (
        "things_new",
        ["things_old"],
        10,
        2,
        2,
    )
    # the whole type, then since the start, then (after the swap) since the mark
    assert stage.loads[0] is None and stage.loads[1] is not None and stage.loads[2] is not None
    assert stage.loads[1] < stage.loads[2]
    assert stage.rewrites == [["u1"]] and stage.checked
    names = [name for name, _ in writer.calls]
    assert names.index("put_settings") < names.index("swap")
    assert (
        "put_settings",
        ("things_new", {"number_of_replicas": "2", "refresh_interval": "5s"}),
    ) in writer.calls
    assert "delete_index" not in names


@pytest.mark.parametrize("keep", [False, True])
def test_never_promoted_while_wrong_and_the_fresh_index_dropped_or_kept(keep: bool) -> None:
    writer, stage = Writer(), Stage([["u1"]] * ROUNDS, keep=keep)
    with pytest.raises(NotPromoted, match=f"1 entities still differ from the truth after {ROUNDS} checks"):
        promote(writer, stage)  # type: ignore[arg-type]
    names = [name for name, _ in writer.calls]
    assert "swap" not in names and not stage.checked
    assert len(stage.rewrites) == ROUNDS - 1  # checked after every rewrite, the last one too
    assert (("delete_index", "things_new") in writer.calls) is (not keep)


def test_a_writer_that_does_not_declare_aliases_is_refused_before_anything_is_created() -> None:
    writer, stage = Writer(), Stage([])
    writer.capabilities = frozenset({Capability.BULK_WRITE})  # type: ignore[misc]
    with pytest.raises(ConfigError, match="a recording writer cannot alias: a staged reindex"):
        promote(writer, stage)  # type: ignore[arg-type]
    assert writer.calls == []


@pytest.mark.parametrize("keep", [False, True])
def test_a_fresh_index_far_smaller_than_the_live_one_is_never_swapped_in_unasked(keep: bool) -> None:
    """Loaded from an empty (or the wrong) database, the fresh index holds nearly nothing and its
    verification against those rows would pass: the swap would take the type out of search."""
    writer, stage = Writer({"things_old": 1000, "things_new": 3}), Stage([], keep=keep)
    with pytest.raises(DeletionRefused, match="997 of the 1000"):
        promote(writer, stage)  # type: ignore[arg-type]
    names = [name for name, _ in writer.calls]
    assert "swap" not in names and ("delete_index", "things_new") in writer.calls  # nothing to look at
    assert stage.wrong == [] and not stage.checked  # refused before the verification
    writer = Writer({"things_old": 1000, "things_new": 960})  # 40 fewer: under 5% of the index
    assert promote(writer, Stage([]), None).rounds == 1  # type: ignore[arg-type]
    writer = Writer({"things_old": 1000, "things_new": 3})
    assert promote(writer, Stage([]), 997).rounds == 1  # type: ignore[arg-type]  # the number given
