"""DataHub's full rebuild of an entity type's index, on the staged-index engine (rebuild/staged.py).

Per entity type: `<live>_<epoch ms>` created with the live index's mappings and settings, every
entity of the type written from its rows (the auditor's own projection), the rows written since
the start caught up (the live consumer keeps writing to the old index meanwhile), the new index
verified with the scan's own steps (what is still wrong is written again and checked again;
never promoted while wrong), then the alias moved in one `_aliases` request and the writes made
meanwhile caught up once more. The old index is kept when the live name was an alias (how to
drop it or roll back is said), and so is a new index that was not promoted (to look at). A live
name that is a concrete index can only be replaced (removed in the same request, as DataHub's
own BuildIndices does): that needs `--replace-concrete-index`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from auditor.backends.index_writer import IndexWriter
from auditor.core.model import Report, Selection, Verdict
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.naming import V3_TYPE_FIELD, entity_index
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.run import ScanBackends, ScanOptions, ScanTarget, run_scan
from auditor.rebuild.checkpoint import Checkpoint
from auditor.rebuild.datahub.newer import kept_note
from auditor.rebuild.datahub.reindex import Reindexer, deployment_versions
from auditor.rebuild.datahub.rows import RowSource
from auditor.rebuild.staged import NotPromoted, promote


@dataclass
class Swapped:
    """What a full rebuild of one entity type did."""

    entity_type: str
    live: str
    fresh: str
    old: list[str] = field(default_factory=list)  # the indices the alias pointed at (kept)
    entities: int = 0
    caught_up: int = 0
    rounds: int = 0
    notes: list[str] = field(default_factory=list)


class FullRebuild:
    def __init__(
        self,
        backends: ScanBackends,
        writer: IndexWriter,
        registry: Registry,
        target: ScanTarget,
        state_dir: Path,
        *,
        replace_concrete: bool = False,
        rate: float | None = None,
        prefer_store: bool = False,
    ) -> None:
        self.backends, self.writer, self.registry, self.target = backends, writer, registry, target
        self.state_dir, self.replace_concrete, self.rate = state_dir, replace_concrete, rate
        # what documents hold of a later write than the store is carried into the new index, unless
        # the store's state is to win (a restored database)
        self.prefer_store = prefer_store
        self.versions = deployment_versions(backends, registry, target)

    def run(self, entity_type: str) -> Swapped:
        return self._promote(DataHubStage(self, entity_type), entity_type)

    def run_v3(self, live: str, entity_types: list[str]) -> Swapped:
        """DataHub's V3 index `live` rebuilt whole: every entity type it holds (a search group's
        index holds several), its documents only."""
        return self._promote(DataHubV3Stage(self, live, entity_types), ", ".join(entity_types))

    def _promote(self, stage: DataHubStage, what: str) -> Swapped:
        done = promote(self.writer, stage)
        out = Swapped(what, done.live, done.fresh, done.old if done.is_alias else [])
        if stage.kept:
            out.notes.append(f"{done.fresh}: {kept_note(stage.kept)}")
        out.entities, out.caught_up, out.rounds = done.loaded, done.caught_up, done.rounds
        if done.is_alias:
            drop = f'curl -X DELETE "$SEARCH_URL"/{done.old[0]}'
            out.notes.append(
                f"the old index {', '.join(done.old)} is kept: drop it with {drop}, "
                f"or roll back by moving the alias {done.live} back to it"
            )
        return out


class DataHubStage:
    """One entity type's steps for the engine: DataHub's projection, written by the Reindexer."""

    keep_unpromoted = True  # an index that was not promoted is kept to look at
    # the verification counts only the findings of the new index (V3's scan pass); V2's counts
    # every finding of the type's scan
    own_index_only = False

    def __init__(self, full: FullRebuild, entity_type: str) -> None:
        self.full, self.entity_type = full, entity_type
        self.live = entity_index(entity_type, full.target.index_prefix)
        self.kept: dict[str, str] = {}  # urns whose later writes were kept (the store behind): why

    def fresh_name(self) -> str:
        return f"{self.live}_{int(time.time() * 1000)}"

    def locate(self, writer: IndexWriter) -> tuple[list[str], bool]:
        old, is_alias = writer.concrete(self.live)
        if not old:
            raise NotPromoted(f"{self.live} does not exist: nothing to rebuild it from (mappings, settings)")
        if not is_alias and not self.full.replace_concrete:
            raise NotPromoted(
                f"{self.live} is a concrete index, not an alias: the first swap must remove it",
                hint="rerun with --replace-concrete-index (it is deleted in the same _aliases request "
                "that adds the alias, as DataHub's BuildIndices does; take a snapshot first)",
            )
        return old, is_alias

    @property
    def types(self) -> list[str]:
        """The entity types the index holds (one in V2)."""
        return [self.entity_type]

    def load(self, index: str, since: datetime | None = None) -> int:
        selection = Selection(entity_types=tuple(self.types), since=since)
        urns = list(RowSource(self.full.backends.store, selection).urns())  # type: ignore[arg-type]
        return self._write(index, urns)

    def rewrite(self, index: str, ids: list[str]) -> None:
        self._write(index, ids)

    def written_as(self, index: str) -> dict[str, Any]:
        """The Reindexer's options that write into `index` (V2: the type's index renamed)."""
        return {"entity_indices": {self.entity_type: index} if index != self.live else {}}

    def verified_as(self, index: str) -> dict[str, Any]:
        """The scan target's fields that read `index` in the verification scan."""
        return {"entity_indices": ((self.entity_type, index),)}

    def _write(self, index: str, urns: list[str]) -> int:
        if not urns:
            return 0
        full = self.full
        done = Reindexer(
            full.backends.store,
            full.backends.search,
            full.writer,
            full.registry,
            Checkpoint("full", index, track_touched=False),
            full.state_dir / f"rebuild-full-{index}.json",
            index_prefix=full.target.index_prefix,
            rate=full.rate,
            versions=full.versions,
            prefer_store=full.prefer_store,
            **self.written_as(index),
        ).run(urns)
        self.kept.update(done.kept)
        if done.failed:
            raise NotPromoted(
                f"{index}: {len(done.failed)} entities failed to load (e.g. {done.failed[0]}); not promoted"
            )
        full.writer.refresh(index)
        return len(urns)

    def still_wrong(self, index: str, before: datetime) -> list[str]:
        """A scan of the new index. An entity written since `before` differs because the live
        consumer applied that write to the old index: the catch-up after the swap writes it."""
        target = ScanTarget(**{**self.full.target.__dict__, **self.verified_as(index)})
        report = Report(started_at=datetime.now(UTC), scope=Selection(entity_types=tuple(self.types)))
        options = ScanOptions(sample_window=0, use_state=False, settle=0.0)
        run_scan(self.full.backends, self.full.registry, report, options, target)
        if not report.complete:
            raise BackendUnavailable(f"the verification scan of {index} did not complete")
        return sorted(
            {
                c.finding.urn
                for c in report.findings
                if c.verdict in (Verdict.DIVERGED, Verdict.INVALID)
                and (not self.own_index_only or c.finding.index == index)
                and not (c.finding.changed_at is not None and c.finding.changed_at >= before)
            }
        )

    def check(self, index: str) -> None:
        return None  # the scan of the whole type was the check

    def swap_actions(self, fresh: str, old: list[str], is_alias: bool) -> list[dict[str, Any]]:
        actions: list[dict[str, Any]] = [{"add": {"index": fresh, "alias": self.live}}]
        if is_alias:
            return [{"remove": {"index": o, "alias": self.live}} for o in old] + actions
        return [*actions, {"remove_index": {"index": self.live}}]


class DataHubV3Stage(DataHubStage):
    """One V3 index's steps: every entity type it holds loaded from the rows, the V3 documents
    only (`_id` the urn's SHA-256, `_entityType` set), verified by the scan's V3 pass."""

    own_index_only = True

    def __init__(self, full: FullRebuild, live: str, entity_types: list[str]) -> None:
        self.full, self.live, self.held = full, live, entity_types
        self.entity_type = entity_types[0]
        self.kept = {}

    @property
    def types(self) -> list[str]:
        return self.held

    def written_as(self, index: str) -> dict[str, Any]:
        return {"v3": dict.fromkeys(self.held, index), "v3_only": True}

    def verified_as(self, index: str) -> dict[str, Any]:
        return {"entity_indices": tuple((t, index) for t in self.held), "type_field": V3_TYPE_FIELD}
