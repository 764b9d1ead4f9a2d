"""The checks: one module per divergence, listed explicitly in BUILTIN_CHECKS."""

from __future__ import annotations

from checks.base import Check, CheckContext
from checks.edges import Edges
from checks.fields import SoftDelete, StaleFields
from checks.malformed import MalformedAspect
from checks.presence import MissingDocument, OrphanDocument
from checks.system_metadata import StaleSystemMetadata

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
