"""DataHub's full rebuild of an entity type's index, on the staged-index engine (rebuild/staged.py).

Per entity type: `<live>_<epoch ms>` created with the live index's mappings and settings, every
entity of the type written from its rows (the auditor's own projection; what no rule derives, a
plugin's field, carried over from the live document), the rows written since the start caught up
(the live consumer keeps writing to the old index meanwhile), the new index verified with the
scan's own steps (what is still wrong is written again and checked again; never promoted while
wrong), then the alias moved in one `_aliases` request and the writes made meanwhile caught up
once more. A malformed row does not hold the promotion: no write can fix it; its document keeps
the old values of what its row cannot give, and it is reported `invalid` beside the swap. The old
index is kept when the live name was an alias (how to drop it or roll back is said); a new index
that was not promoted is deleted. A live name that is a concrete index can only be replaced
(removed in the same request, as DataHub's own BuildIndices does): that needs
`--replace-concrete-index`, and a copy of it is kept for the undo (rebuild/kept.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from auditor.backends.index_writer import BulkItem, IndexWriter
from auditor.core.model import Classified, Report, Selection, Verdict
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.naming import V3_TYPE_FIELD, document_id, document_id_v3, entity_index
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.run import ScanBackends, ScanOptions, ScanTarget, run_scan
from auditor.rebuild.checkpoint import Checkpoint
from auditor.rebuild.datahub.documents import KEPT
from auditor.rebuild.datahub.newer import behind_note
from auditor.rebuild.datahub.reindex import Reindexer, deployment_versions
from auditor.rebuild.datahub.rows import RowSource
from auditor.rebuild.kept import kept_note
from auditor.rebuild.staged import NotPromoted, cleared_note, ledger_of, old_kept, promote, refuse_concrete


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
    invalid: list[Classified] = field(default_factory=list)  # malformed rows: no write can fix them


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
        allow_delete: int | None = None,
        leave_out_invalid: bool = False,
        prefer_store: bool = False,
    ) -> None:
        self.backends, self.writer, self.registry, self.target = backends, writer, registry, target
        self.state_dir, self.replace_concrete, self.rate = state_dir, replace_concrete, rate
        self.allow_delete = allow_delete  # --allow-delete: documents the swap may drop from search
        self.leave_out_invalid = leave_out_invalid  # a malformed row's document: not in the new index
        # what documents hold of a later write than the store is carried into the new index, unless
        # the store's state is to win (a restored database)
        self.prefer_store = prefer_store
        self.versions = deployment_versions(backends, registry, target)
        self.counts: dict[str, int] = {}  # the loads' counts that a report names (fields kept unchecked)

    def run(self, entity_type: str) -> Swapped:
        return self._promote(DataHubStage(self, entity_type), entity_type)

    def run_v3(self, live: str, entity_types: list[str]) -> Swapped:
        """DataHub's V3 index `live` rebuilt whole: every entity type it holds (a search group's
        index holds several), its documents only."""
        return self._promote(DataHubV3Stage(self, live, entity_types), ", ".join(entity_types))

    def _promote(self, stage: DataHubStage, what: str) -> Swapped:
        done = promote(self.writer, stage, ledger_of(self.state_dir, stage.live), self.allow_delete)
        out = Swapped(what, done.live, done.fresh, done.old if done.is_alias else [])
        if done.cleared is not None:
            out.notes.append(cleared_note(done.cleared))
        if stage.kept:
            out.notes.append(f"{done.fresh}: {behind_note(stage.kept)}")
        out.entities, out.caught_up, out.rounds = done.loaded, done.caught_up, done.rounds
        out.invalid = stage.invalid
        if stage.left_out:
            out.notes.append(
                f"{len(stage.left_out)} documents of malformed rows left out of {done.fresh} "
                "(--leave-out-invalid): fix the rows, then reindex them"
            )
        if done.is_alias:
            out.notes.append(old_kept(done.old, done.live))
        if done.kept is not None:
            out.notes.append(kept_note(done.live, done.kept))
        return out


class DataHubStage:
    """One entity type's steps for the engine: DataHub's projection, written by the Reindexer."""

    # the verification counts only the findings of the new index (V3's scan pass); V2's counts
    # every finding of the type's scan
    own_index_only = False

    def __init__(self, full: FullRebuild, entity_type: str) -> None:
        self.full, self.entity_type = full, entity_type
        self.live = entity_index(entity_type, full.target.index_prefix)
        self.invalid: list[Classified] = []  # the last check's malformed rows
        self.left_out: list[str] = []  # their urns, when their documents were left out (asked)
        self.kept: dict[str, str] = {}  # urns whose later writes were kept (the store behind): why

    def fresh_name(self) -> str:
        return f"{self.live}_{int(time.time() * 1000)}"

    def locate(self, writer: IndexWriter) -> tuple[list[str], bool]:
        old, is_alias = writer.concrete(self.live)
        if not old:
            raise NotPromoted(f"{self.live} does not exist: nothing to rebuild it from (mappings, settings)")
        if not is_alias and not self.full.replace_concrete:
            raise refuse_concrete(self.live)
        return old, is_alias

    @property
    def types(self) -> list[str]:
        """The entity types the index holds (one in V2)."""
        return [self.entity_type]

    def load(self, index: str, since: datetime | None = None) -> int:
        selection = Selection(entity_types=tuple(self.types), since=since)
        urns = list(RowSource(self.full.backends.store, selection).urns())  # type: ignore[arg-type]
        return self._write(index, urns, counted=since is None)

    def rewrite(self, index: str, ids: list[str]) -> None:
        self._write(index, ids)

    def written_as(self, index: str) -> dict[str, Any]:
        """The Reindexer's options that write into `index` (V2: the type's index renamed)."""
        return {"entity_indices": {self.entity_type: index} if index != self.live else {}}

    def verified_as(self, index: str) -> dict[str, Any]:
        """The scan target's fields that read `index` in the verification scan."""
        return {"entity_indices": ((self.entity_type, index),)}

    def _write(self, index: str, urns: list[str], counted: bool = False) -> int:
        """The urns' documents from their rows into `index`; `counted`: the whole load, whose
        fields kept unchecked the report names (a catch-up or a rewrite would count them twice)."""
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
        if counted:
            for name, n in done.counts.items():
                if name.startswith(KEPT):
                    full.counts[name] = full.counts.get(name, 0) + n
        self.kept.update(done.kept)
        if done.failed:
            raise NotPromoted(
                f"{index}: {len(done.failed)} entities failed to load (e.g. {done.failed[0]}); not promoted"
            )
        # the shared system-metadata and graph indices too: a verification that does not see the
        # docs just written there finds them missing and spends its rounds writing them again
        full.writer.refresh_written()
        return len(urns)

    def still_wrong(self, index: str, before: datetime) -> list[str]:
        """A scan of the new index. An entity written since `before` differs because the live
        consumer applied that write to the old index: the catch-up after the swap writes it. A
        malformed row (`invalid`) is no write's to fix: kept aside, reported, never a reason to
        hold the promotion (its document keeps the old values of what the row cannot give)."""
        target = ScanTarget(**{**self.full.target.__dict__, **self.verified_as(index)})
        report = Report(started_at=datetime.now(UTC), scope=Selection(entity_types=tuple(self.types)))
        options = ScanOptions(sample_window=0, use_state=False, settle=0.0)
        run_scan(self.full.backends, self.full.registry, report, options, target)
        if not report.complete:
            raise BackendUnavailable(f"the verification scan of {index} did not complete")
        self.invalid = [c for c in report.findings if c.verdict == Verdict.INVALID]
        return sorted(
            {
                c.finding.urn
                for c in report.findings
                if c.verdict == Verdict.DIVERGED
                and (not self.own_index_only or c.finding.index == index)
                and not (c.finding.changed_at is not None and c.finding.changed_at >= before)
            }
        )

    def check(self, index: str) -> None:
        """The scan of the whole type was the check; asked (--leave-out-invalid), the documents of
        malformed rows are taken out of the new index before it is swapped in."""
        invalid = sorted({c.finding.urn for c in self.invalid})
        if not self.full.leave_out_invalid or not invalid:
            return
        items = [BulkItem("delete", index, self.doc_id(u), u) for u in invalid]
        failed = self.full.writer.bulk(items)
        if failed:
            raise NotPromoted(f"{index}: {len(failed)} documents of malformed rows could not be left out")
        self.full.writer.refresh(index)
        self.left_out = invalid

    def doc_id(self, urn: str) -> str:
        return document_id(urn)

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
        self.invalid, self.left_out = [], []
        self.kept = {}

    def doc_id(self, urn: str) -> str:
        return document_id_v3(urn)

    @property
    def types(self) -> list[str]:
        return self.held

    def written_as(self, index: str) -> dict[str, Any]:
        return {"v3": dict.fromkeys(self.held, index), "v3_only": True}

    def verified_as(self, index: str) -> dict[str, Any]:
        return {"entity_indices": tuple((t, index) for t in self.held), "type_field": V3_TYPE_FIELD}
