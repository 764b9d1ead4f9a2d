"""The checks: one module per divergence, listed explicitly in BUILTIN_CHECKS."""

from __future__ import annotations

from auditor.checks.base import Check, CheckContext
from auditor.checks.edges import Edges
from auditor.checks.fields import SoftDelete, StaleFields
from auditor.checks.malformed import MalformedAspect
from auditor.checks.presence import MissingDocument, OrphanDocument
from auditor.checks.system_metadata import StaleSystemMetadata

BUILTIN_CHECKS: tuple[type[Check], ...] = (
    MalformedAspect,
    MissingDocument,
    OrphanDocument,
    StaleFields,
    SoftDelete,
    StaleSystemMetadata,
    Edges,
)

__all__ = ["BUILTIN_CHECKS", "Check", "CheckContext"]
