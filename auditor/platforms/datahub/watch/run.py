"""The watch loop: tail -> pending -> read the index each interval -> settle -> commit."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from auditor.core.lag_table import CommitWindow, LagTable
from auditor.core.model import Classified
from auditor.core.records import OffsetSample
from auditor.core.slo import BurnRate, LatencyHistogram
from auditor.core.watch_model import Outcome, PartitionWatch, WatchConfig, WatchSnapshot
from auditor.platforms.datahub.naming import MAE_CONSUMER_GROUP
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.watch.judge import late_finding
from auditor.platforms.datahub.watch.ledger import PartitionLedger, Resume
from auditor.platforms.datahub.watch.pending import Older, PendingEvents
from auditor.platforms.datahub.watch.reflect import Reflection, WatchedEvent, doc_ids, event_of, reflects


class Tail(Protocol):
    """What the loop needs of the consumer (backends/mcl_tail.MclTail; a fake in unit tests)."""

    group: str
    topics: tuple[str, ...]
    assigned: dict[tuple[str, int], tuple[int, str | None]]

    def poll(self, limit: int, timeout: float, every: int = 1) -> list[Any]: ...

    def commit(self, offsets: Any) -> None: ...

    def behind(self) -> int | None: ...


UNREAD = Reflection(False, None, "not read yet: behind older pending events on its partition")
DocReader = Callable[[str, list[str]], Mapping[str, Mapping[str, Any]]]  # index, ids -> docs
Sampler = Callable[[], list[OffsetSample]]  # the MAE group's offsets on the watched topics


@dataclass
class _Counters:
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(Outcome.ALL, 0))
    findings: dict[tuple[str, str], int] = field(default_factory=dict)


class Watch:
    """Measures how long each MCL takes to show in the index; bounded memory however long."""

    def __init__(
        self,
        registry: Registry,
        tail: Tail,
        read_docs: DocReader,
        sample: Sampler | None,
        config: WatchConfig,
    ) -> None:
        if not config.mae_group:  # DataHub's own MAE group unless told otherwise
            config = replace(config, mae_group=MAE_CONSUMER_GROUP)
        self.registry, self.tail, self.read_docs, self.sample, self.config = (
            registry,
            tail,
            read_docs,
            sample,
            config,
        )
        self.histogram = LatencyHistogram()
        self.burn = BurnRate(config.objective, config.windows, config.bucket_seconds)
        self.pending = PendingEvents(config.pending_cap)
        self.ledgers: dict[tuple[str, int], PartitionLedger] = {}
        self.resumes: dict[tuple[str, int], Resume] = {}
        self.counters = _Counters()
        self.findings: deque[Classified] = deque(maxlen=config.findings_kept)
        self.lag_tables: dict[tuple[str, int], LagTable] = {}
        self.windows: dict[tuple[str, int], CommitWindow] = {}
        self.samples: dict[tuple[str, int], OffsetSample] = {}
        self.consumed = 0
        self.started_at = time.time()
        self._last = {"check": 0.0, "sample": 0.0, "commit": time.monotonic()}
        self.notes: list[str] = []
        # 1 in how many events is checked (adapted each check unless the config fixes it)
        self.every = max(1, config.every)
        self.behind: int | None = None
        self.rate = 0.0  # events consumed a second over the last check interval
        self._rate_from = (time.monotonic(), 0)
        self._caught_up = 0  # checks in a row with little waiting: the sample widens again after 3
        self._listeners: list[Callable[[Classified], None]] = []

    def listen(self, on_late: Callable[[Classified], None]) -> None:
        """Call `on_late` with each finding as an event turns late (the heal queue's hand)."""
        self._listeners.append(on_late)

    # -- reading ---------------------------------------------------------------------------
    def _resume_of(self, where: tuple[str, int]) -> Resume | None:
        if where not in self.resumes and where in self.tail.assigned:
            committed, metadata = self.tail.assigned[where]
            self.resumes[where] = Resume.parse(committed, metadata) if committed >= 0 else Resume(-1, set())
        return self.resumes.get(where)

    def ingest(self, messages: list[Any]) -> None:
        for msg in messages:
            where = (msg.topic, msg.partition)
            ledger = self.ledgers.setdefault(where, PartitionLedger())
            resume = self._resume_of(where)
            self.consumed += 1
            if getattr(msg, "sampled_out", False):  # not decoded: left out of a burst's sample
                self.counters.outcomes[Outcome.SAMPLED_OUT] += 1
                ledger.read(msg.offset, opened=False)
                continue
            if resume is not None and resume.skip(msg.offset):
                self.counters.outcomes[Outcome.SKIPPED] += 1
                ledger.read(msg.offset, opened=False)
                continue
            event = None
            if msg.value is not None:
                event = event_of(
                    self.registry, msg.topic, msg.partition, msg.offset, msg.timestamp, msg.value
                )
            if event is None or not self.pending.add(event):
                self.counters.outcomes[Outcome.NOT_CHECKED] += 1
                ledger.read(msg.offset, opened=False)
                continue
            ledger.read(msg.offset, opened=True)

    # -- checking --------------------------------------------------------------------------
    def _to_read(self, held: list[tuple[WatchedEvent, list[Older]]]) -> set[int]:
        """Which events this round reads: the oldest `max_reads` by offset, shared among the
        partitions (a consumer applies a partition in order: the newer cannot show first)."""
        if len(held) <= self.config.max_reads:
            return {id(e) for e, _ in held}
        by_partition: dict[tuple[str, int], list[WatchedEvent]] = {}
        for event, _ in held:
            by_partition.setdefault((event.topic, event.partition), []).append(event)
        queues = [sorted(events, key=lambda e: e.offset) for events in by_partition.values()]
        chosen: set[int] = set()
        depth = 0
        while len(chosen) < self.config.max_reads:
            for q in queues:
                if depth < len(q) and len(chosen) < self.config.max_reads:
                    chosen.add(id(q[depth]))
            depth += 1
        return chosen

    def check(self, now: float | None = None) -> None:
        """Read the docs of the pending events (at most `max_reads`, oldest first); settle what
        shows; count what is late, read or not (an unread event is behind older ones)."""
        held = list(self.pending.items())
        if not held:
            return
        chosen = self._to_read(held)
        wanted: dict[str, set[str]] = {}
        for event, _ in held:
            if id(event) in chosen:
                for index, doc_id in doc_ids(event, self.config.index_prefix):
                    wanted.setdefault(index, set()).add(doc_id)
        docs = {index: self.read_docs(index, sorted(ids)) for index, ids in wanted.items()}
        read_at = time.time() if now is None else now
        for event, older in held:
            if id(event) not in chosen:
                self._not_yet(event, older, UNREAD, read_at)
                continue
            (ei, eid), (si, sid) = doc_ids(event, self.config.index_prefix)
            seen = reflects(self.registry, event, docs[ei].get(eid), docs[si].get(sid))
            if seen.reflected:
                self._reflected(event, read_at)
            else:
                self._not_yet(event, older, seen, read_at)

    def _count(self, topic: str, partition: int, offset: int, latency: float, at: float) -> None:
        good = latency <= self.config.slo_seconds
        self.counters.outcomes[Outcome.GOOD if good else Outcome.LATE] += 1
        self.burn.record(at, good)
        self.ledgers[(topic, partition)].settle(offset)

    def _reflected(self, event: WatchedEvent, at: float) -> None:
        for old in self.pending.remove(event):
            self.histogram.observe(at - old.produced_at)
            if not old.counted:
                self._count(old.topic, old.partition, old.offset, at - old.produced_at, at)
        self.histogram.observe(at - event.produced_at)
        if not event.counted:
            self._count(event.topic, event.partition, event.offset, at - event.produced_at, at)

    def _not_yet(self, event: WatchedEvent, older: list[Older], seen: Reflection, at: float) -> None:
        age = at - event.produced_at
        for i, old in enumerate(older):
            if not old.counted and at - old.produced_at > self.config.slo_seconds:
                self._count(old.topic, old.partition, old.offset, at - old.produced_at, at)
                older[i] = Older(old.topic, old.partition, old.offset, old.produced_at, True)
        if not event.counted and age > self.config.slo_seconds:
            event.counted = True
            self._count(event.topic, event.partition, event.offset, age, at)
            self._finding(event, seen, age, at)
        elif event.counted and age > self.config.give_up_seconds:
            self.pending.remove(event)  # followed long enough: its latency stays unknown

    def _finding(self, event: WatchedEvent, seen: Reflection, age: float, at: float) -> None:
        where = (event.topic, event.partition)
        window = self.windows.get(where)
        found = late_finding(
            event,
            seen,
            age,
            at,
            self.samples.get(where),
            window.status(at) if window else None,
            self.config.visibility_seconds,
            self.config.index_prefix,
        )
        self.findings.append(found)
        for on_late in self._listeners:
            on_late(found)
        key = (found.verdict.value, found.subkind)
        self.counters.findings[key] = self.counters.findings.get(key, 0) + 1

    # -- keeping up -------------------------------------------------------------------------
    def adapt(self, now: float | None = None) -> None:
        """The consume rate over the last interval, and 1 in how many events to check next: twice
        as few while more than `behind_seconds` of events (and `behind_events` at least) wait to be
        read, twice as many again once three checks in a row found little waiting (under a quarter
        of that)."""
        mono = time.monotonic() if now is None else now
        since, consumed = self._rate_from
        if mono > since:
            self.rate = (self.consumed - consumed) / (mono - since)
        self._rate_from = (mono, self.consumed)
        behind = getattr(self.tail, "behind", None)
        self.behind = behind() if callable(behind) else None
        if self.config.every or self.behind is None:
            return
        if self.behind < self.config.behind_events:
            waiting = 0.0  # a few events in flight on a quiet topic: checking them all is cheap
        elif self.rate > 0:
            waiting = self.behind / self.rate
        else:
            waiting = float("inf")
        if waiting > self.config.behind_seconds:
            self._caught_up = 0
            if self.every < self.config.max_every:
                self.every = min(self.config.max_every, self.every * 2)
        elif waiting < self.config.behind_seconds / 4:
            self._caught_up += 1
            if self.every > 1 and self._caught_up >= 3:
                self._caught_up = 0
                self.every //= 2

    # -- the MAE group ---------------------------------------------------------------------
    def observe_group(self) -> None:
        if self.sample is None:
            return
        for s in self.sample():
            where = (s.topic, s.partition)
            self.samples[where] = s
            self.lag_tables.setdefault(where, LagTable()).add(s.end, s.taken_at)
            if s.committed is not None:
                self.windows.setdefault(where, CommitWindow()).add(
                    s.committed, max(0, s.end - s.committed), s.taken_at, s.members
                )

    # -- committing ------------------------------------------------------------------------
    def commit(self) -> None:
        offsets = []
        for (topic, partition), ledger in self.ledgers.items():
            point = ledger.commit()
            if point is not None:
                offsets.append((topic, partition, point[0], point[1]))
        self.tail.commit(offsets)

    # -- the loop --------------------------------------------------------------------------
    def step(self) -> None:
        """One turn: read what came, and check, sample and commit when each is due."""
        c = self.config
        timeout = min(0.2, c.check_interval)
        self.ingest(self.tail.poll(c.poll_batch, timeout, self.every))
        mono = time.monotonic()
        if mono - self._last["sample"] >= c.sample_interval:
            self._last["sample"] = mono
            self.observe_group()
        if mono - self._last["check"] >= c.check_interval:
            self._last["check"] = mono
            self.check()
            self.adapt(mono)
        if mono - self._last["commit"] >= c.commit_interval:
            self._last["commit"] = mono
            self.commit()

    def run(
        self,
        seconds: float | None = None,
        every: float = 5.0,
        show: Callable[[WatchSnapshot], None] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> WatchSnapshot:
        """Turn until `seconds` passed or `stop()` says so; `show` a snapshot `every` seconds."""
        deadline = None if seconds is None else time.monotonic() + seconds
        shown = time.monotonic()
        try:
            while (deadline is None or time.monotonic() < deadline) and not (stop and stop()):
                self.step()
                if show is not None and time.monotonic() - shown >= every:
                    shown = time.monotonic()
                    show(self.snapshot())
        finally:
            self.commit()
        return self.snapshot()

    def snapshot(self) -> WatchSnapshot:
        now = time.time()
        partitions = []
        for where, s in sorted(self.samples.items()):
            table, window = self.lag_tables.get(where), self.windows.get(where)
            committed = s.committed if s.committed is not None else s.start
            lag_s = table.time_lag(committed, s.end, now) if table else 0.0
            partitions.append(
                PartitionWatch(
                    s.topic,
                    s.partition,
                    s.committed,
                    s.end,
                    lag_s,
                    window.status(now) if window else CommitWindow().status(now),
                )
            )
        return WatchSnapshot(
            taken_at=now,
            started_at=self.started_at,
            slo_seconds=self.config.slo_seconds,
            objective=self.config.objective,
            resolution_seconds=self.config.check_interval,
            histogram=self.histogram,
            burn=self.burn,
            outcomes=dict(self.counters.outcomes),
            pending=len(self.pending),
            pending_cap=self.pending.cap,
            consumed=self.consumed,
            group=self.tail.group,
            mae_group=self.config.mae_group,
            partitions=partitions,
            findings=list(self.findings),
            finding_counts=dict(self.counters.findings),
            notes=list(self.notes),
            every=self.every,
            consumed_per_second=self.rate,
            behind=self.behind,
        )
