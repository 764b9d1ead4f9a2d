"""The staged-index engine: a fresh index beside the live one, loaded, verified, swapped in whole.

Both platforms' full rebuilds (`rebuild reindex --full`) are this one sequence, per entity type:

1. create the fresh index with the live one's mappings and settings (no replicas, no refresh
   while loading: `IndexWriter.create_like`), note the time;
2. load every entity of the type from the truth, then restore replicas and refresh interval;
3. note the mark, catch up on what was written since the start (the platform keeps writing the
   live index meanwhile);
4. verify with the scan's own steps: what still differs (written before the mark) is written
   again and checked again, up to `ROUNDS` checks; never promoted while wrong;
5. swap in one `_aliases` request (every reader moves at once);
6. catch up once more on what was written since the mark (it went to the old index).

A live name that is a concrete index is copied first (rebuild/kept.py: `<live>_kept-<ms>`,
before the fresh index is created, so a cluster without room for it refuses before the load),
the copy brought up to date just before the swap, and the entities of step 6 written into it
too: the swap's undo moves the live name onto the copy. No copy, no swap.

A row no index write can fix (malformed: reported `invalid`) never blocks the promotion: the
stage leaves it out of what is still wrong, carries its old document over and reports it. A
fresh index that is not swapped in is deleted, whatever stopped it (never a whole copy of the
index left behind per attempt); one a killed run could not delete is named in a ledger file
beside the state, written before the index is created, and the next run deletes it first.

One rule for the live name on both platforms, as `--help` says: an alias moves and the old
index is kept (`old_kept` says how to drop it or roll back); a concrete index can only be
replaced (removed in the swap, its copy kept), which needs `--replace-concrete-index`.

What differs between platforms is a `Stage`: how the fresh index is named, how entities are
written and checked, and which aliases move.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from auditor.backends.index_writer import IndexWriter
from auditor.backends.protocols import Capability, require
from auditor.core.sanity import refuse
from auditor.errors import AuditorError
from auditor.exit_codes import ExitCode
from auditor.rebuild.kept import KeptCopy, kept_name

log = logging.getLogger(__name__)
ROUNDS = 3
SKEW = timedelta(seconds=5)  # a catch-up starts this much before the instant it catches up from


class NotPromoted(AuditorError):
    """The fresh index was not swapped in (it was deleted)."""

    exit_code = ExitCode.INCOMPLETE


REPLACE_CONCRETE_HINT = (
    "rerun with --replace-concrete-index (it is deleted in the same _aliases request that adds the "
    "alias, as DataHub's BuildIndices and OpenMetadata's recreateIndex do, a copy of it kept for the "
    "undo: the cluster needs room for it)"
)


def refuse_concrete(live: str) -> NotPromoted:
    """A live name that is a concrete index, not to be replaced unless asked (nothing created yet)."""
    return NotPromoted(
        f"{live} is a concrete index, not an alias: the first swap must remove it", hint=REPLACE_CONCRETE_HINT
    )


def old_kept(old: list[str], live: str) -> str:
    """What the report says of the old index an alias swap kept: how to drop it, or roll back."""
    drop = f'curl -X DELETE "$SEARCH_URL"/{old[0]}'
    return (
        f"the old index {', '.join(old)} is kept: drop it with {drop}, "
        f"or roll back by moving the alias {live} (and the aliases moved with it) back to it"
    )


@dataclass
class Staged:
    """What the engine did for one entity type."""

    live: str
    fresh: str
    old: list[str] = field(default_factory=list)  # the indices the live name pointed at
    is_alias: bool = True
    loaded: int = 0
    caught_up: int = 0
    rounds: int = 0
    cleared: str | None = None  # the staged index a killed earlier attempt left, deleted first
    kept: str | None = None  # the copy of the concrete live index the swap removed


class Stage(Protocol):
    """One platform's steps for one entity type's staged index."""

    live: str  # the name readers use (an alias, or a concrete index the first swap replaces)

    def fresh_name(self) -> str: ...

    def locate(self, writer: IndexWriter) -> tuple[list[str], bool]:
        """The indices the live name serves, and whether it is an alias; refuse (raise) what
        this platform does not replace (no live index: nothing to take the mappings from; a
        concrete one without --replace-concrete-index: `refuse_concrete`)."""

    def load(self, index: str, since: datetime | None = None) -> int:
        """Write every entity of the type (written since `since`, when given) into `index`; a row
        no write can fix gets its old document, carried over from the live index."""

    def still_wrong(self, index: str, before: datetime) -> list[str]:
        """What `index` still gets wrong and a write can fix, not counting entities written since
        `before` (a malformed row is the stage's to report, never in this list)."""

    def rewrite(self, index: str, ids: list[str]) -> None: ...

    def check(self, index: str) -> None:
        """A last check before the swap (raise NotPromoted to refuse it)."""

    def swap_actions(self, fresh: str, old: list[str], is_alias: bool) -> list[dict[str, Any]]: ...


def promote(
    writer: IndexWriter, stage: Stage, ledger: Path | None = None, allow_delete: int | None = None
) -> Staged:
    """Create, load, catch up, verify, swap, catch up again (module docstring). `ledger`: the file
    naming the staged index while it exists unswapped (a killed run's is deleted by the next).
    `allow_delete`: how many documents fewer than the live index the fresh one may hold
    (`--allow-delete N`; None: the limit every repair's deletions have, core/sanity.py)."""
    for needed in (Capability.BULK_WRITE, Capability.ALIAS):
        require(writer, needed, "a staged reindex (--full)")
    old, is_alias = stage.locate(writer)
    out = Staged(stage.live, stage.fresh_name(), old, is_alias)
    out.cleared = _clear_left(writer, ledger, old, is_alias)
    copy = None if is_alias else KeptCopy(writer, stage.live, kept_name(stage.live, out.fresh))
    _record(ledger, out.fresh, copy.name if copy is not None else None)
    made: list[str] = []  # what to delete if the swap is not reached
    try:
        if copy is not None:  # first: a cluster without room for it refuses before the load
            made.append(copy.name)
            copy.start()
        made.append(out.fresh)
        settings = writer.create_like(old[0], out.fresh)
        started = datetime.now(UTC)
        out.loaded = stage.load(out.fresh)
        restored = {
            "number_of_replicas": settings.get("number_of_replicas", "1"),
            "refresh_interval": settings.get("refresh_interval", "1s"),
        }
        writer.put_settings(out.fresh, restored)
        mark = datetime.now(UTC)
        out.caught_up = stage.load(out.fresh, since=started - SKEW)
        writer.refresh(out.fresh)
        _refuse_shrink(writer, stage.live, old, out.fresh, allow_delete)  # before a verification passes it
        out.rounds = _verify(writer, stage, out.fresh, mark - SKEW)
        stage.check(out.fresh)
        if copy is not None:
            copy.settle()  # up to date: the swap follows at once (rebuild/kept.py)
    except BaseException:
        for index in made:  # whatever stopped it: never a copy of the index left per attempt
            _drop(writer, index)
        _record(ledger, None)
        raise
    kept = {stage.live: copy.name} if copy is not None else None
    writer.swap(stage.swap_actions(out.fresh, old, is_alias), kept=kept)
    _record(ledger, None)  # served now: no longer a staged index to clear
    out.kept = copy.name if copy is not None else None
    # the writes since the mark went to the old index: again, into the one now served
    out.caught_up += stage.load(out.fresh, since=mark - SKEW)
    if copy is not None:
        # and into the copy, the entities changed since its last pass: a write of theirs that
        # reached the concrete index after that pass went with it, and an undo must not serve
        # them older than the swap served them; the rows' current state is not older (kept.py)
        stage.load(copy.name, since=copy.since(SKEW))
        writer.refresh(copy.name)
    writer.refresh(out.fresh)
    writer.settled(out.fresh)  # its undo refuses to move the aliases back over later writes
    return out


def _verify(writer: IndexWriter, stage: Stage, fresh: str, before: datetime) -> int:
    """Check, write again what differs, check again: the number of checks it took."""
    every: set[str] | None = None  # the entities wrong at every check so far
    for round_no in range(1, ROUNDS + 1):
        wrong = stage.still_wrong(fresh, before)
        if not wrong:
            return round_no
        every = set(wrong) if every is None else every & set(wrong)
        if round_no == ROUNDS:
            raise _unverified(fresh, wrong, every)
        stage.rewrite(fresh, wrong)
        writer.refresh(fresh)
    return ROUNDS


def _refuse_shrink(writer: IndexWriter, live: str, old: list[str], fresh: str, allowed: int | None) -> None:
    """The swap takes out of search every document the fresh index does not hold: refused as
    deleting them would be (a store that is the wrong database, or restored without its rows,
    loads a fresh index of nearly nothing, and its verification finds it consistent)."""
    held = writer.documents(*old)
    lost = held - writer.documents(fresh)
    if lost > 0:
        refuse({live: lost}, {live: held}, allowed, "the store")


def _unverified(fresh: str, wrong: list[str], every: set[str]) -> NotPromoted:
    """Why the fresh index was not promoted, and whether running again can help: an entity
    written again after each check and still wrong at each (not written since: those are left
    to the catch-up) would be written the same way by another run."""
    said = f"{fresh}: {len(wrong)} entities still differ from the truth after {ROUNDS} checks"
    if set(wrong) <= every:
        example = sorted(every)[0]
        return NotPromoted(
            f"{said}, the same ones after every rewrite (e.g. {example}): not promoted (the staged "
            "index was deleted); running again would write them the same way",
            hint=f"`auditor triage {example}` shows what differs; a targeted `rebuild reindex --urn` "
            "reports it field by field",
        )
    return NotPromoted(
        f"{said} (e.g. {wrong[0]}), other ones at each check: not promoted (the staged index was "
        "deleted); run again",
        hint="entities were changing under the rebuild; a calmer moment lets it settle",
    )


def ledger_of(state_dir: Path, live: str) -> Path:
    """The file naming `live`'s staged index while it exists unswapped."""
    return state_dir / f"rebuild-full-{live}.staged.json"


def cleared_note(cleared: str) -> str:
    return (
        f"deleted {cleared} first: what an earlier --full that was stopped before its swap left (its staged "
        "index, and its copy of a concrete live index)"
    )


def _record(ledger: Path | None, staged: str | None, kept: str | None = None) -> None:
    """The ledger names `staged` and the copy of a concrete live index being `kept` (None: no
    staged index is left to clear)."""
    if ledger is None:
        return
    if staged is None:
        ledger.unlink(missing_ok=True)
        return
    ledger.parent.mkdir(parents=True, exist_ok=True)
    tmp = ledger.with_name(ledger.name + ".tmp")
    tmp.write_text(json.dumps({"staged": staged, "kept": kept}), encoding="utf-8")
    os.replace(tmp, ledger)


def _clear_left(writer: IndexWriter, ledger: Path | None, serving: list[str], is_alias: bool) -> str | None:
    """Delete the staged index a killed attempt named in the ledger: an index still there and not
    serving the live name (a run killed after its swap left the one now served: kept); and its
    copy of the concrete live index while that is still concrete (after the swap, the copy is
    what the swap's undo moves the live name onto: kept)."""
    if ledger is None or not ledger.exists():
        return None
    try:
        left = json.loads(ledger.read_text(encoding="utf-8"))
        staged, kept = left.get("staged"), left.get("kept")
    except (ValueError, AttributeError):
        staged = kept = None
    left_over = (staged, None if is_alias else kept)
    cleared = [i for i in left_over if isinstance(i, str) and _left_alone(writer, i, serving)]
    for index in cleared:
        writer.delete_index(index)
    return ", ".join(cleared) or None


def _left_alone(writer: IndexWriter, index: str, serving: list[str]) -> bool:
    """`index` is an index of its own, serving nothing."""
    if index in serving:
        return False
    found, is_alias = writer.concrete(index)
    return found == [index] and not is_alias


def _drop(writer: IndexWriter, index: str) -> None:
    try:
        writer.delete_index(index)
    except AuditorError:  # best effort: the failure that brought us here is what matters
        log.warning("could not delete the unswapped index %s", index, exc_info=True)
