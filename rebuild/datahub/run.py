"""DataHub's rebuild pipeline: plan -> replay | reindex -> checkpoint -> verify, over given backends."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from auditor.backends.index_writer import IndexWriter
from auditor.backends.journal import active
from auditor.backends.protocols import Capability, require
from auditor.backends.store_order import unique
from auditor.core.model import Classified, RepairKind, Selection
from auditor.core.plan import RebuildOutcome, RepairPlan, plan
from auditor.core.repairs import Executors, Mode
from auditor.errors import ConfigError
from auditor.platforms.datahub.backends.producer import MclProducer
from auditor.platforms.datahub.backends.store import MetadataStore
from auditor.platforms.datahub.naming import entity_index
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.hook_groups import hook_group
from auditor.platforms.datahub.scan.reindex import refuse_full, reindex_mirrors
from auditor.platforms.datahub.scan.run import ScanBackends, ScanTarget
from auditor.platforms.datahub.urns import entity_type
from auditor.platforms.datahub.v3 import v3_indices
from auditor.rebuild.checkpoint import Checkpoint
from auditor.rebuild.datahub.alive import refuse_unless_consuming
from auditor.rebuild.datahub.documents import kept_note
from auditor.rebuild.datahub.full import FullRebuild
from auditor.rebuild.datahub.newer import NewerDocuments, behind_note
from auditor.rebuild.datahub.reindex import Reindexer, deployment_versions
from auditor.rebuild.datahub.replay import Replayer
from auditor.rebuild.datahub.replay_journal import ReplayImages
from auditor.rebuild.datahub.rows import RowSource
from auditor.rebuild.datahub.unknown import refuse_unknown
from auditor.rebuild.datahub.verify import reaudit, reaudit_selection, wait_for_consumer
from auditor.rebuild.guard import (
    count_deletes,
    guarded,
    index_count,
    locked,
    planned_deletes,
    refuse_mass_delete,
)
from auditor.rebuild.request import RebuildRequest


@dataclass
class RebuildBackends:
    scan: ScanBackends  # read side, also used to verify
    store: MetadataStore
    open_producer: Callable[[], MclProducer] | None  # None: no Kafka (replay impossible)
    open_writer: Callable[[], IndexWriter]
    description: str  # the target, for the lock (no secrets)


def _progress(request: RebuildRequest, what: str) -> Callable[[int], None] | None:
    report = request.progress
    if report is None:
        return None
    return lambda n: report(what, n)


def repair_plan(request: RebuildRequest) -> RepairPlan:
    if request.findings is None:
        return RepairPlan()
    repairs = plan(c for c in request.findings if c.verdict in request.include)
    if request.shard is None:
        return repairs
    # a shard repairs its own urns; a window (no urn) is walked by every shard over its range
    return RepairPlan([a for a in repairs.actions if a.urn is None or request.in_shard(a.urn)])


def _scope(request: RebuildRequest, repairs: RepairPlan) -> Selection:
    """The rows a replay walks / the urns a reindex rebuilds, as a selection."""
    if request.selection is not None:
        return request.sharded(request.selection)
    return request.sharded(Selection(urns=tuple(repairs.urns)))


def _deletes(
    backends: RebuildBackends, registry: Registry, target: ScanTarget, request: RebuildRequest
) -> dict[str, int]:
    """The orphans' entity documents the repair would delete, by index: those of the whole
    report (each shard counts them all: its share is no measure of the index), or of the --urn
    with no row."""
    if request.findings is not None:
        return planned_deletes(plan(c for c in request.findings if c.verdict in request.include))
    urns = sorted(set(request.selection.urns)) if request.selection is not None else []
    if not urns:
        return {}
    held = {urn for urn, _ in backends.store.fingerprints(tuple(urns))}
    named = (registry.spelled(entity_type(u)) for u in urns if u not in held)
    return count_deletes(entity_index(name, target.index_prefix) for name in named)


def rebuild(
    backends: RebuildBackends,
    registry: Registry,
    target: ScanTarget,
    request: RebuildRequest,
    executors: Executors,
) -> RebuildOutcome:
    """Plan (always), then, with `apply`, repair and verify. `executors`: what each of the
    platform's modes writes; the plan's other actions are left to another mode (or a person)."""
    if request.selection is not None and request.selection.urns:  # --urn: refused when no entity has it
        urns = request.selection.urns
        refuse_unknown(backends.store, backends.scan.search, registry, target.index_prefix, urns)
    repairs = repair_plan(request)
    outcome = RebuildOutcome(request.mode, request.apply and request.mode != "plan", repairs)
    # a plan is counted as a reindex would do it (the mode that writes the most)
    writes = Mode.REINDEX if request.mode == Mode.PLAN else Mode(request.mode)
    outcome.elsewhere = executors.elsewhere(writes, repairs)
    deleting = RepairKind.DELETE_DOCUMENT in executors.kinds(writes)  # a replay deletes nothing
    deletes = _deletes(backends, registry, target, request) if deleting else {}
    held = index_count(backends.scan.search)
    refuse_mass_delete(request, outcome, deletes, held, backends.store.description)
    scope = _scope(request, repairs)
    windows = repairs.of(RepairKind.REPLAY_WINDOW)
    selections = [scope] if (scope.urns or request.selection is not None) else []
    selections += [
        request.sharded(Selection(entity_types=(a.entity_type,) if a.entity_type else (), since=a.since))
        for a in windows
    ]
    if request.shard is not None:
        outcome.shard, outcome.urn_range = request.shard, request.urn_range
    outcome.rows = sum(backends.store.count_rows(s) for s in selections)
    if request.rate:
        outcome.estimate_seconds = outcome.rows / request.rate
    if not outcome.applied:
        return outcome
    if request.full:
        if request.shard is not None:
            raise ConfigError(
                "--full loads one fresh index per entity type and swaps it in whole: it is not sharded",
                hint="drop --shard/--workers (a targeted reindex shards: --all or --entity-type)",
            )
        return _full(backends, registry, target, request, outcome)
    if request.mode == "replay" and not request.allow_stopped_consumer:
        _refuse_unless_consuming(backends, target)
    walked = [s.__dict__ for s in selections]
    described = (backends.description, target.index_prefix, target.versioned_topic)
    with guarded(request, outcome, walked, *described) as guard:
        checkpoint, path = guard.checkpoint, guard.path
        # urns named (a report's, --urn) are verified one by one; a window or a filter by a scan
        # of it: a report's index behind walks a million rows, and its checkpoint (saved at each
        # batch) would carry every urn
        named = scope.urns if request.selection is None else request.selection.urns
        checkpoint.track_touched = bool(named)
        images = _replay_images(backends, registry, target) if request.mode == "replay" else None
        if request.mode == "replay":
            _replay(backends, registry, target, request, selections, checkpoint, path, images)
        else:
            _reindex(backends, registry, target, request, selections, checkpoint, path)
        outcome.counts, outcome.failed = dict(checkpoint.counts), list(checkpoint.failed)
        outcome.why = dict(checkpoint.why)
        if (kept := kept_note(outcome.counts)) is not None:
            outcome.notes.append(kept)
        if checkpoint.kept:
            outcome.notes.append(behind_note(checkpoint.kept))
        if request.verify:
            _verify(backends, registry, target, request, checkpoint, outcome, selections)
        if images is not None:  # the consumer has passed the replay (or the wait ended): what it wrote
            images.after()
        guard.finish(outcome)
    return outcome


def _refuse_unless_consuming(backends: RebuildBackends, target: ScanTarget) -> None:
    """A replay into a MAE group that has no member, or does not move, is refused before anything
    is produced (exit 4, naming `rebuild reindex`): nothing would apply it."""
    events = backends.scan.events
    if events is None or backends.open_producer is None:
        return  # no change log: `_replay` refuses with what to pass
    group = hook_group(events, target)[0].group  # the one feeding the index
    refuse_unless_consuming(events, target.versioned_topic, group)


def _replay_images(backends: RebuildBackends, registry: Registry, target: ScanTarget) -> ReplayImages | None:
    """The replay's journal of the documents it makes the consumer write (None: not journaled)."""
    journal = active()
    if journal is None:
        return None
    v3 = v3_indices(backends.scan.search, target.index_prefix, registry)
    return ReplayImages(journal, backends.scan.search, registry, target.index_prefix, v3)


