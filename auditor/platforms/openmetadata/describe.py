"""How OpenMetadata's findings are said in one line (triage, the console)."""

from __future__ import annotations

from auditor.core.model import Classified, Kind

MAX_SHOWN = 4  # alike fields named before "+N more"


def describe(c: Classified) -> str:
    """An OpenMetadata finding's details, in OpenMetadata's words (a row, its document)."""
    f = c.finding
    if f.kind == Kind.STALE_FIELDS:
        fields = f.details.get("fields") or []
        shown = [
            f"{d['field']}: expected {d['expected']!r}, found {d['actual']!r}" for d in fields[:MAX_SHOWN]
        ]
        more = f"; +{len(fields) - MAX_SHOWN} more fields" if len(fields) > MAX_SHOWN else ""
        return "; ".join(shown) + more
    if f.kind == Kind.SOFT_DELETE_MISMATCH:
        return str(f.details.get("note") or "")
    if f.kind == Kind.ORPHAN_DOCUMENT:
        return "no row: the document is left behind" + (
            f" ({f.details['note']})" if f.details.get("note") else ""
        )
    if f.kind == Kind.MISSING_DOCUMENT:
        return "no document although the row exists"
    if f.kind == Kind.MALFORMED_ASPECT:
        return f"the row's JSON: {f.details.get('reason', 'cannot be parsed')}"
    return ""
