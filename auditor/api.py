"""The auditor as plain functions (the CLI is a thin layer over these): scan, triage, rebuild.

Each function asks the registry for the platform the settings name (or the report's findings
name), refuses what that platform does not declare, and lets the platform do the work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor import platforms
from auditor.core.model import Report, Selection
from auditor.core.plan import RebuildOutcome, RestoreEvidence
from auditor.core.triage import TriageResult
from auditor.errors import ConfigError, DeletionRefused
from auditor.exit_codes import ExitCode
from auditor.platforms.base import REPAIR_KNOBS, SCAN_KNOBS, Capability, Platform
from auditor.scan.options import Progress, ScanOptions
from auditor.scan.shards import ShardPlan
from auditor.settings.model import Settings
from auditor.settings.rules import refuse_foreign

if TYPE_CHECKING:
    from auditor.rebuild.request import RebuildRequest
    from auditor.rebuild.workers import ShardRun

__all__ = [
    "ScanOptions",
    "after_restore",
    "plan_shards",
    "platform_of",
    "rebuild",
    "rebuild_in_shards",
    "scan",
    "triage",
]


def platform_of(settings: Settings) -> Platform:
    """The platform the settings name, with what they ask of it that it cannot do refused."""
    platform = platforms.get(settings.platform)
    if settings.stores:
        platform.require(Capability.FEDERATION, "--store")
    refuse_foreign(settings, platform.name, platform.title)
    return platform


def scan(
    settings: Settings,
    selection: Selection | None = None,
    options: ScanOptions | None = None,
    progress: Progress | None = None,
    *,
    log: Callable[[str], None] | None = None,
    **own: Any,
) -> Report:
    """Compare the store with the search cluster (and the consumer offsets) and judge it.

    The join's findings are candidates; each is re-observed in causal order before it gets a
    verdict, so a scan during live writes does not call a delay diverged. Read-only.

    `own`: what only the platform's own `scan` takes, handed on as given and needed by none
    (DataHub's `registry=`, an entity registry already loaded, is kept for callers that pass one).
    """
    platform = platform_of(settings)
    selection = selection or Selection()
    options = options or ScanOptions()
    platform.refuse_knobs(vars(options), SCAN_KNOBS)
    return platform.scan(settings, selection, options, progress, log=log, **own)


def plan_shards(settings: Settings, n: int, entity_types: tuple[str, ...] = ()) -> ShardPlan:
    """N urn ranges of about equal rows for `scan --shard i/N --shard-plan` (reads the urns only)."""
    platform = platform_of(settings)
    platform.require(Capability.SHARD_PLAN, "--plan-shards")
    return platform.plan_shards(settings, n, entity_types)


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
    platform = _repairing(settings, request)
    if request.state_dir == Path("."):  # locks and checkpoints beside the state file, every platform
        request.state_dir = Path(settings.state_file).parent
    from auditor.rebuild.undo import journaled

    with journaled(settings, request) as run:  # every write of the repair journaled (undoable)
        if settings.stores and request.mode != "plan":  # one repair per store (docs/federation.md)
            from auditor.rebuild.federation import rebuild_federation

            outcome = rebuild_federation(
                settings, request, platform.rebuild, lambda urns: platform.holders(settings, urns)
            )
        else:
            outcome = platform.rebuild(settings, request)
        if run is not None and run.wrote:  # the console and `rebuild journal` show it
            run.verified(outcome.exit_code == ExitCode.OK, int(outcome.exit_code), why_unverified(outcome))
    outcome.journal = run.run if run is not None and run.wrote else None
    return outcome


def why_unverified(outcome: RebuildOutcome) -> str:
    """Why a repair's verification did not pass ("" when it did): its journal and the heal say."""
    if outcome.failed:
        return f"{len(outcome.failed)} entities failed to write ({', '.join(outcome.failed[:3])})"
    if outcome.still_wrong:
        return f"{len(outcome.still_wrong)} findings still wrong after the repair"
    if outcome.consumer_caught_up is False:
        return "the consumer did not apply the replay"
    return ""


def _repairing(settings: Settings, request: RebuildRequest) -> Platform:
    """The platform a repair runs on, with what the request asks of it that it cannot do refused."""
    platform = platforms.get(settings.platform)
    if request.findings:  # every finding names its platform (DataHub's too)
        platform = platforms.of_findings(request.findings)
        stores = sorted({n for c in request.findings for n in c.finding.stores})
        if stores and not settings.stores:  # each row lives in one of several stores: name them
            raise ConfigError(
                f"the report is of a federation (stores {', '.join(stores)}): configure its stores",
                hint="--store NAME=URL for each (or AUDITOR_STORES), as the scan had them "
                "(docs/federation.md)",
            )
    if settings.stores and request.mode != "plan":
        platform.require(Capability.FEDERATION, "--store")
    refuse_foreign(settings, platform.name, platform.title)
    platform.refuse_knobs(vars(request), REPAIR_KNOBS)
    if request.mode == "replay":
        platform.require(Capability.REPLAY, "rebuild replay")
    if request.full and request.apply:
        platform.require(Capability.STAGED_REINDEX, "--full")
    if request.full and request.resume:  # it would be accepted and do nothing, on every platform
        raise ConfigError(
            "--resume continues a targeted repair from its checkpoint; --full keeps none",
            hint="run --full again (a failed step deletes its staged index and leaves the live one)",
        )
    if request.shard is not None:
        platform.require(Capability.SHARD_PLAN, "--shard")
    return platform


def rebuild_in_shards(
    settings: Settings,
    request: RebuildRequest,
    workers: int,
    *,
    shard_plan: Path | None = None,
    started: Callable[[ShardRun], None] | None = None,
) -> dict[str, Any]:
    """The repair as shard processes on this machine, `workers` at a time, outcomes merged.

    Each shard is a whole repair of its urn range (its own checkpoint, lock and verification) in
    a child process (one Python process is bound by its own CPU), given its settings and request
    on its standard input (nothing on a command line or on disk). The ranges come from
    `shard_plan`, or from a plan of `workers` ranges made now and kept beside the state file (a
    `request.resume` reuses it: the checkpoints are named by range). Returns the merged outcome
    (`reports.rebuild_merge`): its `exit_code` is the worst shard's."""
    import pickle
    import sys
    from dataclasses import replace

    from auditor.rebuild.workers import run_shards
    from auditor.reports.rebuild_merge import merge_outcomes

    platform = _repairing(settings, request)
    if settings.stores:
        raise ConfigError(
            "--workers is not supported on a federation",
            hint="one process repairs the stores one after another",
        )
    if request.shard is not None:
        raise ConfigError("--workers runs every shard itself", hint="drop --shard (or drop --workers)")
    platform.require(Capability.SHARD_PLAN, "--workers")
    if request.full:
        raise ConfigError("--workers shards a targeted replay or reindex (not --full)")
    state_dir = Path(settings.state_file).parent
    path = shard_plan
    if path is None:
        path = state_dir / f"rebuild-shard-plan-{workers}.json"
        if not (request.resume and path.exists()):
            types = request.selection.entity_types if request.selection is not None else ()
            state_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(plan_shards(settings, workers, tuple(types)).to_json(), encoding="utf-8")
    ranges = ShardPlan.load(path)
    shards = ranges.shards

    def given(i: int) -> bytes:
        shard = replace(request, shard=(i, shards), urn_range=ranges.urn_range(i), progress=None)
        return pickle.dumps((settings, shard))

    def command(i: int, outcome: Path) -> list[str]:
        return [sys.executable, "-m", "auditor.shard_child", str(outcome)]

    found = run_shards(command, shards, workers, state_dir, started=started, stdin=given)
    return merge_outcomes(found, shards)


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
    from auditor.rebuild.request import RebuildRequest

    platform = platform_of(settings)
    platform.require(Capability.AFTER_RESTORE)
    if settings.stores:  # the window is one table's last write against the index's
        raise ConfigError(
            "rebuild after-restore is not supported on a federation",
            hint="run it with each store's --store-url, or repair the window with "
            "`auditor rebuild replay --since ... --store NAME=URL ...`",
        )
    options = ScanOptions(use_state=False, sample_window=2.0)
    first = scan(settings, options=options)
    if first.store_smaller is not None:  # the restore lost rows (or this is the wrong database)
        raise DeletionRefused(
            f"{first.store_smaller.text}: nothing is repaired after this restore",
            hint="check the store URL and what the restore brought back (`auditor scan` lists the "
            "orphans); a repair of them needs `auditor rebuild reindex ... --allow-delete N`",
        )
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
