"""DataHub's repair modes: which mode of `auditor rebuild` writes which kind of action.

A replay re-applies through DataHub's own consumer (a RESTATE MCL per row); a reindex writes from
the rows and can also do whatever a replay does, and more (whole documents, orphan deletes)."""

from __future__ import annotations

from auditor.core.model import RepairKind
from auditor.core.repairs import Executors, Mode

REPLAYED = frozenset(
    {
        RepairKind.REPLAY_ASPECT,
        RepairKind.REPLAY_WINDOW,
        RepairKind.REWRITE_SYSTEM_METADATA,
        RepairKind.REWRITE_EDGES,
    }
)
EXECUTORS = Executors(
    {
        Mode.REPLAY: REPLAYED,
        Mode.REINDEX: REPLAYED | {RepairKind.REWRITE_DOCUMENT, RepairKind.DELETE_DOCUMENT},
    }
)
