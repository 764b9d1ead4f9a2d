"""Watch benchmark: how fast `auditor watch` settles events against the raw limit of reading them,
and whether its memory stays flat however many events pass.

    python bench/watch_bench.py --n 20000 --memory-events 1000000

1. Throughput (real Kafka + schema registry + OpenSearch, all of its own: a topic, groups and an
   index prefix, removed afterwards): N tagProperties MCLs produced to a 4-partition topic, their
   documents written by the sandbox's indexer (so every event is already reflected). Raw limit:
   a bare consumer reading the N messages. Watch: its consumer, decoder and reads of the index
   (`--max-reads` per `--interval`) until all N are settled. The ratio is watch / raw.
2. Memory (no services): events fed through the watch's loop from a fake tail, a tenth never
   reflected, with a pending cap of 10,000; RSS printed every tenth of the run.

Not a timed test: figures go to stdout, one JSON line last.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Consumer, Producer  # noqa: E402

from auditor.backends.search import SearchIndex  # noqa: E402
from auditor.backends.searchable import searchable_docs  # noqa: E402
from auditor.core.watch_model import Outcome  # noqa: E402
from auditor.platforms.datahub.backends.mcl_tail import TailedMessage  # noqa: E402
from auditor.platforms.datahub.naming import (  # noqa: E402
    document_id,
    entity_index,
    system_metadata_id,
    system_metadata_index,
)
from auditor.platforms.datahub.registry.registry import Registry  # noqa: E402
from auditor.platforms.datahub.watch.run import Watch, WatchConfig  # noqa: E402
from auditor.platforms.datahub.watch.session import open_watch  # noqa: E402
from auditor.settings import load_settings  # noqa: E402
from sandbox.avro import MclCodec  # noqa: E402
from sandbox.endpoints import Endpoints  # noqa: E402
from sandbox.indexer import IndexUpdater  # noqa: E402
from sandbox.mcl import build_mcl, read_mcl  # noqa: E402
from sandbox.search import connect  # noqa: E402
from sandbox.topics import admin_client, ensure_topics  # noqa: E402


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def mcl(i: int, prefix: str) -> dict[str, Any]:
    urn = f"urn:li:tag:{prefix}-{i}"
    sm = {
        "lastObserved": 1_700_000_000_000 + i,
        "runId": "bench",
        "lastRunId": "bench",
        "registryName": None,
        "registryVersion": None,
        "version": "1",
    }
    return build_mcl(
        entity_type="tag",
        urn=urn,
        change_type="UPSERT",
        aspect_name="tagProperties",
        aspect={"name": f"t{i}", "description": f"d{i}"},
        system_metadata=sm,
        previous_aspect=None,
        previous_system_metadata=None,
        created_time_ms=1_700_000_000_000,
        actor="urn:li:corpuser:b",
    )


def _watch_setup(
    e: Endpoints, prefix: str, topic: str, interval: float, max_reads: int, slo: float
) -> tuple[Any, WatchConfig]:
    """The settings and the watch's configuration of a bench run (its own prefix and topic)."""
    settings = load_settings(
        env={},
        search_url=e.opensearch,
        kafka_bootstrap=e.kafka,
        schema_registry_url=e.registry,
        index_prefix=prefix,
        mcl_versioned_topic=topic,
    )
    cfg = WatchConfig(
        slo_seconds=slo,
        check_interval=interval,
        max_reads=max_reads,
        index_prefix=prefix,
        sample_interval=5,
        commit_interval=1,
    )
    return settings, cfg


def _remove(e: Endpoints, search: Any, prefix: str, topic: str, groups: list[str]) -> None:
    """What a bench run made: its indices, its topic, its groups."""
    for index in search.list_indices(f"{prefix}_*"):
        search.delete_index(index)
    admin = admin_client(e.kafka)
    for future in admin.delete_topics([topic]).values():
        future.result(timeout=30)
    for future in admin.delete_consumer_groups(groups).values():
        try:
            future.result(timeout=30)
        except Exception:
            pass