def _replay(
    backends: RebuildBackends,
    registry: Registry,
    target: ScanTarget,
    request: RebuildRequest,
    selections: list[Selection],
    checkpoint: Checkpoint,
    path: Path,
    images: ReplayImages | None = None,
) -> None:
    if backends.open_producer is None:
        raise ConfigError(
            "a replay needs Kafka and the schema registry", hint="pass --kafka and --schema-registry"
        )
    producer = backends.open_producer()
    require(producer, Capability.PRODUCE, "a replay")
    newer: NewerDocuments | None = None
    try:
        progress = _progress(request, "replayed")
        for part, selection in enumerate(selections):
            if part < checkpoint.part:
                continue  # walked whole by the run this one resumes
            if part > checkpoint.part:
                checkpoint.part, checkpoint.done = part, False
                checkpoint.last_urn = checkpoint.last_aspect = None
            source = RowSource(backends.store, selection)
            order = source.order()
            if checkpoint.last_urn is not None and checkpoint.order != order:
                raise ConfigError(
                    f"checkpoint {path} walked the rows in {checkpoint.order} order and the store now "
                    f"pages them in {order} order: resuming it could skip rows",
                    hint="remove the checkpoint to start over",
                )
            checkpoint.order = order
            if newer is None and not request.prefer_store:  # what a replay would write older over
                scan = backends.scan
                versions = deployment_versions(scan, registry, target)
                newer = NewerDocuments(scan.search, registry, versions, target.index_prefix)
            replayer = Replayer(
                backends.store,
                producer,
                checkpoint,
                path,
                rate=request.rate,
                batch=request.batch,
                progress=progress,
                hold=None if newer is None else partial(newer.in_page, backends.store),
                before_produce=images.before if images is not None else None,
            )
            replayer.run(source)
    finally:
        producer.close()


