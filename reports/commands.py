"""The repair plan rendered as commands an operator can run: each finding's platform renders its own.

A finding names its platform (`details.platform`; DataHub's name none); the registry gives that
platform, whose renderer writes `auditor rebuild` lines and the platform's own tools' lines.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from auditor import platforms
from auditor.core.model import Classified


def finding_commands(c: Classified, *, group: str, until: datetime | None = None) -> list[str]:
    """The platform's own commands that repair one judged finding (none for a finding in flight)."""
    platform = platforms.get(platforms.name_of_finding(c.finding.details))
    return platform.finding_commands(c, group=group, until=until)


def finding_rebuild(c: Classified) -> str | None:
    """The `auditor rebuild` command that repairs one judged finding (None: nothing to write)."""
    return platforms.get(platforms.name_of_finding(c.finding.details)).finding_rebuild(c)


def repair_commands(
    findings: Iterable[Classified], *, group: str, until: datetime | None = None
) -> list[str]:
    """What to run for a report's findings."""
    findings = list(findings)
    return platforms.of_findings(findings).repair_commands(findings, group=group, until=until)