def throughput(n: int, interval: float, max_reads: int) -> dict[str, Any]:
    e = Endpoints.from_env()
    bid = uuid.uuid4().hex[:8]
    topic, prefix = f"wbench_{bid}_MetadataChangeLog_Versioned_v1", f"wb{bid}"
    groups = [f"wbench_{bid}_raw", f"wbench_{bid}_watch"]
    ensure_topics(e.kafka, {topic: 4})
    codec, search = MclCodec(e.registry), connect("opensearch", e)
    try:
        producer = Producer({"bootstrap.servers": e.kafka, "partitioner": "murmur2_random", "linger.ms": 20})
        updater = IndexUpdater(search, prefix)
        for i in range(n):
            record = mcl(i, prefix)
            producer.produce(topic, key=record["entityUrn"].encode(), value=codec.encode(topic, record))
            updater.apply(read_mcl(record), flush=False)
            if i % 1000 == 999:
                producer.poll(0)
                updater.flush()
        updater.flush()
        producer.flush(60)
        for index in search.list_indices(f"{prefix}_*"):
            search.refresh(index)
        raw = Consumer(
            {
                "bootstrap.servers": e.kafka,
                "group.id": groups[0],
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        raw.subscribe([topic])
        got, t0 = 0, None
        while got < n:  # timed from the call that brought the first messages (not the group join)
            before = time.perf_counter()
            batch = raw.consume(500, 5.0)
            if t0 is None and batch:
                t0 = before
            got += sum(1 for m in batch if m.error() is None)
        raw_s = time.perf_counter() - (t0 or time.perf_counter())
        raw.close()
        settings, cfg = _watch_setup(e, prefix, topic, interval, max_reads, slo=3600)
        with open_watch(settings, cfg, groups[1], (topic,), start="earliest") as w:
            t1, deadline = None, time.perf_counter() + 600
            while w.snapshot().outcomes[Outcome.GOOD] < n and time.perf_counter() < deadline:
                before = time.perf_counter()
                w.step()
                if t1 is None and w.consumed:
                    t1 = before
            watch_s = time.perf_counter() - (t1 or time.perf_counter())
            w.commit()
            good = w.snapshot().outcomes[Outcome.GOOD]
        # the other raw limit: reading every event's two docs once, in the watch's batches
        reader = SearchIndex(e.opensearch, "opensearch")
        urns = [f"urn:li:tag:{prefix}-{i}" for i in range(n)]
        t2 = time.perf_counter()
        read = len(searchable_docs(reader, entity_index("tag", prefix), [document_id(u) for u in urns]))
        sm_ids = [system_metadata_id(u, "tagProperties") for u in urns]
        read += len(searchable_docs(reader, system_metadata_index(prefix), sm_ids))
        reads_s = time.perf_counter() - t2
        reader.close()
        assert read == 2 * n, read
        return {
            "n": n,
            "raw_consume_seconds": round(raw_s, 3),
            "raw_consume_per_s": round(n / raw_s),
            "raw_reads_seconds": round(reads_s, 3),
            "watch_seconds": round(watch_s, 3),
            "watch_per_s": round(good / watch_s),
            "settled": good,
            "ratio_vs_consume": round(raw_s / watch_s, 3),
            "ratio_vs_consume_plus_reads": round((raw_s + reads_s) / watch_s, 3),
            "interval": interval,
            "max_reads": max_reads,
        }
    finally:
        _remove(e, search, prefix, topic, groups)


class FakeTail:
    group, topics = "bench", ("t",)

    def __init__(self) -> None:
        self.assigned: dict[tuple[str, int], tuple[int, str | None]] = {
            ("t", p): (-1001, None) for p in range(4)
        }

    def poll(self, limit: int, timeout: float, every: int = 1) -> list[Any]:
        return []

    def commit(self, offsets: Any) -> None:
        return None


def memory(events: int) -> dict[str, Any]:
    reflected: dict[str, dict[str, Any]] = {}
    w = Watch(
        Registry.load(),
        FakeTail(),
        lambda index, ids: {i: reflected[i] for i in ids if i in reflected},
        None,
        WatchConfig(slo_seconds=1.0, pending_cap=10_000, give_up_seconds=2.0, max_reads=2000),
    )
    from auditor.platforms.datahub.naming import document_id, system_metadata_id

    points, batch, t0 = [], 1000, time.perf_counter()
    for start in range(0, events, batch):
        now = time.time()
        msgs = []
        for i in range(start, start + batch):
            value = mcl(i, "m")
            msgs.append(TailedMessage("t", i % 4, i // 4, now, value))
            if i % 10:  # nine in ten show in the index; the rest never do
                urn = value["entityUrn"]
                reflected[document_id(urn)] = {
                    "urn": urn,
                    "name": f"t{i}",
                    "description": f"d{i}",
                    "hasDescription": True,
                }
                reflected[system_metadata_id(urn, "tagProperties")] = {
                    "runId": "bench",
                    "lastUpdated": value["systemMetadata"]["lastObserved"],
                }
        w.ingest(msgs)
        w.check(now + 0.5)
        reflected.clear()  # the fake index forgets, as the real one would not matter here
        if (start + batch) % max(batch, events // 10) == 0:
            snap = w.snapshot()
            points.append(
                {
                    "events": start + batch,
                    "rss_mib": round(rss_mib(), 1),
                    "pending": snap.pending,
                    "good": snap.outcomes[Outcome.GOOD],
                    "late": snap.outcomes[Outcome.LATE],
                    "not_checked": snap.outcomes[Outcome.NOT_CHECKED],
                }
            )
            print(json.dumps(points[-1]), flush=True)
    return {"events": events, "seconds": round(time.perf_counter() - t0, 1), "points": points}


def produce_burst(topic: str, prefix: str, tags: int, rate: int, seconds: float) -> None:
    """The burst's producer, a process of its own (the watch keeps its core): `rate` MCLs a
    second for `seconds`, cycling over `tags` tags whose documents already show them; prints
    what it produced and when, by its own clock (the messages' CreateTime is that clock)."""
    e = Endpoints.from_env()
    codec = MclCodec(e.registry)
    values = [(f"urn:li:tag:{prefix}-{i}".encode(), codec.encode(topic, mcl(i, prefix))) for i in range(tags)]
    producer = Producer(
        {
            "bootstrap.servers": e.kafka,
            "partitioner": "murmur2_random",
            "linger.ms": 5,
            "batch.num.messages": 2000,
        }
    )
    started = time.time()
    sent, tick = 0, 0.01
    while True:
        elapsed = time.time() - started
        if elapsed >= seconds:
            break
        due = min(int(elapsed * rate) + int(rate * tick), int(seconds * rate))
        while sent < due:
            key, value = values[sent % tags]
            try:
                producer.produce(topic, key=key, value=value)
            except BufferError:
                producer.poll(0.01)
                continue
            sent += 1
        producer.poll(0)
        time.sleep(max(0.0, started + (sent / rate) - time.time()))
    ended = time.time()
    producer.flush(60)
    print(json.dumps({"produced": sent, "started": started, "ended": ended}), flush=True)


def burst(rate: int, seconds: float, tags: int, interval: float, max_reads: int) -> dict[str, Any]:
    """`rate` MCLs a second for `seconds` from a producer process against a watch started at the
    end of the topic: whether it keeps up (what waits when the producer stops), how many it
    checked (its sample), its latency percentiles, and the messages' CreateTime against the
    producer's own clock."""
    e = Endpoints.from_env()
    bid = uuid.uuid4().hex[:8]
    topic, prefix = f"wburst_{bid}_MetadataChangeLog_Versioned_v1", f"wu{bid}"
    groups = [f"wburst_{bid}_watch", f"wburst_{bid}_raw"]
    ensure_topics(e.kafka, {topic: 4})
    search = connect("opensearch", e)
    try:
        updater = IndexUpdater(search, prefix)
        for i in range(tags):  # every tag's documents already show its (only) value
            updater.apply(read_mcl(mcl(i, prefix)), flush=False)
        updater.flush()
        for index in search.list_indices(f"{prefix}_*"):
            search.refresh(index)
        settings, cfg = _watch_setup(e, prefix, topic, interval, max_reads, slo=60)
        points: list[dict[str, Any]] = []
        with open_watch(settings, cfg, groups[0], (topic,), start="latest") as w:
            deadline = time.monotonic() + 30
            while not w.tail.assigned and time.monotonic() < deadline:  # joined before the burst
                w.step()
            producer = subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--produce-burst",
                    topic,
                    prefix,
                    str(tags),
                    str(rate),
                    str(seconds),
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            started = time.monotonic()
            last = started
            cpu0 = time.process_time()
            while producer.poll() is None:
                w.step()
                if time.monotonic() - last >= 1.0:
                    last = time.monotonic()
                    snap = w.snapshot()
                    points.append(
                        {
                            "t": round(last - started, 1),
                            "consumed": snap.consumed,
                            "per_s": round(snap.consumed_per_second),
                            "behind": snap.behind,
                            "every": snap.every,
                            "good": snap.outcomes[Outcome.GOOD],
                        }
                    )
            produced = json.loads(producer.communicate()[0].strip().splitlines()[-1])
            at_stop = w.snapshot()
            behind_at_stop = w.tail.behind()
            watch_cpu = time.process_time() - cpu0
            drain_deadline = time.monotonic() + 60
            while w.consumed < produced["produced"] and time.monotonic() < drain_deadline:
                w.step()
            drained_s = time.monotonic() - started - seconds
            for _ in range(int(3 / interval) + 1):  # the last events' reads
                w.step()
                time.sleep(interval)
            w.commit()
            end = w.snapshot()
        # the messages' CreateTime, read back raw: the producer's clock, within its run
        raw = Consumer({"bootstrap.servers": e.kafka, "group.id": groups[1], "auto.offset.reset": "earliest"})
        raw.subscribe([topic])
        stamps: list[float] = []
        idle = 0
        while len(stamps) < produced["produced"] and idle < 10:
            batch = raw.consume(5000, 1.0)
            idle = 0 if batch else idle + 1
            stamps += [m.timestamp()[1] / 1000.0 for m in batch if m.error() is None]
        raw.close()
        h = end.histogram
        burst_s = produced["ended"] - produced["started"]
        return {
            "rate_asked": rate,
            "seconds": seconds,
            "produced": produced["produced"],
            "produced_per_s": round(produced["produced"] / burst_s),
            "consumed": end.consumed,
            "consumed_per_s_during_burst": round(
                at_stop.consumed / (produced["ended"] - produced["started"])
            ),
            "behind_when_the_producer_stopped": behind_at_stop,
            "caught_up_seconds_after_the_producer": round(max(0.0, drained_s), 2),
            "checked": end.outcomes[Outcome.GOOD] + end.outcomes[Outcome.LATE],
            "sampled_out": end.outcomes[Outcome.SAMPLED_OUT],
            "not_checked": end.outcomes[Outcome.NOT_CHECKED],
            "every_max": max((p["every"] for p in points), default=1),
            "latency_p50_p95_p99": [h.quantile(q) for q in (0.5, 0.95, 0.99)],
            "create_times_read_back": len(stamps),
            "create_times_within_the_producers_run": sum(
                produced["started"] - 0.001 <= s <= produced["ended"] + 0.001 for s in stamps
            ),
            "watch_cpu_seconds_during_burst": round(watch_cpu, 1),
            "points": points,
        }
    finally:
        _remove(e, search, prefix, topic, groups)


def main() -> None:
    if sys.argv[1:2] == ["--produce-burst"]:
        topic, prefix, tags, rate, seconds = sys.argv[2:7]
        produce_burst(topic, prefix, int(tags), int(rate), float(seconds))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=20_000, help="MCLs for the throughput run (0: skip it)")
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--max-reads", type=int, default=2000)
    parser.add_argument("--memory-events", type=int, default=1_000_000, help="0: skip the memory run")
    parser.add_argument(
        "--burst", type=int, default=0, metavar="RATE", help="MCLs a second of a burst (0: none)"
    )
    parser.add_argument("--burst-seconds", type=float, default=60.0)
    parser.add_argument("--burst-tags", type=int, default=5000, help="distinct tags the burst cycles over")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    if args.burst:
        out["burst"] = burst(args.burst, args.burst_seconds, args.burst_tags, args.interval, args.max_reads)
        print(json.dumps(out["burst"]), flush=True)
    if args.n:
        out["throughput"] = throughput(args.n, args.interval, args.max_reads)
        print(json.dumps(out["throughput"]), flush=True)
    if args.memory_events:
        out["memory"] = memory(args.memory_events)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
