"""A full rebuild of an entity type's index: fresh index, load, catch up, verify, one atomic swap.

Per entity type: create `<live>_<epoch ms>` with the live index's mappings and settings (no
replicas, no refresh while loading), note the time, write every entity of the type from its
rows, restore the settings, catch up on the rows written since the start (the live consumer
keeps writing to the old index meanwhile), verify the new index with the scan's own steps
(what is still wrong is rebuilt again, up to 3 rounds: never promoted while wrong), then move
the alias in one `_aliases` request and catch up once more on the writes made during the swap.
The old index is kept when the live name was an alias; how to drop it or roll back is said.
A live name that is a concrete index can only be replaced (removed in the same request, as
DataHub's own BuildIndices does): that needs `--replace-concrete-index`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from auditor.backends.index_writer import IndexWriter
from auditor.core.model import Report, Selection, Verdict
from auditor.core.naming import entity_index
from auditor.core.registry import Registry
from auditor.errors import AuditorError, BackendUnavailable
from auditor.rebuild.checkpoint import Checkpoint
from auditor.rebuild.reindex import Reindexer
from auditor.rebuild.rows import RowSource
from auditor.scan.run import ScanBackends, ScanOptions, ScanTarget, run_scan

ROUNDS = 3
SKEW = timedelta(seconds=5)  # a catch-up starts this much before the instant it catches up from


class NotPromoted(AuditorError):
    """The new index was not swapped in (it is kept, unverified or unswappable)."""

    exit_code = 3


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
    ) -> None:
        self.backends, self.writer, self.registry, self.target = backends, writer, registry, target
        self.state_dir, self.replace_concrete, self.rate = state_dir, replace_concrete, rate

    def run(self, entity_type: str) -> Swapped:
        live = entity_index(entity_type, self.target.index_prefix)
        old, is_alias = self.writer.concrete(live)
        if not old:
            raise NotPromoted(f"{live} does not exist: nothing to rebuild it from (mappings, settings)")
        if not is_alias and not self.replace_concrete:
            raise NotPromoted(
                f"{live} is a concrete index, not an alias: the first swap must remove it",
                hint="rerun with --replace-concrete-index (it is deleted in the same _aliases request "
                "that adds the alias, as DataHub's BuildIndices does; take a snapshot first)",
            )
        fresh = f"{live}_{int(time.time() * 1000)}"
        out = Swapped(entity_type, live, fresh, old if is_alias else [])
        source_settings = self.writer.create_like(old[0], fresh)
        started = datetime.now(UTC)
        rows = RowSource(self.backends.store, Selection(entity_types=(entity_type,)))  # type: ignore[arg-type]
        out.entities = self._load(entity_type, fresh, list(rows.urns()))
        self.writer.put_settings(
            fresh,
            {
                "number_of_replicas": source_settings.get("number_of_replicas", "1"),
                "refresh_interval": source_settings.get("refresh_interval", "1s"),
            },
        )
        caught_up_at = datetime.now(UTC)
        out.caught_up = self._catch_up(entity_type, fresh, started)
        out.rounds = self._verify(entity_type, fresh, caught_up_at)
        actions: list[dict[str, Any]] = [{"add": {"index": fresh, "alias": live}}]
        if is_alias:
            actions = [{"remove": {"index": o, "alias": live}} for o in old] + actions
        else:
            actions.append({"remove_index": {"index": live}})
        self.writer.swap(actions)
        # the writes since the last catch-up (the consumer applied them to the old index): again
        out.caught_up += self._catch_up(entity_type, live, caught_up_at)
        if is_alias:
            drop = f'curl -X DELETE "$SEARCH_URL"/{old[0]}'
            out.notes.append(
                f"the old index {', '.join(old)} is kept: drop it with {drop}, "
                f"or roll back by moving the alias {live} back to it"
            )
        return out

    def _reindexer(self, entity_type: str, index: str, name: str) -> Reindexer:
        overrides = (
            {entity_type: index} if index != entity_index(entity_type, self.target.index_prefix) else {}
        )
        return Reindexer(
            self.backends.store,
            self.backends.search,
            self.writer,
            self.registry,
            Checkpoint("full", name, track_touched=False),
            self.state_dir / f"rebuild-full-{name}.json",
            index_prefix=self.target.index_prefix,
            entity_indices=overrides,
            rate=self.rate,
        )

    def _load(self, entity_type: str, index: str, urns: list[str]) -> int:
        if not urns:
            return 0
        done = self._reindexer(entity_type, index, index).run(urns)
        if done.failed:
            raise NotPromoted(
                f"{index}: {len(done.failed)} entities failed to load (e.g. {done.failed[0]}); not promoted"
            )
        self.writer.refresh(index)
        return len(urns)

    def _catch_up(self, entity_type: str, index: str, since: datetime) -> int:
        selection = Selection(entity_types=(entity_type,), since=since - SKEW)
        urns = list(RowSource(self.backends.store, selection).urns())  # type: ignore[arg-type]
        return self._load(entity_type, index, urns)

    def _verify(self, entity_type: str, fresh: str, since: datetime) -> int:
        """Scan the new index until it holds no divergence (rebuilding what is wrong), or give up.

        An entity written since `since` differs because the live consumer applied that write to
        the old index: the catch-up after the swap writes it; anything older is a real miss.
        """
        target = ScanTarget(**{**self.target.__dict__, "entity_indices": ((entity_type, fresh),)})
        for round_no in range(1, ROUNDS + 1):
            report = Report(started_at=datetime.now(UTC), scope=Selection(entity_types=(entity_type,)))
            options = ScanOptions(sample_window=0, use_state=False, settle=0.0)
            run_scan(self.backends, self.registry, report, options, target)
            live_writes = since - SKEW
            wrong = sorted(
                {
                    c.finding.urn
                    for c in report.findings
                    if c.verdict in (Verdict.DIVERGED, Verdict.INVALID)
                    and not (c.finding.changed_at is not None and c.finding.changed_at >= live_writes)
                }
            )
            if not report.complete:
                raise BackendUnavailable(f"the verification scan of {fresh} did not complete")
            if not wrong:
                return round_no
            self._load(entity_type, fresh, wrong)
        raise NotPromoted(f"{fresh} still differs from the rows after {ROUNDS} rounds: kept, not promoted")
