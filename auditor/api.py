"""The auditor as plain functions (the CLI is a thin layer over these): scan, triage, rebuild.

Each function asks the registry for the platform the settings name (or the report's findings
name), refuses what that platform does not declare, and lets the platform do the work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import closing
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from auditor import platforms
from auditor.core.model import Report, Selection
from auditor.core.plan import RebuildOutcome, RestoreEvidence
from auditor.core.registry import Registry
from auditor.core.triage import TriageResult
from auditor.platforms.base import Capability, Platform
from auditor.scan.join import Progress
from auditor.scan.run import ScanOptions
from auditor.scan.shards import ShardPlan, make_plan
from auditor.settings import Settings

if TYPE_CHECKING:
    from auditor.rebuild.run import RebuildRequest

__all__ = ["ScanOptions", "after_restore", "plan_shards", "platform_of", "rebuild", "scan", "triage"]


def platform_of(settings: Settings) -> Platform:
    """The platform the settings name, with what they ask of it that it cannot do refused."""
    platform = platforms.get(settings.platform)
    if settings.stores:
        platform.require(Capability.FEDERATION, "--store")
    return platform


def scan(
    settings: Settings,
    selection: Selection | None = None,
    options: ScanOptions | None = None,
    progress: Progress | None = None,
    *,
    registry: Registry | None = None,
    log: Callable[[str], None] | None = None,
) -> Report:
    """Compare the store with the search cluster (and the consumer offsets) and judge it.

    The join's findings are candidates; each is re-observed in causal order before it gets a
    verdict, so a scan during live writes does not call a delay diverged. Read-only.
    """
    platform = platform_of(settings)
    selection = selection or Selection()
    return platform.scan(settings, selection, options or ScanOptions(), progress, registry=registry, log=log)


def plan_shards(settings: Settings, n: int, entity_types: tuple[str, ...] = ()) -> ShardPlan:
    """N urn ranges of about equal rows for `scan --shard i/N --shard-plan` (reads the urns only)."""
    from auditor.backends.connect import open_store

    platform_of(settings).require(Capability.SHARD_PLAN, "--plan-shards")
    with closing(open_store(settings)) as store:
        return make_plan(store, n, entity_types)


def triage(
    settings: Settings,
    text: str,
    grace: float | None = None,
    settle: float = 10.0,
    *,
    entity_types: Sequence[str] = (),
) -> TriageResult:
    """Walk one entity from the truth to its search document; name the first boundary that breaks.

    `text`: as pasted (a DataHub urn quoted, URL-encoded, with whitespace, or a DataHub URL; an
    OpenMetadata FQN or id). Read-only: the state file is read, never written.
    """
    platform = platform_of(settings)
    platform.require(Capability.TRIAGE)
    return platform.triage(settings, text, entity_types=entity_types, grace=grace, settle=settle)


def rebuild(settings: Settings, request: RebuildRequest) -> RebuildOutcome:
    """Plan a repair and, with `request.apply`, do it (replay or reindex) and verify it.

    A report's findings name their platform; the settings name it for a repair by filters."""
    platform = platforms.get(settings.platform)
    if request.findings:
        found = platforms.of_findings(request.findings)
        if found.name != platforms.DEFAULT:
            platform = found
    if settings.stores and request.mode != "plan":
        platform.require(Capability.FEDERATION, "--store")
    if request.mode == "replay":
        platform.require(Capability.REPLAY, "rebuild replay")
    if request.full and request.apply:
        platform.require(Capability.STAGED_REINDEX, "--full")
    if request.shard is not None:
        platform.require(Capability.SHARD_PLAN, "--shard")
    return platform.rebuild(settings, request)


def after_restore(
    settings: Settings,
    *,
    mode: str = "replay",
    apply: bool = False,
    since: datetime | None = None,
    rate: float | None = None,
    wait_seconds: float = 300.0,
) -> RestoreEvidence:
    """Find how far search is behind the database, repair that window, and keep the evidence."""
    from auditor.rebuild.run import RebuildRequest

    platform = platform_of(settings)
    platform.require(Capability.AFTER_RESTORE)
    options = ScanOptions(use_state=False, sample_window=2.0)
    first = scan(settings, options=options)
    evidence = platform.restore_window(settings, first)
    evidence.mode = mode
    evidence.since = since or evidence.since
    if evidence.since is not None:
        request = RebuildRequest(
            mode, selection=Selection(since=evidence.since), apply=apply, rate=rate, wait_seconds=wait_seconds
        )
        evidence.outcome = rebuild(settings, request)
        if apply:
            final = scan(settings, options=options)
            evidence.final_exit_code = final.exit_code
            for (_, verdict, subkind), n in final.counts.items():
                key = verdict if verdict == subkind else f"{verdict}/{subkind}"
                evidence.final_counts[key] = evidence.final_counts.get(key, 0) + n
    evidence.finished_at = datetime.now(UTC)
    return evidence
