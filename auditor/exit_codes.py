"""The command line's exit codes: one meaning each, whatever the command (docs/report.md).

Each command's `--help` lists the codes it can return (`auditor.cli.exits`), in these words
unless the command says its own case (a probe's 1 is "over the SLO"). Schedulers act on them:
0, 1, 3, 4 and 5 of `auditor scan` are a contract (docs/scheduling.md); a new meaning gets a
new code, never an old one.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    PERSISTENT = 1  # found something that will not go away by itself
    USAGE = 2
    INCOMPLETE = 3
    STALLED = 4
    OUTDATED = 5
    LOCKED = 6
    UNKNOWN_URN = 7
    STORE_SMALLER = 8  # the store empty or far smaller than the index: most documents orphaned
    STORE_BEHIND = 9  # documents hold later writes than their rows (a lagging replica, a restored database)
    UNDO_PARTIAL = 10  # an undo left documents as they are (written since by someone else)
    HEAL_REFUSED = 11  # a guard stopped a heal: nothing written, a person is paged

    @property
    def meaning(self) -> str:
        return MEANINGS[self]


MEANINGS = {
    ExitCode.OK: "success: nothing persistent found (in-flight findings allowed), a repair "
    "verified clean (or a dry run), a probe within its SLO",
    ExitCode.PERSISTENT: "a persistent problem: divergence or unreadable rows, a repair still "
    "wrong after verification, a probe over its SLO, a drill's FAIL, a burn-rate alert firing",
    ExitCode.USAGE: "usage or configuration error",
    ExitCode.INCOMPLETE: "could not complete: a backend down, failing or refusing the auditor's credentials",
    ExitCode.STALLED: "the MAE consumer is stalled: findings wait on it, none diverged (a replay: "
    "refused, or produced and not applied)",
    ExitCode.OUTDATED: "only documents an older release wrote (a reindex of their types is due)",
    ExitCode.LOCKED: "the target is locked by another repair: retry once it ends, or clear a "
    "stale lock with --break-stale-lock",
    ExitCode.UNKNOWN_URN: "unknown urn: neither the table nor the index knows the entity asked for",
    ExitCode.STORE_SMALLER: "the store is empty or far smaller than the index (most documents "
    "orphaned: the wrong database, or a restore that lost rows); a repair that would delete more "
    "than a small share of an index refused (nothing deleted without --allow-delete)",
    ExitCode.STORE_BEHIND: "the store is behind the index (a lagging replica, a restored database): "
    "documents hold later writes than their rows; none was repaired",
    ExitCode.UNDO_PARTIAL: "an undo left documents as they are: written since the repair by someone "
    "else (refused, each named with why) or failed to write back",
    ExitCode.HEAL_REFUSED: "a guard refused the heal (each named: a systemic divergence, the consumer, "
    "the platform's own reindex, the store, the release, the last heal's verification): nothing "
    "written, a person is paged",
}

# when several runs (a sharded repair's shards) give one code, the first of these
# found wins: a shard that could not complete or was refused outranks what the others found
_WORST_FIRST = (
    ExitCode.INCOMPLETE,
    ExitCode.USAGE,
    ExitCode.LOCKED,
    ExitCode.UNKNOWN_URN,
    ExitCode.STORE_SMALLER,
    ExitCode.HEAL_REFUSED,
    ExitCode.UNDO_PARTIAL,
    ExitCode.PERSISTENT,
    ExitCode.STALLED,
    ExitCode.STORE_BEHIND,
    ExitCode.OUTDATED,
    ExitCode.OK,
)


def worst(codes: Iterable[int], default: int = ExitCode.INCOMPLETE) -> int:
    """The code that speaks for all of `codes` (a code no release knows counts as the worst)."""
    rank = {int(code): i for i, code in enumerate(_WORST_FIRST)}
    return min(codes, key=lambda code: rank.get(code, -1), default=default)