def _reindex(
    backends: RebuildBackends,
    registry: Registry,
    target: ScanTarget,
    request: RebuildRequest,
    selections: list[Selection],
    checkpoint: Checkpoint,
    path: Path,
) -> None:
    # each selection's urns in order (given, or its rows' read a page at a time), merged as one
    # sorted stream without repeats: a window of a million entities is never held as a list
    store = backends.store
    streams = [iter(sorted(set(s.urns))) if s.urns else RowSource(store, s).urns() for s in selections]
    urns = unique(heapq.merge(*streams))
    progress = _progress(request, "reindexed")
    writer = backends.open_writer()
    for needed in (Capability.BULK_WRITE, Capability.DELETE):
        require(writer, needed, "a reindex")
    v3 = v3_indices(backends.scan.search, target.index_prefix, registry)
    scan = backends.scan
    reindexer = Reindexer(
        backends.store,
        scan.search,
        writer,
        registry,
        checkpoint,
        path,
        index_prefix=target.index_prefix,
        rate=request.rate,
        batch=min(request.batch, 500),
        progress=progress,
        v3=v3,
        # DataHub's zero-downtime reindexes in progress, of V2 and V3 indices: written to both
        mirrors=reindex_mirrors(scan.store, scan.search, target.index_prefix, registry, set(v3.values())),
        versions=deployment_versions(scan, registry, target),
        prefer_store=request.prefer_store,
    )
    reindexer.run(urns)
    reindexer.writer.refresh_written()


