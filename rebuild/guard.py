"""What every platform's repair runs under: one lock per target and one checkpoint per scope.

The lock: one repair at a time per target (a store + an index prefix or cluster alias + a
topic; a whole-target repair and its shards exclude each other); a lock a killed run left on
this host is said to be stale and broken only with --break-stale-lock (exit 6 otherwise). The
checkpoint: where the repair is (which part of its walk, the last key whose batch was
confirmed, its counts and failures), saved atomically after each confirmed batch, read back
with --resume, removed once the repair is done and verified clean. The platform supplies what
to write; this module owns when the repair may run and where it starts again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.backends.journal import active
from auditor.backends.protocols import Search
from auditor.core.model import RepairKind
from auditor.core.plan import RebuildOutcome, RepairPlan
from auditor.core.sanity import refuse, refuse_deletion
from auditor.rebuild.checkpoint import Checkpoint, Lock, scope_fingerprint, shard_suffix, target_key
from auditor.rebuild.request import RebuildRequest


@dataclass
class Guarded:
    """A repair holding its target's lock: its checkpoint and where it is saved."""

    checkpoint: Checkpoint
    path: Path

    def save(self) -> None:
        self.checkpoint.save(self.path)

    def past(self, part: int, key: str) -> bool:
        """Whether a resumed walk already confirmed `key` of `part` (walked in byte order)."""
        c = self.checkpoint
        return part < c.part or (
            part == c.part and c.last_urn is not None and key.encode() <= c.last_urn.encode()
        )

    def confirm(self, part: int, key: str) -> None:
        """The batch ending at `key` of `part` is written: a resumed run starts after it."""
        c = self.checkpoint
        if part != c.part:
            c.part, c.done = part, False
        c.last_urn = key
        self.save()

    def finish(self, outcome: RebuildOutcome) -> None:
        """Done: the checkpoint goes once nothing is left to resume (verified clean, no failure)."""
        if not outcome.still_wrong and not outcome.failed:
            self.path.unlink(missing_ok=True)
            outcome.checkpoint = None


@contextmanager
def locked(request: RebuildRequest, store: str, prefix: str, topic: str = "") -> Iterator[Lock]:
    """The target's lock held for the block (`store`: its description, never a secret)."""
    lock = Lock(request.state_dir, target_key(store, prefix, topic), request.shard)
    lock.acquire(request.break_stale_lock)
    if (journal := active()) is not None:  # its undo takes the same lock (rebuild/undo.py)
        journal.locked(str(request.state_dir), lock.key)
    try:
        yield lock
    finally:
        lock.release()


@contextmanager
def guarded(
    request: RebuildRequest, outcome: RebuildOutcome, scope: Any, store: str, prefix: str, topic: str = ""
) -> Iterator[Guarded]:
    """The lock held and the checkpoint of `scope` (what the repair covers, as JSON) open: the
    one saved by an earlier run with --resume, a fresh one otherwise."""
    with locked(request, store, prefix, topic):
        walked = scope_fingerprint(request.mode, scope)
        path = request.state_dir / f"rebuild-{walked}{shard_suffix(request.shard)}.json"
        resumed = Checkpoint.load(path) if request.resume else None
        checkpoint = resumed or Checkpoint(request.mode, path.stem)
        outcome.checkpoint = str(path)
        yield Guarded(checkpoint, path)


def planned_deletes(repairs: RepairPlan) -> dict[str, int]:
    """The entity documents a plan deletes (its orphans), by index."""
    out: dict[str, int] = {}
    for action in repairs.of(RepairKind.DELETE_DOCUMENT):
        if action.index:
            out[action.index] = out.get(action.index, 0) + 1
    return out


def count_deletes(indices: Iterable[str]) -> dict[str, int]:
    """One deletion per index named (an orphan's entity document), by index."""
    out: dict[str, int] = {}
    for index in indices:
        out[index] = out.get(index, 0) + 1
    return out


def index_count(search: Search) -> Callable[[str], int]:
    """An index's (or an alias's) own document count, as the cluster counts it."""
    return lambda index: search.indices(index).get(index, 0)


def refuse_mass_delete(
    request: RebuildRequest,
    outcome: RebuildOutcome,
    deletes: dict[str, int],
    held: Callable[[str], int],
    store: str,
) -> None:
    """Sanity before deletion, on every platform (core/sanity.py): a repair that would delete
    more than a small share of an index (counted against the index's own count, `held`) is
    refused before it writes anything, unless `--allow-delete N` covers it; a dry run says it
    would be."""
    if not deletes:
        return
    counts = {index: held(index) for index in deletes}
    if outcome.applied:
        refuse(deletes, counts, request.allow_delete, store)
    elif why := refuse_deletion(deletes, counts, request.allow_delete):
        total = sum(deletes.values())
        outcome.warnings.append(
            f"{why}: with --apply it is refused unless given --allow-delete {total} (is {store} "
            "the right database?)"
        )
