"""The repair plan rendered as commands an operator can run, for the findings' platform.

One renderer for every platform, dispatching on the action's type: the platform's `Executors`
say which mode of `auditor rebuild` writes each kind of action (so which `auditor rebuild` line
repairs it), its `Renderer` spells each kind with the platform's own tools. A finding names its
platform (`details.platform`); the registry gives that platform.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from auditor import platforms
from auditor.core.model import Classified, RepairKind
from auditor.core.plan import RepairPlan, actions_for, plan
from auditor.platforms.base import Platform
from auditor.reports.escape import shell_line, shell_quote

PER_URN = 5  # urns named on one line; past it, the report is the input


def _platform(c: Classified) -> Platform:
    return platforms.get(c.finding.platform)


def finding_commands(c: Classified, *, group: str, until: datetime | None = None) -> list[str]:
    """The platform's own commands that repair one judged finding (none for a finding in flight)."""
    renderer = _platform(c).renderer
    return [renderer.render(a, group=group, until=until) for a in actions_for(c)]


def finding_rebuild(c: Classified) -> str | None:
    """The `auditor rebuild` command that repairs one judged finding (None: nothing to write)."""
    platform = _platform(c)
    mode = platform.executors.mode_covering(a.kind for a in actions_for(c))
    if mode is None:
        return None
    return f"auditor rebuild {mode}{platform.flag} --urn {shell_quote(c.finding.urn)} --apply"


def rebuild_lines(repairs: RepairPlan, platform: Platform, per_urn: int = PER_URN) -> list[str]:
    """The plan as `auditor rebuild` commands: each urn in the preferred mode that writes its
    actions (a mode per line), then a restore window as its own line."""
    out: list[str] = []
    modes = platform.executors
    for mode in modes.modes:
        urns = sorted({a.urn for a in repairs.actions if a.urn and modes.mode_for(a.kind) == mode})
        if not urns:
            continue
        if len(urns) <= per_urn:
            picked = " ".join(f"--urn {shell_quote(u)}" for u in urns)
            out.append(f"auditor rebuild {mode}{platform.flag} {picked} --apply")
        else:
            out.append(
                f"auditor rebuild {mode}{platform.flag} --from-report scan.json --apply"
                f"   # {len(urns)} entities; scan.json: this scan's --format json report"
            )
    for a in repairs.of(RepairKind.REPLAY_WINDOW):
        window = modes.mode_for(a.kind)
        if window is None:
            continue
        since = f" --since {a.since.isoformat()}" if a.since else ""
        kind = f" --entity-type {shell_quote(a.entity_type)}" if a.entity_type else ""
        line = f"auditor rebuild {window}{platform.flag}{kind}{since} --apply"
        out.append(f"{line}   # the index is behind a restore")
    return out


def repair_commands(
    findings: Iterable[Classified], *, group: str, until: datetime | None = None
) -> list[str]:
    """What to run for a report's findings: `auditor rebuild` first, then the platform's tools."""
    findings = list(findings)
    platform = platforms.of_findings(findings)
    repairs = plan(findings)
    out = rebuild_lines(repairs, platform)
    native = platform.native_commands(repairs, group=group, until=until, per_urn=PER_URN)
    if out and native:
        out.append(f"# or with {platform.renderer.tools}:")
    return [shell_line(c) for c in out + native]