def _verify(
    backends: RebuildBackends,
    registry: Registry,
    target: ScanTarget,
    request: RebuildRequest,
    checkpoint: Checkpoint,
    outcome: RebuildOutcome,
    selections: list[Selection],
) -> None:
    events = backends.scan.events
    if request.mode == "replay" and events is not None and checkpoint.produced:
        progress = _progress(request, "partitions the consumer has passed")
        group = hook_group(events, target)[0].group  # the one feeding the index
        outcome.consumer_caught_up = wait_for_consumer(
            events, target.versioned_topic, group, checkpoint.produced, request.wait_seconds, progress
        )
        if not outcome.consumer_caught_up:
            outcome.warnings.append(
                f"the MAE group {group} did not pass the replayed offsets in {request.wait_seconds:.0f}s: "
                "the replay is not applied, so nothing it touched is verified (what still waits is listed)"
            )
    # what waits on the consumer is kept apart: never counted consistent
    waiting = outcome.waiting if outcome.consumer_caught_up is False else None
    if checkpoint.track_touched:  # what was left as it is (the store behind) is not called consistent
        outcome.verified_urns = len(set(checkpoint.touched) - set(checkpoint.kept))
        outcome.still_wrong = reaudit(backends.scan, registry, target, checkpoint.touched, waiting=waiting)
    else:  # a filter: verified by a scan of it (entities with a row in it)
        outcome.verified_urns, outcome.still_wrong = reaudit_selection(
            backends.scan, registry, target, selections, waiting
        )


def _full(
    backends: RebuildBackends,
    registry: Registry,
    target: ScanTarget,
    request: RebuildRequest,
    outcome: RebuildOutcome,
) -> RebuildOutcome:
    """`reindex --full`: every entity type of the selection into a fresh index, swapped in."""
    selection = request.selection
    if (
        request.mode != "reindex"
        or selection is None
        or selection.urns
        or selection.urn_like
        or selection.since
    ):
        raise ConfigError(
            "--full rebuilds whole entity types", hint="use it with --entity-type or --all only"
        )
    types = list(selection.entity_types) or sorted(
        name for name in registry.entity_names if backends.store.count_rows(Selection(entity_types=(name,)))
    )
    live = [entity_index(registry.entity(name).name, target.index_prefix) for name in types]
    # DataHub's V3 index (1.3+) beside V2: each V3 index holding a chosen type is rebuilt whole too
    v3 = v3_indices(backends.scan.search, target.index_prefix, registry)
    chosen = {registry.entity(name).name for name in types}
    live_v3 = sorted({v3[t] for t in chosen if t in v3})
    # DataHub's own zero-downtime reindex swaps V3 aliases as it swaps V2's: either one refuses
    refuse_full(backends.scan.store, backends.scan.search, target.index_prefix, [*live, *live_v3])
    with locked(request, backends.description, target.index_prefix, target.versioned_topic):
        writer = backends.open_writer()
        full = FullRebuild(
            backends.scan,
            writer,
            registry,
            target,
            request.state_dir,
            replace_concrete=request.replace_concrete,
            rate=request.rate,
            allow_delete=request.allow_delete,
            leave_out_invalid=request.leave_out_invalid,
            prefer_store=request.prefer_store,
        )
        invalid: list[Classified] = []
        for name in types:
            swapped = full.run(registry.entity(name).name)
            outcome.counts[f"entities {swapped.entity_type}"] = swapped.entities
            outcome.counts[f"caught up {swapped.entity_type}"] = swapped.caught_up
            outcome.verified_urns += swapped.entities
            outcome.notes.append(f"{swapped.live} -> {swapped.fresh} (verified in {swapped.rounds} round(s))")
            outcome.notes += swapped.notes
            invalid += swapped.invalid
        for v3_index in live_v3:
            held = sorted(t for t, index in v3.items() if index == v3_index)
            swapped = full.run_v3(v3_index, held)
            outcome.counts[f"entities {v3_index}"] = swapped.entities
            outcome.counts[f"caught up {v3_index}"] = swapped.caught_up
            verified = f"verified in {swapped.rounds} round(s)"
            outcome.notes.append(f"{swapped.live} (V3: {', '.join(held)}) -> {swapped.fresh} ({verified})")
            outcome.notes += swapped.notes
            invalid += swapped.invalid
    # promoted beside them: a malformed row is the row's to fix, reported as the scan does (exit 1)
    outcome.still_wrong = list({(c.finding.urn, c.finding.aspect): c for c in invalid}.values())
    outcome.counts.update(full.counts)
    if (kept := kept_note(full.counts)) is not None:
        outcome.notes.append(kept)
    return outcome
