"""What `auditor watch` and `auditor probe` produce: their state at a moment, as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auditor.core.lag_table import GroupStatus
from auditor.core.model import Classified
from auditor.core.slo import GOOGLE_30D, BurnRate, BurnWindow, LatencyHistogram


@dataclass
class WatchConfig:
    """How `auditor watch` judges: the SLO, its windows, and what it may read and keep."""

    slo_seconds: float = 60.0
    objective: float = 0.99
    check_interval: float = 1.0  # the latency resolution
    pending_cap: int = 100_000
    give_up_seconds: float = 3600.0  # a late event is followed this long for its latency
    bucket_seconds: float = 60.0
    windows: tuple[BurnWindow, ...] = GOOGLE_30D
    index_prefix: str = ""
    mae_group: str = ""  # the consumer group that feeds the index ("": the platform's own)
    sample_interval: float = 5.0
    commit_interval: float = 5.0
    visibility_seconds: float = 3.0  # after the MAE group passed an event, search shows it within
    poll_batch: int = 500
    max_reads: int = 2000  # events read per check (two docs each): the load on the cluster
    # 1 in how many events is checked: 0 adapts (every event while the watch keeps up; 1 in 2,
    # 4, ... up to `max_every` while more than `behind_seconds` of events wait to be read, and at
    # least `behind_events` of them: a trickle with an event in flight is no burst)
    every: int = 0
    max_every: int = 64
    behind_seconds: float = 2.0
    behind_events: int = 1000
    findings_kept: int = 200


class Outcome:
    """How a watched event was settled (the `outcome` label of `auditor_watch_events_total`)."""

    GOOD = "good"  # reflected within the SLO
    LATE = "late"  # not reflected within the SLO (counted against the budget when it crossed it)
    NOT_CHECKED = "not_checked"  # spilled past the pending cap, undecodable, or not checkable
    SKIPPED = "skipped"  # already settled before a restart (from the committed offsets' metadata)
    SAMPLED_OUT = "sampled_out"  # left out of the sample a watch behind a burst checks (`every`)

    ALL = (GOOD, LATE, NOT_CHECKED, SKIPPED, SAMPLED_OUT)


@dataclass
class PartitionWatch:
    """The MAE group on one change-log partition, as the watch last saw it."""

    topic: str
    partition: int
    committed: int | None
    end: int
    time_lag_seconds: float
    status: GroupStatus


@dataclass
class WatchSnapshot:
    """The watch's figures at one moment (renderers read this, nothing else)."""

    taken_at: float
    started_at: float
    slo_seconds: float
    objective: float
    resolution_seconds: float  # the check interval: latencies are read at most this late
    histogram: LatencyHistogram
    burn: BurnRate
    outcomes: dict[str, int]  # Outcome -> events
    pending: int
    pending_cap: int
    consumed: int
    group: str
    mae_group: str
    partitions: list[PartitionWatch] = field(default_factory=list)
    findings: list[Classified] = field(default_factory=list)  # the latest, bounded
    finding_counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (verdict, subkind)
    notes: list[str] = field(default_factory=list)
    every: int = 1  # 1 in how many events is checked now (1: all)
    consumed_per_second: float = 0.0  # over the last check interval
    behind: int | None = None  # messages waiting to be read, as last fetched
    # with --heal-policy: the heal queue's counters (auditor/heal/queue.py `summary`); None: off
    heal: dict[str, Any] | None = None

    @property
    def settled(self) -> int:
        return self.outcomes.get(Outcome.GOOD, 0) + self.outcomes.get(Outcome.LATE, 0)

    @property
    def within_slo(self) -> float | None:
        """Share of the settled events reflected within the SLO (None: none settled yet)."""
        return self.outcomes.get(Outcome.GOOD, 0) / self.settled if self.settled else None

    def burn_rates(self) -> list[tuple[BurnWindow, float, float, bool]]:
        """Per alert window: long and short burn rates now, and whether the alert fires."""
        out = []
        for w in self.burn.windows:
            long_rate = self.burn.rate(self.taken_at, w.long_seconds)
            short_rate = self.burn.rate(self.taken_at, w.short_seconds)
            out.append((w, long_rate, short_rate, long_rate > w.factor and short_rate > w.factor))
        return out


@dataclass(frozen=True)
class ProbeResult:
    """One canary write timed from the write to the index."""

    urn: str
    aspect: str
    path: str  # gms | store (the GMS-like path: row, then MCL)
    slo_seconds: float
    written_at: float  # epoch seconds, when the write was acknowledged
    published_at: float | None  # the MCL's Kafka timestamp (None: not seen on the topic)
    reflected_at: float | None  # first read showing the index reflect it (None: not within timeout)
    resolution_seconds: float
    offset: int | None = None
    partition: int | None = None
    notes: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def latency(self) -> float | None:
        return None if self.reflected_at is None else self.reflected_at - self.written_at

    @property
    def within_slo(self) -> bool:
        return self.latency is not None and self.latency <= self.slo_seconds
