"""What a repair is asked to do, on any platform: `auditor.api.rebuild` takes it, each platform's
rebuild reads it (DataHub's pipeline: rebuild/datahub/run.py; OpenMetadata's: rebuild/openmetadata/)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from auditor.core.model import Classified, Selection, Verdict


@dataclass
class RebuildRequest:
    """What to repair, how, and how carefully."""

    mode: str  # plan | replay | reindex
    findings: Sequence[Classified] | None = None  # from a scan report (judged findings)
    selection: Selection | None = None  # or by filters (every version-0 row they select)
    include: frozenset[Verdict] = frozenset({Verdict.DIVERGED})
    apply: bool = False
    rate: float | None = None  # rows (replay) or entities (reindex) per second
    batch: int = 1000
    resume: bool = False
    break_stale_lock: bool = False
    wait_seconds: float = 300.0  # replay: how long to wait for the consumer before verifying
    # replay: produce although the MAE group has no member or does not move (it will start soon)
    allow_stopped_consumer: bool = False
    verify: bool = True
    full: bool = False  # reindex: a fresh index per entity type, swapped in after verification
    replace_concrete: bool = False  # full: a live concrete index may be replaced by the alias
    # documents the repair may delete whatever their share of an index (None: the default
    # limit, a small share of each index: core/sanity.py)
    allow_delete: int | None = None
    leave_out_invalid: bool = False  # full: a malformed row's document is left out, not carried over
    # write the store's state over documents holding a later write than it (a restored database
    # whose state is to win); without it they are left as they are
    prefer_store: bool = False
    state_dir: Path = Path(".")
    progress: Callable[[str, int], None] | None = None
    # one shard of the repair (i, n): the urns of a shard plan's range i (`urn_range`, pushed down
    # into every page), or without a plan the urns whose crc32 is i modulo n (as `scan --shard`)
    shard: tuple[int, int] | None = None
    urn_range: tuple[str | None, str | None] | None = None
    # the write journal (auditor/backends/journal.py): one file per applied run in this directory
    # (None: `journal` beside the checkpoints, in state_dir); journals older than journal_keep_days
    # are deleted when a repair starts (None: kept for ever)
    journal_dir: Path | None = None
    journal_keep_days: float | None = 30.0

    @property
    def journal_path(self) -> Path:
        return self.journal_dir if self.journal_dir is not None else self.state_dir / "journal"

    def sharded(self, selection: Selection) -> Selection:
        """`selection` narrowed to this request's shard (itself when unsharded)."""
        if self.shard is None:
            return selection
        urns = tuple(u for u in selection.urns if self.in_shard(u))
        return replace(selection, shard=self.shard, urn_range=self.urn_range, urns=urns)

    def in_shard(self, urn: str) -> bool:
        return Selection(shard=self.shard, urn_range=self.urn_range).in_shard(urn)
