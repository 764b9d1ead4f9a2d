"""`auditor watch` and `auditor probe` on the real servers: a GMS-like writer on PostgreSQL, Kafka
and the schema registry, an MAE-like consumer with fault knobs, OpenSearch.

Everything here is this module's own: database watch_<id>, topics, the MAE-like group, the
watch's groups and the index prefix (the shared `datahub` database, topics and group untouched).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from auditor.api import ScanOptions, scan
from auditor.core.model import Verdict
from auditor.core.slo import GOOGLE_30D, scaled
from auditor.core.watch_model import Outcome, WatchSnapshot
from auditor.errors import ConfigError
from auditor.platforms.datahub.watch.run import Watch, WatchConfig
from auditor.platforms.datahub.watch.session import open_watch
from auditor.settings import Settings, load_settings
from sandbox.consumer import MaeConsumer
from sandbox.database import make_engine
from sandbox.endpoints import Endpoints
from sandbox.search import connect
from sandbox.topics import admin_client
from sandbox.writer import GmsWriter

pytestmark = pytest.mark.integration


class World:
    """A writer, a topic and a consumer of this module's own."""

    def __init__(self) -> None:
        self.endpoints = e = Endpoints.from_env()
        self.id = uuid.uuid4().hex[:8]
        self.prefix = f"w{self.id}"
        self.topic = f"watch_{self.id}_MetadataChangeLog_Versioned_v1"
        self.timeseries = f"watch_{self.id}_MetadataChangeLog_Timeseries_v1"
        self.mae_group = f"watch_{self.id}_mae"
        self.groups: list[str] = [self.mae_group]
        self.database = f"watch_{self.id}"
        self.admin_url = e.pg_url.rsplit("/", 1)[0] + "/postgres"
        with create_engine(self.admin_url, isolation_level="AUTOCOMMIT").connect() as conn:
            conn.execute(text(f"CREATE DATABASE {self.database}"))
        self.db_url = make_url(e.pg_url).set(database=self.database).render_as_string(hide_password=False)
        self.engine = make_engine(self.db_url)
        self.writer = GmsWriter(self.engine, e, versioned_topic=self.topic, timeseries_topic=self.timeseries)
        self.search = connect("opensearch", e)
        self.consumer = MaeConsumer(
            "opensearch",
            e,
            group_id=self.mae_group,
            topics=(self.topic, self.timeseries),
            index_prefix=self.prefix,
            batch_size=20,
        )
        self.consumer.start()
        self.n = 0

    def group(self) -> str:
        name = f"watch_{self.id}_w{len(self.groups)}"
        self.groups.append(name)
        return name

    def settings(self, **over: Any) -> Settings:
        e = self.endpoints
        return load_settings(
            env={},
            **{
                "store_url": self.db_url,
                "search_url": e.opensearch,
                "kafka_bootstrap": e.kafka,
                "schema_registry_url": e.registry,
                "index_prefix": self.prefix,
                "mcl_versioned_topic": self.topic,
                "mcl_timeseries_topic": self.timeseries,
                "mae_consumer_group": self.mae_group,
                "index_visibility_seconds": 1.0,
                **over,
            },
        )

    def write(self, count: int, pause: float = 0.0, **kw: Any) -> list[str]:
        urns = []
        for _ in range(count):
            self.n += 1
            urn = f"urn:li:tag:{self.prefix}-t{self.n}"
            self.writer.write(urn, "tagProperties", {"name": f"t{self.n}", "description": f"d{self.n}"}, **kw)
            urns.append(urn)
            time.sleep(pause)
        return urns

    def close(self) -> None:
        self.consumer.stop()
        self.writer.close()
        self.engine.dispose()
        for index in self.search.list_indices(f"{self.prefix}_*"):
            self.search.delete_index(index)
        with create_engine(self.admin_url, isolation_level="AUTOCOMMIT").connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)"))
        admin = admin_client(self.endpoints.kafka)
        for future in admin.delete_topics([self.topic, self.timeseries]).values():
            future.result(timeout=30)
        for future in admin.delete_consumer_groups(self.groups).values():
            try:
                future.result(timeout=30)
            except Exception:  # a group that never committed does not exist
                pass


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    w = World()
    w.write(2)  # the topics' schema subject exists, the indices too
    assert w.consumer.drain(60)
    yield w
    w.close()


@pytest.fixture(autouse=True)
def healthy(world: World) -> Iterator[None]:
    world.consumer.reset_faults()
    yield
    world.consumer.reset_faults()
    assert world.consumer.drain(120), "the consumer did not catch up after the test"


