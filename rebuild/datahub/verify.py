"""After a repair: wait for the consumer to pass what was produced, then re-audit what was touched."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from auditor.backends.protocols import Events
from auditor.core.model import Classified, Report, Selection
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.run import ScanBackends, ScanOptions, ScanTarget, run_scan
from auditor.platforms.datahub.v3 import scan_with_v3
from auditor.rebuild.verify import selections, still_wrong


def _past(committed: int | None, offset: int) -> bool:
    return committed is not None and committed > offset


def wait_for_consumer(
    events: Events,
    topic: str,
    group: str,
    produced: dict[str, int],
    timeout: float,
    progress: Callable[[int], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """True once the group's committed offset is past the highest offset produced on each partition."""
    deadline = time.monotonic() + timeout
    while True:
        committed = {str(s.partition): s.committed for s in events.sample([topic], group)}
        behind = [p for p, o in produced.items() if not _past(committed.get(p), o)]
        if progress is not None:
            progress(len(produced) - len(behind))
        if not behind:
            return True
        if time.monotonic() > deadline:
            return False
        sleep(1.0)


def audit(
    backends: ScanBackends, registry: Registry, report: Report, options: ScanOptions, target: ScanTarget
) -> Report:
    """The scan's steps; DataHub's V3 index too, unless a full rebuild's new index is verified."""
    if target.entity_indices:
        return run_scan(backends, registry, report, options, target)
    return scan_with_v3(backends, registry, report, options, target)


def reaudit(
    backends: ScanBackends,
    registry: Registry,
    target: ScanTarget,
    urns: Sequence[str],
    grace: float = 300.0,
    waiting: list[Classified] | None = None,
) -> list[Classified]:
    """The scan's own steps over the touched urns (the shared verification); what is still
    diverged or invalid (what waits on the consumer into `waiting`, when given)."""
    options = ScanOptions(sample_window=0, use_state=False, grace=grace, settle=0.0)
    return still_wrong(
        lambda scope: audit(backends, registry, _report(scope, target), options, target),
        urns,
        waiting=waiting,
    )


def reaudit_selection(
    backends: ScanBackends,
    registry: Registry,
    target: ScanTarget,
    chosen: Sequence[Selection],
    waiting: list[Classified] | None = None,
) -> tuple[int, list[Classified]]:
    """A scan of each selection a filter-based repair walked: (entities scanned, still wrong)."""
    options = ScanOptions(sample_window=0, use_state=False, settle=0.0)
    scopes = [
        Selection(s.entity_types, s.urn_like, s.since, shard=s.shard, urn_range=s.urn_range, urns=s.urns)
        for s in chosen
    ]
    return selections(
        lambda scope: audit(backends, registry, _report(scope, target), options, target), scopes, waiting
    )


def _report(scope: Selection, target: ScanTarget) -> Report:
    return Report(
        started_at=datetime.now(UTC),
        scope=scope,
        index_prefix=target.index_prefix,
        consumer_group=target.group,
    )
