"""The watch loop over fakes: reflection, lateness and verdicts, the pending cap, resume."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import pytest

from auditor.core.model import Verdict
from auditor.core.records import OffsetSample
from auditor.core.watch_model import Outcome
from auditor.errors import ConfigError
from auditor.platforms.datahub.backends.mcl_tail import TailedMessage, refuse_mae_group
from auditor.platforms.datahub.naming import document_id, system_metadata_id
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.watch.run import Watch, WatchConfig

TOPIC = "t"


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.load()


def mcl(name: str, description: str, observed: int) -> dict[str, Any]:
    return {
        "entityUrn": f"urn:li:tag:{name}",
        "aspectName": "tagProperties",
        "changeType": "UPSERT",
        "aspect": {
            "value": json.dumps({"name": name, "description": description}).encode(),
            "contentType": "application/json",
        },
        "systemMetadata": {"runId": "r", "lastObserved": observed},
    }


class FakeTail:
    group = "auditor-watch-test"
    topics: tuple[str, ...] = (TOPIC,)

    def __init__(self, committed: tuple[int, str | None] = (-1001, None)) -> None:
        self.queue: list[TailedMessage] = []
        self.assigned = {(TOPIC, 0): committed}
        self.commits: list[Any] = []
        self.waiting: int | None = None  # what `behind()` says (None: unknown)

    def poll(self, limit: int, timeout: float, every: int = 1) -> list[TailedMessage]:
        out, self.queue = self.queue[:limit], self.queue[limit:]
        # as MclTail does: only the offsets divisible by `every` decoded
        return [m if m.offset % every == 0 else replace(m, value=None, sampled_out=True) for m in out]

    def behind(self) -> int | None:
        return self.waiting

    def commit(self, offsets: Any) -> None:
        self.commits.append(list(offsets))


class FakeIndex:
    """Docs by index and id; `apply(value)` is what a consumer would write."""

    def __init__(self) -> None:
        self.docs: dict[str, dict[str, dict[str, Any]]] = {}

    def apply(self, value: dict[str, Any]) -> None:
        urn, aspect = value["entityUrn"], value["aspectName"]
        body = json.loads(value["aspect"]["value"])
        doc = self.docs.setdefault("tagindex_v2", {}).setdefault(document_id(urn), {"urn": urn})
        doc.update(name=body["name"], description=body["description"], hasDescription=True)
        sm = value["systemMetadata"]
        self.docs.setdefault("system_metadata_service_v1", {})[system_metadata_id(urn, aspect)] = {
            "urn": urn,
            "aspect": aspect,
            "runId": sm["runId"],
            "lastUpdated": sm["lastObserved"],
        }

    def read(self, index: str, ids: list[str]) -> dict[str, dict[str, Any]]:
        return {i: self.docs[index][i] for i in ids if i in self.docs.get(index, {})}


def watch(
    registry: Registry,
    tail: FakeTail,
    index: FakeIndex,
    samples: list[OffsetSample] | None = None,
    **config: Any,
) -> Watch:
    return Watch(
        registry,
        tail,
        index.read,
        (lambda: samples) if samples is not None else None,
        WatchConfig(**{"slo_seconds": 10.0, "bucket_seconds": 1.0, **config}),
    )


def test_latency_is_measured_from_the_kafka_timestamp_to_the_read(registry: Registry) -> None:
    tail, index = FakeTail(), FakeIndex()
    w = watch(registry, tail, index)
    now = time.time()
    values = [mcl(f"a{i}", "d", i) for i in range(3)]
    tail.queue = [TailedMessage(TOPIC, 0, i, now - 4.0, v) for i, v in enumerate(values)]
    w.ingest(tail.poll(10, 0))
    w.check(now)
    assert len(w.pending) == 3 and w.snapshot().outcomes[Outcome.GOOD] == 0
    for v in values[:2]:
        index.apply(v)
    w.check(now + 1)
    snap = w.snapshot()
    assert snap.outcomes[Outcome.GOOD] == 2 and snap.pending == 1
    assert snap.histogram.total == 2 and snap.histogram.sum == pytest.approx(10.0)
    w.commit()
    assert tail.commits[-1] == [(TOPIC, 0, 2, "next=3;open=2")]


def test_a_doc_with_other_values_is_not_reflected(registry: Registry) -> None:
    tail, index = FakeTail(), FakeIndex()
    w = watch(registry, tail, index)
    now = time.time()
    index.apply(mcl("a", "old", 1))
    w.ingest([TailedMessage(TOPIC, 0, 0, now, mcl("a", "new", 2))])
    w.check(now)
    assert len(w.pending) == 1


def test_late_events_burn_the_budget_and_get_the_scans_verdicts(registry: Registry) -> None:
    tail, index = FakeTail(), FakeIndex()
    at = time.time()
    stalled = [OffsetSample(TOPIC, 0, 0, 0, 5, 1, at - 20 + i) for i in range(3)]
    w = watch(registry, tail, index, samples=stalled)
    for _ in range(3):
        w.observe_group()
    w.ingest([TailedMessage(TOPIC, 0, i, at - 30, mcl(f"s{i}", "d", i)) for i in range(5)])
    w.check(at)
    snap = w.snapshot()
    assert snap.outcomes[Outcome.LATE] == 5 and snap.within_slo == 0.0
    assert {f.verdict for f in snap.findings} == {Verdict.STALLED}
    assert all(firing for *_, firing in snap.burn_rates()[:2])  # 100x the budget: both pages
    # late events are settled for the SLI: committed past, and not counted again
    w.commit()
    assert tail.commits[-1] == [(TOPIC, 0, 5, "next=5")]
    index.apply(mcl("s0", "d", 0))
    w.check(at + 1)
    assert w.snapshot().outcomes[Outcome.LATE] == 5 and w.histogram.total == 1  # its latency, late


def test_consumed_but_not_applied_is_diverged(registry: Registry) -> None:
    tail, index = FakeTail(), FakeIndex()
    at = time.time()
    past = [OffsetSample(TOPIC, 0, 9, 0, 9, 1, at - 15)]
    w = watch(registry, tail, index, samples=past)
    w.observe_group()
    w.ingest([TailedMessage(TOPIC, 0, 3, at - 30, mcl("x", "d", 1))])
    w.check(at)
    (found,) = w.snapshot().findings
    assert found.verdict == Verdict.DIVERGED and found.subkind == "missing_document"


def test_the_pending_cap_spills_to_not_checked(registry: Registry) -> None:
    tail, index = FakeTail(), FakeIndex()
    w = watch(registry, tail, index, pending_cap=4)
    w.ingest([TailedMessage(TOPIC, 0, i, time.time(), mcl(f"c{i}", "d", i)) for i in range(10)])
    snap = w.snapshot()
    assert snap.pending == 4 and snap.outcomes[Outcome.NOT_CHECKED] == 6


def test_a_newer_event_settles_the_one_it_replaced(registry: Registry) -> None:
    tail, index = FakeTail(), FakeIndex()
    w = watch(registry, tail, index)
    now = time.time()
    first, second = mcl("r", "one", 1), mcl("r", "two", 2)
    w.ingest([TailedMessage(TOPIC, 0, 0, now - 2, first), TailedMessage(TOPIC, 0, 1, now - 1, second)])
    index.apply(second)
    w.check(now)
    snap = w.snapshot()
    assert snap.outcomes[Outcome.GOOD] == 2 and snap.pending == 0
    assert snap.histogram.sum == pytest.approx(3.0)


def test_a_restart_skips_what_was_settled_above_the_committed_offset(registry: Registry) -> None:
    tail, index = FakeTail(committed=(2, "next=5;open=2,4")), FakeIndex()
    w = watch(registry, tail, index)
    now = time.time()
    w.ingest([TailedMessage(TOPIC, 0, i, now, mcl(f"z{i}", "d", i)) for i in range(2, 7)])
    snap = w.snapshot()
    assert snap.outcomes[Outcome.SKIPPED] == 1 and snap.pending == 4  # 3 was counted before


def test_the_mae_group_is_refused() -> None:
    with pytest.raises(ConfigError, match="MAE consumer"):
        refuse_mae_group("generic-mae-consumer-job-client", "generic-mae-consumer-job-client")
    refuse_mae_group("auditor-watch", "generic-mae-consumer-job-client")


def test_each_check_reads_at_most_max_reads_oldest_first_and_still_counts_the_unread_late(
    registry: Registry,
) -> None:
    tail, index = FakeTail(), FakeIndex()
    asked: list[list[str]] = []

    def read(name: str, ids: list[str]) -> dict[str, dict[str, Any]]:
        asked.append(ids)
        return index.read(name, ids)

    w = Watch(registry, tail, read, None, WatchConfig(slo_seconds=10.0, bucket_seconds=1.0, max_reads=2))
    at = time.time()
    values = [mcl(f"m{i}", "d", i) for i in range(6)]
    w.ingest([TailedMessage(TOPIC, 0, i, at - 20, v) for i, v in enumerate(values)])
    w.check(at)
    assert all(len(ids) == 2 for ids in asked)  # two events: an entity doc and a system-metadata doc each
    assert {document_id("urn:li:tag:m0"), document_id("urn:li:tag:m1")} == set(asked[0]) | set(asked[1]) - {
        system_metadata_id(f"urn:li:tag:m{i}", "tagProperties") for i in range(6)
    }
    snap = w.snapshot()
    assert snap.outcomes[Outcome.LATE] == 6 and len(snap.findings) == 6  # read or not, all are late


def test_a_fixed_sample_checks_one_event_in_k_and_commits_past_them_all(registry: Registry) -> None:
    tail, index = FakeTail(), FakeIndex()
    w = watch(registry, tail, index, every=4)
    now = time.time()
    values = [mcl(f"k{i}", "d", i) for i in range(40)]
    for v in values:
        index.apply(v)
    tail.queue = [TailedMessage(TOPIC, 0, i, now - 1.0, v) for i, v in enumerate(values)]
    w.step()
    w.check(now)
    snap = w.snapshot()
    assert snap.outcomes[Outcome.SAMPLED_OUT] == 30 and snap.outcomes[Outcome.GOOD] == 10
    assert snap.histogram.total == 10 and snap.every == 4 and snap.consumed == 40
    w.commit()
    assert tail.commits[-1][0][2] == 40  # every offset settled: the sampled-out ones too


def test_behind_a_burst_the_sample_narrows_and_widens_again_once_caught_up(registry: Registry) -> None:
    from reports.watch_console import summary
    from reports.watch_metrics import render as metrics

    tail, index = FakeTail(), FakeIndex()
    w = watch(registry, tail, index, max_every=8, behind_seconds=2.0)
    t = 1000.0
    assert w.every == 1
    seen = []
    for _ in range(5):  # 1,000 consumed a second, 50,000 waiting: 50 s behind
        t += 1.0
        w.consumed += 1000
        tail.waiting = 50_000
        w.adapt(t)
        seen.append(w.every)
    assert seen == [2, 4, 8, 8, 8] and w.rate == pytest.approx(1000.0)
    snap = w.snapshot()
    assert summary(snap)["sampling"] == {"every": 8, "consumed_per_second": 1000.0, "behind": 50_000}
    assert "auditor_watch_check_every 8" in metrics(snap)
    seen = []
    for _ in range(7):  # caught up: under half a second waiting; the sample widens every 3rd check
        t += 1.0
        w.consumed += 1000
        tail.waiting = 100
        w.adapt(t)
        seen.append(w.every)
    assert seen == [8, 8, 4, 4, 4, 2, 2]
    tail.waiting = 1500  # between the two bounds: held where it is
    for _ in range(4):
        t += 1.0
        w.consumed += 1000
        w.adapt(t)
    assert w.every == 2


def test_a_trickle_with_an_event_in_flight_is_checked_whole(registry: Registry) -> None:
    # a quiet topic: one event every few seconds, one fetched but not yet consumed at the check;
    # by time alone that is "seconds behind" (1 waiting at 0.3 a second), yet no burst
    tail, index = FakeTail(), FakeIndex()
    w = watch(registry, tail, index, max_every=64, behind_seconds=2.0)
    t = 1000.0
    for consumed in (0, 1, 0, 1, 1, 0):
        t += 3.0
        w.consumed += consumed
        tail.waiting = 1
        w.adapt(t)
        assert w.every == 1, (w.rate, w.behind)
    tail.waiting = 5_000  # thousands waiting and nothing consumed: that is behind
    t += 3.0
    w.adapt(t)
    assert w.every == 2


def test_a_fixed_sample_or_an_unknown_backlog_is_not_adapted(registry: Registry) -> None:
    tail, index = FakeTail(), FakeIndex()
    fixed = watch(registry, tail, index, every=1)
    unknown = watch(registry, FakeTail(), index)
    tail.waiting = 10**6
    for t in (1.0, 2.0, 3.0):
        fixed.consumed += 10
        fixed.adapt(t)
        unknown.adapt(t)
    assert fixed.every == 1 and unknown.every == 1 and unknown.behind is None