def config(world: World, **over: Any) -> WatchConfig:
    base: dict[str, Any] = {
        "slo_seconds": 30.0,
        "check_interval": 0.25,
        "index_prefix": world.prefix,
        "mae_group": world.mae_group,
        "sample_interval": 0.5,
        "commit_interval": 0.5,
        "visibility_seconds": 1.0,
        "bucket_seconds": 1.0,
    }
    return WatchConfig(**{**base, **over})


class Running:
    """A watch turning in a thread until stopped."""

    def __init__(self, watch: Watch) -> None:
        self.watch, self.done = watch, threading.Event()
        self.result: WatchSnapshot | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.result = self.watch.run(stop=self.done.is_set)

    def wait_assigned(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.watch.tail.assigned) < 4:  # the versioned topic's partitions
            assert time.monotonic() < deadline, "the watch's group got no partitions"
            time.sleep(0.1)

    def until(self, predicate: Any, timeout: float) -> WatchSnapshot:
        deadline = time.monotonic() + timeout
        while True:
            snap = self.watch.snapshot()
            if predicate(snap) or time.monotonic() > deadline:
                return snap
            time.sleep(0.2)

    def stop(self) -> WatchSnapshot:
        self.done.set()
        self.thread.join(30)
        assert self.result is not None
        return self.result


def settled(n: int) -> Any:
    return lambda s: s.outcomes[Outcome.GOOD] + s.outcomes[Outcome.LATE] >= n


def measure(world: World, count: int, pause: float) -> WatchSnapshot:
    with open_watch(world.settings(), config(world), world.group()) as w:
        running = Running(w)
        running.wait_assigned()
        world.write(count, pause)  # a new tag: its key aspect's MCL, then tagProperties'
        running.until(settled(2 * count), 90)
        return running.stop()


def test_a_slowed_consumer_moves_the_percentiles(world: World) -> None:
    healthy = measure(world, 20, 0.05)
    world.consumer.rate(4)  # 4 MCLs a second while 20 arrive within a second: a queue builds
    slowed = measure(world, 20, 0.05)
    for snap in (healthy, slowed):
        assert snap.outcomes[Outcome.GOOD] == 40 and snap.outcomes[Outcome.NOT_CHECKED] == 0
    fast = {q: healthy.histogram.quantile(q) or 0.0 for q in (0.5, 0.95, 0.99)}
    slow = {q: slowed.histogram.quantile(q) or 0.0 for q in (0.5, 0.95, 0.99)}
    print(f"healthy p50/p95/p99 {fast}; slowed to 4/s {slow}")
    # the 20th waits for 19 before it at 4/s: about 5 s; a healthy consumer shows it within ~1-2 s
    assert slow[0.95] > 3.0 and slow[0.95] > 2 * fast[0.95]
    assert slow[0.5] > fast[0.5]


def test_a_stalled_consumer_fires_the_burn_alert_and_its_events_are_stalled(world: World) -> None:
    fast = config(world, slo_seconds=2.0, windows=scaled(GOOGLE_30D, 0.002), bucket_seconds=0.2)
    with open_watch(world.settings(), fast, world.group()) as w:
        running = Running(w)
        running.wait_assigned()
        world.write(5)
        running.until(settled(5), 30)
        assert not any(f for *_, f in w.snapshot().burn_rates())
        world.consumer.stall()
        world.write(10)

        # the ten turn late over one or more checks (a loaded machine spreads them): the slower
        # windows may fire first, on the first of them; the page fires once enough are late
        def paging(s: WatchSnapshot) -> bool:
            return any(f for w, _, _, f in s.burn_rates() if w.name == "page-1h")

        snap = running.until(paging, 20)
        firing = {w.name for w, _, _, f in snap.burn_rates() if f}
        assert "page-1h" in firing, snap.burn_rates()

        # Burrow's STALL needs the group's offset still over its whole window (10 samples, 5 s
        # here, longer on a loaded machine): events late before that are in flight, those late
        # after it are stalled. An event a second until one is; every event written since the
        # stall is late once its deadline has passed (a few ms apart: over more than one round)
        def stalled_and_late(s: WatchSnapshot) -> bool:
            return s.outcomes[Outcome.LATE] >= 10 and any(f.verdict == Verdict.STALLED for f in s.findings)

        deadline = time.monotonic() + 60
        while not stalled_and_late(snap := w.snapshot()) and time.monotonic() < deadline:
            world.write(1)
            running.until(stalled_and_late, 1.0)
        running.stop()
    assert snap.outcomes[Outcome.LATE] >= 10, snap.outcomes
    verdicts = [f.verdict for f in snap.findings]
    assert Verdict.STALLED in verdicts and set(verdicts) <= {Verdict.STALLED, Verdict.IN_FLIGHT}, [
        f.evidence.reason for f in snap.findings
    ]
    # each partition has its own window: once one showed STALL, its later late events are stalled
    # (across partitions the order of the findings is the order their deadlines passed in)
    first = next(f for f in snap.findings if f.verdict == Verdict.STALLED)
    later = snap.findings[snap.findings.index(first) :]
    same = [f.verdict for f in later if f.evidence.partition == first.evidence.partition]
    assert same and set(same) == {Verdict.STALLED}, [f.evidence.reason for f in later]


