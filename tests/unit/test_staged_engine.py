"""The staged-index engine's sequence (pure logic; both platforms' full rebuilds against the real
servers: tests/scenarios/test_rebuild.py, tests/integration/test_om_profile.py)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
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
        self.existing: set[str] = set()  # concrete indices (none is an alias here)

    def documents(self, *indices: str) -> int:
        return sum(self.counts.get(i, 10) for i in indices)

    def concrete(self, name: str) -> tuple[list[str], bool]:
        return ([name] if name in self.existing else []), False

    def create_like(self, source: str, name: str) -> dict[str, Any]:
        self.calls.append(("create_like", (source, name)))
        return {"number_of_replicas": "2", "refresh_interval": "5s"}

    def put_settings(self, index: str, settings: dict[str, Any]) -> None:
        self.calls.append(("put_settings", (index, settings)))

    def refresh(self, *indices: str) -> None:
        self.calls.append(("refresh", indices))

    def swap(self, actions: list[dict[str, Any]], kept: dict[str, str] | None = None) -> None:
        self.calls.append(("swap", actions))

    def delete_index(self, index: str) -> None:
        self.calls.append(("delete_index", index))

    def settled(self, index: str) -> None:
        self.calls.append(("settled", index))


class Stage:
    live = "things"

    def __init__(self, wrong: list[list[str]]) -> None:
        self.wrong = wrong
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
    # where the served index stands is recorded last, once caught up (its undo compares with it)
    assert names[-2:] == ["refresh", "settled"] and writer.calls[-1] == ("settled", done.fresh)
    assert (
        "put_settings",
        ("things_new", {"number_of_replicas": "2", "refresh_interval": "5s"}),
    ) in writer.calls
    assert "delete_index" not in names


def test_never_promoted_while_wrong_the_fresh_index_deleted_and_no_run_again_that_cannot_help() -> None:
    """The same entity wrong after every rewrite: another run would write it the same way, so the
    message says so (and how to see why) instead of "run again"; the staged index is deleted."""
    writer, stage = Writer(), Stage([["u1"]] * ROUNDS)
    with pytest.raises(
        NotPromoted, match=f"1 entities still differ from the truth after {ROUNDS} checks"
    ) as e:
        promote(writer, stage)  # type: ignore[arg-type]
    names = [name for name, _ in writer.calls]
    assert "swap" not in names and not stage.checked
    assert len(stage.rewrites) == ROUNDS - 1  # checked after every rewrite, the last one too
    assert ("delete_index", "things_new") in writer.calls
    assert "run again" not in str(e.value) and "the same ones after every rewrite" in str(e.value)
    assert "auditor triage u1" in (e.value.hint or "")


def test_entities_changing_under_the_checks_are_worth_a_run_again() -> None:
    writer, stage = Writer(), Stage([["u1"], ["u2"], ["u3"]])
    with pytest.raises(NotPromoted, match="run again$"):
        promote(writer, stage)  # type: ignore[arg-type]
    assert ("delete_index", "things_new") in writer.calls


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_whatever_stops_a_load_the_staged_index_is_deleted(stop: type[BaseException]) -> None:
    """Never a whole copy of the index left behind per attempt (DataHub's kept it "to look at")."""
    writer, stage = Writer(), Stage([])

    def load(index: str, since: datetime | None = None) -> int:
        raise stop("stopped mid-load")

    stage.load = load  # type: ignore[method-assign]
    with pytest.raises(stop):
        promote(writer, stage)  # type: ignore[arg-type]
    assert ("delete_index", "things_new") in writer.calls


def test_a_writer_that_does_not_declare_aliases_is_refused_before_anything_is_created() -> None:
    writer, stage = Writer(), Stage([])
    writer.capabilities = frozenset({Capability.BULK_WRITE})  # type: ignore[misc]
    with pytest.raises(ConfigError, match="a recording writer cannot alias: a staged reindex"):
        promote(writer, stage)  # type: ignore[arg-type]
    assert writer.calls == []


def test_a_fresh_index_far_smaller_than_the_live_one_is_never_swapped_in_unasked() -> None:
    """Loaded from an empty (or the wrong) database, the fresh index holds nearly nothing and its
    verification against those rows would pass: the swap would take the type out of search."""
    writer, stage = Writer({"things_old": 1000, "things_new": 3}), Stage([])
    with pytest.raises(DeletionRefused, match="997 of the 1000"):
        promote(writer, stage)  # type: ignore[arg-type]
    names = [name for name, _ in writer.calls]
    assert "swap" not in names and ("delete_index", "things_new") in writer.calls
    assert stage.wrong == [] and not stage.checked  # refused before the verification
    writer = Writer({"things_old": 1000, "things_new": 960})  # 40 fewer: under 5% of the index
    assert promote(writer, Stage([]), allow_delete=None).rounds == 1  # type: ignore[arg-type]
    writer = Writer({"things_old": 1000, "things_new": 3})
    assert promote(writer, Stage([]), allow_delete=997).rounds == 1  # type: ignore[arg-type]  # the number given


def test_a_staged_index_a_killed_run_left_is_deleted_by_the_next_run_and_a_served_one_kept(
    tmp_path: Path,
) -> None:
    """A SIGKILL gives no chance to delete: the ledger written before the index was created names
    it, and the next run deletes it before making its own. One a run killed after its swap left
    is the one served: kept. A finished or refused run leaves no ledger."""
    ledger = tmp_path / "staged.json"
    ledger.write_text(json.dumps({"staged": "things_killed"}))
    writer, stage = Writer(), Stage([])
    writer.existing = {"things_killed"}
    done = promote(writer, stage, ledger)  # type: ignore[arg-type]
    assert done.cleared == "things_killed" and ("delete_index", "things_killed") in writer.calls
    names = [name for name, _ in writer.calls]
    assert names.index("delete_index") < names.index("create_like") and not ledger.exists()
    ledger.write_text(json.dumps({"staged": "things_old"}))  # killed after its swap: serving now
    writer = Writer()
    writer.existing = {"things_old"}
    assert promote(writer, Stage([]), ledger).cleared is None  # type: ignore[arg-type]
    assert "delete_index" not in [name for name, _ in writer.calls] and not ledger.exists()
    with pytest.raises(NotPromoted):
        promote(Writer(), Stage([["u1"]] * ROUNDS), ledger)  # type: ignore[arg-type]
    assert not ledger.exists()


def test_the_copy_of_a_concrete_index_a_killed_run_left_is_deleted_only_while_the_index_is_concrete(
    tmp_path: Path,
) -> None:
    """A run killed before its swap leaves its copy of the concrete live index named in the ledger
    beside its staged index: the next run deletes both while the live name is still that concrete
    index. Once the live name is an alias (the run was killed after its swap), the copy is what the
    swap's undo moves the name onto: kept."""
    from auditor.rebuild.staged import _clear_left

    ledger = tmp_path / "staged.json"
    left = {"staged": "things_1", "kept": "things_kept_1"}
    for is_alias, deleted in ((False, ["things_1", "things_kept_1"]), (True, ["things_1"])):
        ledger.write_text(json.dumps(left))
        writer = Writer()
        writer.existing = {"things", "things_1", "things_kept_1"}
        cleared = _clear_left(writer, ledger, ["things"], is_alias)  # type: ignore[arg-type]
        assert cleared == ", ".join(deleted)
        assert [i for name, i in writer.calls if name == "delete_index"] == deleted
