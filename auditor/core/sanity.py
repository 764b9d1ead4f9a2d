"""Sanity before deletion: a store far smaller than its index is one systemic finding, and no
repair deletes more than a small share of an index unless it is given the number.

Pointed at the wrong database (a typo in its name, a restore that brought back no rows), every
document of the index looks like an orphan, and the re-check of the rows before each delete
cannot help: in that database the rows really are absent. So a scan that sees most documents
orphaned says the store is smaller as its headline (exit 8) rather than as thousands of
orphans, and every repair counts what it would delete against each index's own count first, as
Argo CD refuses to sync an application to nothing unless `allowEmpty` is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from auditor.errors import DeletionRefused

# a scan: the store is smaller than the index when the documents orphaned are at least this
# share of those read (of the whole scope, or of one index) and at least this many (or, the
# store holding no entity at all, more than one)
SMALLER_SHARE = 0.5
SMALLER_FLOOR = 10
# a repair deletes at most this share of an index's documents, or this many (a small catalog's
# few orphans), whichever is more, and never every document of an index holding more than one,
# unless it is given the number (`--allow-delete N`)
DELETE_SHARE = 0.05
DELETE_FLOOR = 10


@dataclass(frozen=True)
class StoreSmaller:
    """The systemic finding: the store holds far fewer entities than the indices hold documents."""

    rows: int  # entities the store holds in the scan's scope
    documents: int  # documents the indices hold in it
    orphans: int  # of those, the ones no row explains
    # the indices where most documents are orphans: index -> (orphans, documents)
    indices: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The headline, in one sentence a person on call reads first."""
        if self.rows == 0:
            held = f"the store holds no entity while the indices hold {self.documents} documents"
        else:
            share = f"{100 * self.orphans / max(self.documents, 1):.0f}%"
            held = (
                f"the store holds {self.rows} entities while the indices hold {self.documents} "
                f"documents, {self.orphans} of them ({share}) with no row"
            )
        return (
            f"{held}: is the store URL the right database (a typo in its name, a restore that "
            "brought back no rows)? The orphans are listed in the report; no repair deletes them "
            "without --allow-delete"
        )

    def plus(self, other: StoreSmaller | None) -> StoreSmaller:
        """Two shards' findings as one (a sharded scan's merge)."""
        if other is None:
            return self
        indices = dict(self.indices)
        for index, (n, of) in other.indices.items():
            was = indices.get(index, (0, 0))
            indices[index] = (was[0] + n, was[1] + of)
        return StoreSmaller(
            self.rows + other.rows, self.documents + other.documents, self.orphans + other.orphans, indices
        )

    @classmethod
    def of(cls, data: Mapping[str, object] | None) -> StoreSmaller | None:
        """Back from its JSON form (None: a report without it)."""
        if not data:
            return None
        raw = data.get("indices")
        indices = {str(k): (int(v[0]), int(v[1])) for k, v in (raw.items() if isinstance(raw, dict) else ())}
        return cls(int(str(data["rows"])), int(str(data["documents"])), int(str(data["orphans"])), indices)


def store_smaller(rows: int, documents: Mapping[str, int], orphans: Mapping[str, int]) -> StoreSmaller | None:
    """The systemic finding when the scan's orphaned documents (`orphans`: index -> count) are
    most of the documents it read (`documents`: index -> count), overall or in one index; None
    when the store explains the index (a few orphans are findings, each repaired on its own)."""
    total, lost = sum(documents.values()), sum(orphans.values())
    if lost == 0:
        return None
    hit = {
        index: (n, documents[index])
        for index, n in sorted(orphans.items())
        if documents.get(index) and _most(n, documents[index])
    }
    if (rows == 0 and lost > 1) or _most(lost, total) or hit:
        return StoreSmaller(rows, total, lost, hit)
    return None


def _most(orphans: int, documents: int) -> bool:
    return orphans >= SMALLER_FLOOR and orphans >= SMALLER_SHARE * documents


def deletion_limit(held: int) -> int:
    """How many of an index's `held` documents a repair deletes without being given the number."""
    return max(DELETE_FLOOR, int(DELETE_SHARE * held))


def refuse_deletion(deletes: Mapping[str, int], held: Mapping[str, int], allowed: int | None) -> str | None:
    """Why a repair that would delete `deletes` (index -> documents) of indices holding `held`
    (index -> their own count) must not, or None when it may. `allowed`: the number given
    (`--allow-delete N`: up to N documents in all, whatever their share)."""
    total = sum(deletes.values())
    if total == 0:
        return None
    if allowed is not None:
        if total <= allowed:
            return None
        return f"this repair would delete {total} documents, more than --allow-delete {allowed}"
    over = [
        (index, n, held.get(index, 0))
        for index, n in sorted(deletes.items())
        if n > deletion_limit(held.get(index, 0)) or 1 < held.get(index, 0) <= n
    ]
    whole = sum(held.get(index, 0) for index in deletes)
    if not over and total <= deletion_limit(whole):
        return None
    index, n, of = max(over, key=lambda o: o[1]) if over else ("its indices", total, whole)  # the most
    share = f"{100 * n / of:.0f}%" if of else "all"
    return (
        f"this repair would delete {total} documents, {n} of the {of} in {index} ({share}): more "
        f"than a repair deletes unasked ({DELETE_SHARE:.0%} of an index, or {DELETE_FLOOR}, and "
        "never a whole index)"
    )


def refuse(deletes: Mapping[str, int], held: Mapping[str, int], allowed: int | None, store: str) -> None:
    """DeletionRefused when `refuse_deletion` says why (nothing has been deleted yet)."""
    why = refuse_deletion(deletes, held, allowed)
    if why is not None:
        total = sum(deletes.values())
        raise DeletionRefused(
            f"{why}. Is {store} the right database (a typo in its name, a restore that brought "
            "back no rows)? Nothing was deleted",
            hint=f"check the store URL and scan again; if these documents are orphans indeed, "
            f"run again with --allow-delete {total}",
        )