def test_the_cli_exits_1_with_the_alert_in_its_metrics_while_the_consumer_is_stalled(
    world: World, tmp_path: Path
) -> None:
    metrics = tmp_path / "watch.prom"
    world.consumer.stall()
    stop = threading.Event()

    def keep_writing() -> None:
        while not stop.is_set():
            world.write(1)
            time.sleep(0.3)

    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    try:
        done = cli(
            world,
            "watch",
            "--group",
            world.group(),
            "--slo",
            "1",
            "--interval",
            "0.25",
            "--window-scale",
            "0.01",  # a 3 s short window: a write every 0.3 s (slower on a loaded machine) stays in it
            "--duration",
            "8",
            "--every",
            "1",
            "--metrics-file",
            str(metrics),
            "--json",
        )
    finally:
        stop.set()
        writer.join(10)
    assert done.returncode == 1, done.stderr
    text_ = metrics.read_text()
    assert 'auditor_watch_burn_alert{alert="page-1h",severity="page",factor="14.4"} 1' in text_
    assert 'auditor_watch_propagation_seconds_bucket{le="+Inf"}' in text_
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert last["schema"] == "watch/1" and last["events"]["late"] >= 1


def test_the_mae_group_is_refused_by_the_cli(world: World) -> None:
    done = cli(world, "watch", "--group", world.mae_group, "--duration", "1")
    assert done.returncode == 2 and "MAE consumer" in done.stderr


def test_a_dropped_mcl_is_invisible_to_the_watch_and_the_scan_calls_it_never_published(world: World) -> None:
    with open_watch(world.settings(), config(world), world.group()) as w:
        running = Running(w)
        running.wait_assigned()
        (dropped,) = world.write(1, drop_mcl=True)
        (kept,) = world.write(1)
        snap = running.until(settled(2), 30)
        time.sleep(1.0)
        snap = running.stop()
    # the watch saw the published write's two MCLs (key aspect, tagProperties), and nothing else
    assert snap.consumed == 2 and snap.outcomes[Outcome.GOOD] == 2 and snap.pending == 0
    time.sleep(1.0)
    report = scan(
        world.settings(), options=ScanOptions(grace=300.0, settle=0.5, sample_window=1.0, use_state=False)
    )
    by_urn = {c.finding.urn: c for c in report.findings}
    assert kept not in by_urn
    assert by_urn[dropped].verdict == Verdict.DIVERGED
    assert by_urn[dropped].subkind == "event_never_published"


def test_a_restart_resumes_from_its_commits_without_losing_or_counting_twice(world: World) -> None:
    group = world.group()
    urns = [f"urn:li:tag:{world.prefix}-r{i}" for i in range(10)]
    held = urns[2]
    for i, urn in enumerate(urns):  # they exist before: the watch sees one MCL per write below
        world.writer.write(urn, "tagProperties", {"name": f"r{i}", "description": "zero"})
    assert world.consumer.drain(60)
    world.consumer.skip_index_write({held})  # its doc is never written: it stays open
    # the held event waits through both watches: an objective it cannot miss on a slow machine
    with open_watch(world.settings(), config(world, slo_seconds=300.0), group) as w:
        running = Running(w)
        running.wait_assigned()
        for i, urn in enumerate(urns):
            world.writer.write(urn, "tagProperties", {"name": f"r{i}", "description": "first"})
        first = running.until(settled(9), 30)
        assert first.outcomes[Outcome.GOOD] == 9 and first.pending == 1
        first = running.stop()  # commits: below the held event, the settled ones listed above it
    world.consumer.skip_index_write(None)
    world.writer.restate(held, "tagProperties")  # a newer MCL for it, after the restart point
    with open_watch(world.settings(), config(world, slo_seconds=300.0), group) as w:
        running = Running(w)
        second = running.until(settled(2), 30)
        time.sleep(1.0)
        second = running.stop()
    # the held event and its restate are counted now; the others were counted before and skipped
    assert second.outcomes[Outcome.GOOD] == 2, second.outcomes
    assert first.outcomes[Outcome.GOOD] + second.outcomes[Outcome.GOOD] == 11
    assert second.consumed == second.outcomes[Outcome.SKIPPED] + 2
    assert second.pending == 0


