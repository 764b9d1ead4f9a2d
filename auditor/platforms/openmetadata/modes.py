"""OpenMetadata's repair modes: no change log to replay through, so one mode, a reindex that
writes (or deletes) documents from the rows."""

from __future__ import annotations

from auditor.core.model import RepairKind
from auditor.core.repairs import Executors, Mode

EXECUTORS = Executors({Mode.REINDEX: frozenset({RepairKind.REWRITE_DOCUMENT, RepairKind.DELETE_DOCUMENT})})
