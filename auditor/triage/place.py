"""Placing the scan's findings on the boundaries they break, said in one line per kind of problem."""

from __future__ import annotations

from auditor import platforms
from auditor.core.model import Classified, Kind
from auditor.core.triage import Boundary, Status, TriageResult, boundary_of, status_of

# -- placing the findings --------------------------------------------------------------------


def place(out: TriageResult) -> None:
    """Each finding marks its boundary broken (or pending); alike findings are said in one line."""
    steps = {s.boundary: s for s in out.steps}
    groups: dict[tuple[Boundary, str, str], list[Classified]] = {}
    for c in sorted(out.findings, key=lambda c: c.verdict.rank):
        key = (boundary_of(c), f"{c.verdict.value}/{c.subkind}", _tail(c))
        groups.setdefault(key, []).append(c)
    for (where, head, tail), found in groups.items():
        step = steps.get(where)
        if step is None:
            continue
        if step.status != Status.BROKEN:
            step.status = status_of(found[0])
        whats = [w for c in found if (w := what(c, out.findings))]
        shown = "; ".join(whats[:MAX_SHOWN]) + (
            f"; +{len(whats) - MAX_SHOWN} more" if len(whats) > MAX_SHOWN else ""
        )
        count = f" x{len(found)}" if len(found) > 1 else ""
        step.problems.append(f"{head}{count}: " + (f"{shown} - " if shown else "") + tail)


MAX_SHOWN = 4  # alike findings named in one problem line before "+N more"


def _tail(c: Classified) -> str:
    eta = c.evidence.eta_seconds
    return c.evidence.reason + (f" (ETA {eta:.0f}s)" if eta is not None and eta > 0 else "")


def what(c: Classified, all_findings: list[Classified]) -> str:
    """What exactly is wrong, from the finding's details."""
    f = c.finding
    own = platforms.get(f.platform).describe(c)
    if own is not None:  # the platform words its own findings
        return own
    out = ""
    if f.kind == Kind.ORPHAN_DOCUMENT:
        sysmeta = sum(
            1
            for x in all_findings
            if x.finding.kind == Kind.STALE_SYSTEM_METADATA and x.finding.details.get("problem") == "orphan"
        )
        edges = sum(1 for x in all_findings if x.finding.kind == Kind.ORPHAN_EDGE)
        out = (
            f"the rows are gone; the document (and {sysmeta} system-metadata docs, {edges} edges) left behind"
        )
    elif f.kind in (Kind.STALE_FIELDS, Kind.FIELD_LEFT_BEHIND):
        fields = f.details.get("fields") or []
        shown = [
            f"{d['field']}: expected {d['expected']!r}, found {d['actual']!r}"
            + (" (left behind)" if d.get("kind") == "left_behind" else "")
            for d in fields[:MAX_SHOWN]
        ]
        more = f"; +{len(fields) - MAX_SHOWN} more fields" if len(fields) > MAX_SHOWN else ""
        out = "; ".join(shown) + more
    elif f.kind == Kind.SOFT_DELETE_MISMATCH:
        out = (
            f"the rows say removed = {f.details.get('expected_removed')}, "
            f"the document says {f.details.get('actual_removed')}"
            + ("; still searchable" if f.details.get("expected_removed") else "")
        )
    elif f.kind == Kind.MISSING_DOCUMENT:
        out = "no document although the rows exist"
    elif f.kind == Kind.STALE_SYSTEM_METADATA:
        out = f"{f.aspect} ({f.details.get('problem', 'stale')})"
    elif f.kind in (Kind.MISSING_EDGE, Kind.ORPHAN_EDGE):
        out = f"{f.details.get('relationship')} -> {f.details.get('destination')}"
    elif f.kind == Kind.MALFORMED_ASPECT:
        out = f"{f.aspect}: {f.details.get('reason', 'cannot be parsed')}"
    if f.aspect and f.kind in (Kind.STALE_FIELDS, Kind.FIELD_LEFT_BEHIND, Kind.MISSING_EDGE):
        out = f"[{f.aspect}] " + out
    return out