def test_open_watch_refuses_the_mae_group(world: World) -> None:
    with pytest.raises(ConfigError, match="MAE consumer"):
        with open_watch(world.settings(), config(world), world.mae_group):
            pass


def cli(world: World, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    e = world.endpoints
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
    env.update(
        AUDITOR_SEARCH_URL=e.opensearch,
        AUDITOR_KAFKA_BOOTSTRAP=e.kafka,
        AUDITOR_SCHEMA_REGISTRY_URL=e.registry,
        AUDITOR_INDEX_PREFIX=world.prefix,
        AUDITOR_MCL_VERSIONED_TOPIC=world.topic,
        AUDITOR_MAE_CONSUMER_GROUP=world.mae_group,
        AUDITOR_STORE_URL=world.db_url,
    )
    return subprocess.run(
        [sys.executable, "-m", "auditor.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def test_the_probe_times_the_canary_end_to_end_and_exits_1_over_slo(world: World) -> None:
    refused = cli(world, "probe", "--via-store")
    assert refused.returncode == 2 and "--apply" in refused.stderr
    done = cli(world, "probe", "--apply", "--via-store", "--slo", "20", "--interval", "0.2", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["within_slo"] and 0 < result["latency_seconds"] < 20
    assert result["publish_seconds"] is not None and result["publish_seconds"] <= result["latency_seconds"]
    print(f"probe: {result}")
    world.consumer.pause()
    late = cli(world, "probe", "--apply", "--via-store", "--slo", "2", "--timeout", "3", "--json")
    assert late.returncode == 1, late.stderr
    assert json.loads(late.stdout)["latency_seconds"] is None
    world.consumer.resume()
    gone = cli(world, "probe", "--apply", "--via-store", "--remove")
    assert gone.returncode == 0, gone.stderr
    assert world.consumer.drain(60)
    from auditor.platforms.datahub.watch.probe import CANARY_URN

    docs = world.search.search(f"{world.prefix}_datasetindex_v2", {"term": {"urn": CANARY_URN}})
    assert docs == []
    with world.engine.connect() as conn:
        assert (
            conn.execute(
                text("SELECT count(*) FROM metadata_aspect_v2 WHERE urn = :u"), {"u": CANARY_URN}
            ).scalar()
            == 0
        )


@pytest.mark.parametrize("engine", ["opensearch", "elasticsearch"])
def test_the_watch_reads_what_search_sees_not_the_translog(engine: str) -> None:
    from auditor.backends.search import SearchIndex
    from auditor.backends.searchable import searchable_docs

    e = Endpoints.from_env()
    raw = connect(engine, e)
    index = f"watch_{uuid.uuid4().hex[:8]}_searchable"
    raw.ensure_index(index, {"dynamic": True})
    try:
        raw.client.indices.put_settings(index=index, body={"index": {"refresh_interval": "-1"}})
        raw.client.index(index=index, id="a", body={"v": 1})
        search = SearchIndex(e.search_url(engine), engine)
        assert searchable_docs(search, index, ["a"]) == {}  # written, not yet refreshed
        assert search.get_many(index, ["a"]) == {"a": {"v": 1}}  # a real-time GET sees it already
        raw.refresh(index)
        assert searchable_docs(search, index, ["a"]) == {"a": {"v": 1}}
        assert searchable_docs(search, f"{index}_absent", ["a"]) == {}
    finally:
        raw.delete_index(index)


HEAL_POLICY = """\
[heal]
enabled = true

[guards]
require_release = false  # this module's world writes no deployment rows: judged by the newest rules

[[rule]]
kind = "*"
action = "heal"
after_scans = 2          # the watch's sighting and the re-check's scan
after = "2s"
"""


def test_the_watch_heals_a_lost_index_write_it_saw_late_and_never_a_slow_one(
    world: World, tmp_path: Path
) -> None:
    """`auditor watch --heal-policy`'s queue: both writes are late (the consumer paused past the
    SLO, so both are in flight when they turn late); the re-check's scan, after the policy's
    persistence time, proves the one whose index write was lost diverged and the heal repairs it
    (journaled); the slow one has converged by then and is never healed."""
    from auditor.backends.journal import find, read
    from auditor.heal.loop import HealOutcome, heal_once
    from auditor.heal.policy import parse_policy
    from auditor.heal.queue import HealQueue
    from sandbox.naming import entity_doc_id, entity_index

    lost, slow = world.write(2)
    assert world.consumer.drain(60)
    settings = world.settings(state_file=str(tmp_path / "state.sqlite"))
    heals: list[HealOutcome] = []

    def heal(*args: Any, **kw: Any) -> HealOutcome:
        heals.append(heal_once(*args, **kw))
        return heals[-1]

    options = ScanOptions(grace=300.0, settle=0.5, sample_window=1.0)
    lines: list[str] = []  # what the CLI prints on stderr, one line per heal
    queue = HealQueue(settings, parse_policy(HEAL_POLICY), every=1.0, options=options, state_dir=tmp_path,
                      wait_seconds=60, heal=heal, log=lines.append)  # fmt: skip
    with open_watch(settings, config(world, slo_seconds=1.0), world.group()) as w:
        w.listen(queue.hand)
        queue.run(tick=0.2)
        running = Running(w)
        running.wait_assigned()
        world.consumer.skip_index_write({lost})  # consumed and committed, its document not written
        world.consumer.pause()  # both wait past the SLO: late, in flight, handed to the queue
        for urn, said in ((lost, "lost"), (slow, "slow")):
            world.writer.write(urn, "tagProperties", {"name": urn.rsplit("-", 1)[1], "description": said})
        running.until(lambda s: queue.summary()["urns"]["handed"] == 2, 30)
        world.consumer.resume()
        urns = lambda: queue.summary()["urns"]  # noqa: E731
        deadline = time.monotonic() + 60
        while urns()["healed"] + urns()["converged"] < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        snap = running.stop()
    queue.stop(30)
    said = queue.summary()
    assert said["urns"]["handed"] == 2 and said["urns"]["healed"] == 1, (said, lines)
    assert said["urns"]["converged"] == 1 and said["queued"] == 0, (said, lines)
    assert not any(said["refused"].values()), (said, lines)
    assert {f.finding.urn for f in snap.findings} == {lost, slow}  # what the watch saw late
    healed = [h for h in heals if h.healed_urns]
    assert [h.healed_urns for h in healed] == [[lost]], [(h.healed_urns, h.left, h.undecided) for h in heals]
    assert not any(slow in h.healed_urns for h in heals)  # 0 false heals
    (run,) = healed
    index = entity_index("tag", world.prefix)
    journal = find(tmp_path / "journal", run.journal or "")
    assert run.verified and journal is not None, run.repair
    imaged = {(d["i"], d["id"]) for e in read(journal).entries if e.get("t") == "before" for d in e["docs"]}
    assert (index, entity_doc_id(lost)) in imaged  # the document as it was, before the heal wrote it
    world.search.refresh(index)
    assert (world.search.get(index, entity_doc_id(lost)) or {}).get("description") == "lost"  # healed


def test_the_watchs_heal_is_refused_by_the_consumer_guard_while_the_consumer_is_stalled(
    world: World, tmp_path: Path
) -> None:
    """A write late because the consumer stalled: the re-check's heal is refused by the consumer
    guard (counted in the watch's metrics), nothing is written, and the entity stays queued for
    the next heal rather than being dropped."""
    from auditor.heal.policy import parse_policy
    from auditor.heal.queue import HealQueue
    from auditor.reports.watch_metrics import render

    (urn,) = world.write(1)
    assert world.consumer.drain(60)
    settings = world.settings(state_file=str(tmp_path / "state.sqlite"))
    options = ScanOptions(grace=300.0, settle=0.5, sample_window=2.0)
    policy = parse_policy(HEAL_POLICY.replace('after = "2s"', 'after = "0s"'))
    queue = HealQueue(settings, policy, every=1.0, options=options, state_dir=tmp_path, wait_seconds=30)
    with open_watch(settings, config(world, slo_seconds=1.0), world.group()) as w:
        w.listen(queue.hand)
        queue.run(tick=0.2)
        running = Running(w)
        running.wait_assigned()
        world.consumer.stall()
        world.writer.write(urn, "tagProperties", {"name": "stalled", "description": "while stalled"})
        snap = running.until(lambda s: queue.summary()["refused"]["consumer"] >= 1, 45)
        snap = running.stop()
    queue.stop(30)
    said = queue.summary()
    assert said["refused"]["consumer"] >= 1 and said["urns"]["healed"] == 0, said
    assert said["urns"]["handed"] == 1 and said["queued"] == 1, said  # kept for the next heal
    assert not (tmp_path / "journal").exists()  # nothing written, nothing journaled
    snap.heal = said
    assert 'auditor_watch_heal_refused_total{guard="consumer"}' in render(snap)
