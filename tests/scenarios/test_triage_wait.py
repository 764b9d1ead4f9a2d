"""The visibility wait of a DataHub triage behind a busy consumer (one that applies and commits an
event every few hundred milliseconds, as a deployment's MAE consumer does): taken only when an
event of the urn, or of one of its edges' destinations, is among what the group consumed within
the delay; against the real stack. The waits are counted, not timed: the re-observation's sleep
is recorded instead of slept."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from faults import _tags, hard_delete
from world import World

from auditor.api import triage
from auditor.platforms.datahub.scan import run as scan_run
from auditor.platforms.datahub.scan.reobserve import COMMIT_CLOCK_MARGIN, Observer
from auditor.platforms.datahub.urns import urn_partition
from sandbox.topics import admin_client

pytestmark = pytest.mark.integration

VISIBILITY = 3.0
LONG_VISIBILITY = 30.0


def partitions(world: World) -> int:
    topic = world.topics[0]
    return len(admin_client(world.endpoints.kafka).list_topics(topic, timeout=10).topics[topic].partitions)


def fresh_urn(world: World, partition: int, n: int, name: str) -> str:
    """A dataset urn nothing in the catalog points to, on `partition`."""
    return next(
        u
        for u in (
            f"urn:li:dataset:(urn:li:dataPlatform:hive,{world.prefix}.{name}_{i},PROD)" for i in range(9999)
        )
        if urn_partition(u, n) == partition
    )


@contextmanager
def busy(world: World, urns: list[str]) -> Iterator[None]:
    """The consumer kept busy: an event of each urn every 0.2 s, applied and committed, from
    longer ago than the visibility delay (the broker's log of the group's commits then shows where
    the group stood before it) until the block ends."""
    stop = threading.Event()

    def move() -> None:
        i = 0
        while not stop.is_set():
            for urn in urns:
                world.writer.write(urn, "globalTags", _tags(f"busy-{i}"))
            i += 1
            stop.wait(0.2)

    thread = threading.Thread(target=move, daemon=True)
    began = time.monotonic()
    thread.start()
    try:
        # the condition is the time itself: commits older than the delay in the broker's log
        while time.monotonic() - began < VISIBILITY + COMMIT_CLOCK_MARGIN + 1.5:
            time.sleep(0.1)
        yield
    finally:
        stop.set()
        thread.join(30)
    assert world.consumer.drain(60)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World("postgres", "opensearch", tmp_path_factory.mktemp("triage-wait"), n=30)
    try:
        yield w
    finally:
        w.close()


def test_an_orphans_triage_behind_a_busy_consumer_waits_only_for_its_own_events(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(scan_run, "Observer", functools.partial(Observer, sleep=slept.append))
    try:
        settings = world.settings(index_visibility_seconds=VISIBILITY)
        n = partitions(world)
        (orphan,) = hard_delete(world, which=2)  # rows gone behind DataHub's back: no event
        here = fresh_urn(world, urn_partition(orphan, n), n, "busy")

        with busy(world, [here]):  # other entities' events on the orphan's partition
            out = triage(settings, orphan, settle=0)
        assert out.verdict == "diverged", out.findings
        edges = [f.finding for f in out.findings if f.finding.kind.value == "orphan_edge"]
        assert {f.finding.kind.value for f in out.findings} >= {"orphan_document", "orphan_edge"}
        assert slept == []  # what was consumed lately was not the orphan's: visible long since

        # an event of an edge's destination consumed lately (its deletion would remove the edge)
        destination = str(edges[0].details["destination"])
        there = fresh_urn(world, urn_partition(destination, n), n, "there")
        with busy(world, [here, there, destination]):
            triage(settings, orphan, settle=0)
        assert len(slept) == 1 and 0 < slept[0] <= VISIBILITY, slept
    finally:
        world.consumer.drain(60)


def test_a_change_younger_than_the_visibility_delay_is_waited_for_whatever_the_commit_log_says(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write the consumer applied and committed a moment ago may not be searchable yet: its
    entity is read again after the wait even when the broker's log of commits (here made to say
    nothing was consumed lately) would clear it; without the wait the consumer's own write was
    called consumed but not applied (a repair's verification under live writes said so)."""
    indices = world.search.list_indices(f"{world.prefix}_*")
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the wait recorded; the index's refresh is what it waits for
        slept.append(seconds)
        world.refresh()

    monkeypatch.setattr(scan_run, "Observer", functools.partial(Observer, sleep=sleep))
    monkeypatch.setattr(Observer, "_consumed_lately", lambda self, urns: set())
    try:
        # a delay longer than this machine may take between the write and the triage's sample
        settings = world.settings(index_visibility_seconds=LONG_VISIBILITY)
        urn = world.of_type("dataset")[0].urn  # not the orphan the test above makes (the third)
        for index in indices:  # the consumer's writes stay unsearchable until a refresh
            world.search.client.indices.put_settings(index=index, body={"index": {"refresh_interval": "-1"}})
        world.writer.write(urn, "globalTags", _tags("fresh"))
        assert world.consumer.drain(30)  # applied and committed, not yet searchable
        out = triage(settings, urn, settle=0)
        assert len(slept) == 1 and 0 < slept[0] <= LONG_VISIBILITY + COMMIT_CLOCK_MARGIN, slept
        assert out.verdict != "diverged", [str(c) for c in out.findings]
    finally:
        for index in indices:
            world.search.client.indices.put_settings(index=index, body={"index": {"refresh_interval": "1s"}})
