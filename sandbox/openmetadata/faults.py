"""The ways OpenMetadata's search drifts from its database, as knobs on the sandbox's writes.

Each is an incident users reported (issue numbers in open-metadata/OpenMetadata):
  SEARCH_WRITE_FAILS         the search write raises; logged, the DB commit stands (all of them)
  SEARCH_WRITE_FAILS_QUEUED  the same, and the failure is queued in search_index_retry_queue
                             (newer OM: SearchIndexRetryQueue)
  STALE_UPDATE               an owners/description/tags update never reaches search (12429, 17747)
  SOFT_DELETE_NOT_PROPAGATED the soft delete is committed, the doc keeps deleted=false
  CHILDREN_NOT_SOFT_DELETED  a schema's/database's/service's soft delete reaches its own doc
                             but not its children's docs; their rows say deleted (PR 12790, 14451)
  ORPHAN_DOC                 a hard delete removes the rows and leaves the docs (5488, 5199)
Restoring an index from an older snapshot is `OmServer.snapshot()` + `restore_snapshot()`.
"""

from __future__ import annotations

import enum


class Fault(enum.Enum):
    """A fault injected into one write of the OM-like server."""

    SEARCH_WRITE_FAILS = "search_write_fails"
    SEARCH_WRITE_FAILS_QUEUED = "search_write_fails_queued"
    STALE_UPDATE = "stale_update"
    SOFT_DELETE_NOT_PROPAGATED = "soft_delete_not_propagated"
    CHILDREN_NOT_SOFT_DELETED = "children_not_soft_deleted"
    ORPHAN_DOC = "orphan_doc"
    # a PATCH of inherited fields (domains) whose propagation to the heirs' docs is lost
    INHERITED_NOT_PROPAGATED = "inherited_not_propagated"


class SearchWriteError(RuntimeError):
    """A search write the sandbox made fail on purpose (Fault.SEARCH_WRITE_FAILS*)."""


# which faults each operation accepts
ACCEPTED = {
    "create": {Fault.SEARCH_WRITE_FAILS, Fault.SEARCH_WRITE_FAILS_QUEUED},
    "update": {
        Fault.SEARCH_WRITE_FAILS,
        Fault.SEARCH_WRITE_FAILS_QUEUED,
        Fault.STALE_UPDATE,
        Fault.INHERITED_NOT_PROPAGATED,
    },
    # a domain's "add assets": relationships only, then the assets' docs
    "add_assets": {Fault.SEARCH_WRITE_FAILS, Fault.STALE_UPDATE},
    "relate": {Fault.SEARCH_WRITE_FAILS, Fault.STALE_UPDATE},  # lineage, follow, vote
    "soft_delete": {
        Fault.SEARCH_WRITE_FAILS,
        Fault.SEARCH_WRITE_FAILS_QUEUED,
        Fault.SOFT_DELETE_NOT_PROPAGATED,
        Fault.CHILDREN_NOT_SOFT_DELETED,
    },
    "restore": {Fault.SEARCH_WRITE_FAILS, Fault.SEARCH_WRITE_FAILS_QUEUED},
    "hard_delete": {Fault.SEARCH_WRITE_FAILS, Fault.SEARCH_WRITE_FAILS_QUEUED, Fault.ORPHAN_DOC},
}


def check(operation: str, fault: Fault | None) -> None:
    """Refuse a fault the operation cannot have (a test asking for it would test nothing)."""
    if fault is not None and fault not in ACCEPTED[operation]:
        allowed = ", ".join(sorted(f.name for f in ACCEPTED[operation]))
        raise ValueError(f"{operation} does not take fault {fault.name} (it takes {allowed})")
