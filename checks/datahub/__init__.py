"""DataHub's checks: one module per divergence, listed explicitly in BUILTIN_CHECKS (the scan
runs them over each entity's rows, its document, system metadata and edges)."""

from __future__ import annotations

from auditor.checks.datahub.base import Check, CheckContext
from auditor.checks.datahub.behind import StoreBehind
from auditor.checks.datahub.edges import Edges
from auditor.checks.datahub.fields import SoftDelete, StaleFields
from auditor.checks.datahub.malformed import MalformedAspect
from auditor.checks.datahub.presence import MissingDocument, OrphanDocument
from auditor.checks.datahub.system_metadata import StaleSystemMetadata

BUILTIN_CHECKS: tuple[type[Check], ...] = (
    MalformedAspect,
    MissingDocument,
    OrphanDocument,
    StoreBehind,
    StaleFields,
    SoftDelete,
    StaleSystemMetadata,
    Edges,
)

__all__ = ["BUILTIN_CHECKS", "Check", "CheckContext"]
