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

What differs between platforms is a `Stage`: how the fresh index is named, how entities are
written and checked, which aliases move and what happens to the old index.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from auditor.backends.index_writer import IndexWriter
from auditor.backends.protocols import Capability, require
from auditor.core.sanity import refuse
from auditor.errors import AuditorError, DeletionRefused
from auditor.exit_codes import ExitCode

log = logging.getLogger(__name__)
ROUNDS = 3
SKEW = timedelta(seconds=5)  # a catch-up starts this much before the instant it catches up from


class NotPromoted(AuditorError):
    """The fresh index was not swapped in (it is kept or dropped, as the platform does)."""

    exit_code = ExitCode.INCOMPLETE


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


class Stage(Protocol):
    """One platform's steps for one entity type's staged index."""

    live: str  # the name readers use (an alias, or a concrete index the first swap replaces)
    keep_unpromoted: bool  # an index that was not swapped in is kept (to look at) or dropped

    def fresh_name(self) -> str: ...

    def locate(self, writer: IndexWriter) -> tuple[list[str], bool]:
        """The indices the live name serves, and whether it is an alias; refuse (raise) what
        this platform does not replace (no live index: nothing to take the mappings from)."""

    def load(self, index: str, since: datetime | None = None) -> int:
        """Write every entity of the type (written since `since`, when given) into `index`."""

    def still_wrong(self, index: str, before: datetime) -> list[str]:
        """What `index` still gets wrong, not counting entities written since `before`."""

    def rewrite(self, index: str, ids: list[str]) -> None: ...

    def check(self, index: str) -> None:
        """A last check before the swap (raise NotPromoted to refuse it)."""

    def swap_actions(self, fresh: str, old: list[str], is_alias: bool) -> list[dict[str, Any]]: ...


def promote(writer: IndexWriter, stage: Stage, allow_delete: int | None = None) -> Staged:
    """Create, load, catch up, verify, swap, catch up again (module docstring). `allow_delete`:
    how many documents fewer than the live index the fresh one may hold (`--allow-delete N`;
    None: the limit every repair's deletions have, core/sanity.py)."""
    for needed in (Capability.BULK_WRITE, Capability.ALIAS):
        require(writer, needed, "a staged reindex (--full)")
    old, is_alias = stage.locate(writer)
    out = Staged(stage.live, stage.fresh_name(), old, is_alias)
    settings = writer.create_like(old[0], out.fresh)
    started = datetime.now(UTC)
    try:
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
    except BaseException as exc:
        if not stage.keep_unpromoted or isinstance(exc, DeletionRefused):  # nothing there to look at
            _drop(writer, out.fresh)
        raise
    writer.swap(stage.swap_actions(out.fresh, old, is_alias))
    # the writes since the mark went to the old index: again, into the one now served
    out.caught_up += stage.load(out.fresh, since=mark - SKEW)
    writer.refresh(out.fresh)
    return out


def _verify(writer: IndexWriter, stage: Stage, fresh: str, before: datetime) -> int:
    """Check, write again what differs, check again: the number of checks it took."""
    for round_no in range(1, ROUNDS + 1):
        wrong = stage.still_wrong(fresh, before)
        if not wrong:
            return round_no
        if round_no == ROUNDS:
            raise NotPromoted(
                f"{fresh}: {len(wrong)} entities still differ from the truth after {ROUNDS} checks "
                f"(e.g. {wrong[0]}): not promoted; run again"
            )
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


def _drop(writer: IndexWriter, index: str) -> None:
    try:
        writer.delete_index(index)
    except AuditorError:  # best effort: the failure that brought us here is what matters
        log.warning("could not delete the unswapped index %s", index, exc_info=True)
