"""Repair benchmark: replay and reindex throughput against the raw limit measured in the same run.

    python bench/rebuild_bench.py --rows 200000            # after bench/scan_bench.py seeded the table
    python bench/rebuild_bench.py --rows 20000 --profile replay   # where the replay's time goes

- replay: the tool's replay (keyset pages, RESTATE records, Avro, delivery reports, ordering
  guard, checkpoint) of the first N version-0 rows of the bench table, against a raw
  confluent-kafka produce of the same messages pre-encoded, each to a bench topic of its own
  (created and deleted here, the replay's schema registered here: the tool itself never
  registers one);
- consume: the sandbox's MAE-consumer look-alike (decode, apply to the bench indices, commit)
  started once the replay is confirmed, timed until its group's committed offsets reach the
  replay's end offsets: what the replay costs the consumer downstream. It applies a RESTATE MCL
  as DataHub's non-diff mode does (the urn's edges of the aspect deleted by query, then written),
  tens of MCLs a second here, so past `--consume K` rows (20,000) only its rate over the first K
  is measured (`--consume 0` skips it);
- reindex: the tool's reindex (rows read, documents built with the projection, stored docs and
  edges looked up, bulk by bytes, ordering guard) of the first M entities, against a raw bulk
  load of the same pre-built documents through the same writer.

Each measurement runs in a fresh process (peak RSS is its VmHWM). Figures go to stdout, and as
one JSON line.

    python bench/rebuild_bench.py --rows 40000 --entities 8000 --workers 1,2,4

scales out instead: for each N, the slice is cut into N urn ranges of equal rows (replay) or
equal entities (reindex), as a shard plan cuts the table, and N processes of the tool (each a
shard: its range pushed down into its pages) run at once against N processes of the raw limit
over the same ranges at once. Every process sets up first (the raw ones encode or build
everything), then all N start together on a barrier; a group's time is its slowest process's.
The ratio is the tool's N-process throughput to the raw limit's at the same N, in the same run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.scan_bench import PREFIX, TABLE, peak_rss_mib  # noqa: E402
from sandbox.endpoints import Endpoints  # noqa: E402

TOPIC = "bench_MetadataChangeLog_Versioned_v1"
RAW_TOPIC = "bench_raw_produce"  # the raw produce's own: the consumer measured reads only the replay's
CONSUMER_GROUP = "bench-mae-consumer"


class FirstRows:
    """The first `limit` rows of a row source (the bench's slice of the table)."""

    def __init__(self, source: Any, limit: int) -> None:
        self.source, self.limit, self.given = source, limit, 0

    def page(self, after: Any, limit: int) -> list[Any]:
        if self.given >= self.limit:
            return []
        page = self.source.page(after, min(limit, self.limit - self.given))
        self.given += len(page)
        return list(page)

    def unchanged(self, page: list[Any]) -> bool:
        return bool(self.source.unchanged(page))


def _settings(store: str, search: str) -> Any:
    from auditor.settings import load_settings

    e = Endpoints.from_env()
    return load_settings(
        env={},
        store_url=e.store_url(store),
        search_url=e.search_url(search),
        kafka_bootstrap=e.kafka,
        schema_registry_url=e.registry,
        index_prefix=PREFIX,
        store_table=TABLE,
        mcl_versioned_topic=TOPIC,
    )


def prepare_topic() -> None:
    """The bench topic and its schema (the wheel's MetadataChangeLog) under `<topic>-value`."""
    import datahub
    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    e = Endpoints.from_env()
    admin = AdminClient({"bootstrap.servers": e.kafka})
    topics = [NewTopic(t, num_partitions=4, replication_factor=1) for t in (TOPIC, RAW_TOPIC)]
    for future in admin.create_topics(topics).values():
        try:
            future.result(30)
        except Exception as exc:  # already there from an earlier run
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
    schema = (Path(datahub.__file__).parent / "metadata" / "schemas" / "MetadataChangeLog.avsc").read_text()
    SchemaRegistryClient({"url": e.registry}).register_schema(f"{TOPIC}-value", Schema(schema, "AVRO"))


def drop_topic() -> None:
    from confluent_kafka.admin import AdminClient

    from sandbox.topics import delete_group

    e = Endpoints.from_env()
    admin = AdminClient({"bootstrap.servers": e.kafka})
    for future in admin.delete_topics([TOPIC, RAW_TOPIC]).values():
        future.result(30)
    delete_group(e.kafka, CONSUMER_GROUP)


def consume(search: str, n: int, limit: int) -> dict[str, Any]:
    """The sandbox consumer applying the replay's MCLs: seconds until its group is caught up with
    all n, or, when n is over `limit`, until it applied the first `limit` of them (its rate)."""
    from sandbox.consumer import MaeConsumer

    consumer = MaeConsumer(search, group_id=CONSUMER_GROUP, topics=(TOPIC,), index_prefix=PREFIX)
    started = time.monotonic()
    consumer.start(timeout=60)
    try:
        if n <= limit:
            if not consumer.drain(timeout=3600):
                raise SystemExit("the consumer did not catch up within an hour")
        else:
            deadline = started + 3600
            while consumer.stats.applied + consumer.stats.errors < limit:
                if time.monotonic() > deadline:
                    raise SystemExit(f"the consumer did not apply {limit} MCLs within an hour")
                time.sleep(0.05)
        seconds = time.monotonic() - started
    finally:
        consumer.stop()
    stats = consumer.stats
    if stats.errors:
        raise SystemExit(f"the consumer failed {stats.errors} MCLs: {stats.last_error}")
    count = stats.consumed if n <= limit else stats.applied
    return {"mode": "consume", "seconds": seconds, "count": count, "peak_rss_mib": peak_rss_mib()}


def machine_cpu() -> float | None:
    """CPU-seconds every process of this machine has used (Linux's /proc/stat), None elsewhere:
    what a measurement costs the whole machine, the servers' share included."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def programs_cpu() -> dict[int, tuple[str, float]]:
    """Each process's program name and CPU-seconds (Linux's /proc/<pid>/stat: its own time plus its
    reaped children's, so a server's exited workers count under the server), {} elsewhere."""
    out: dict[int, tuple[str, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                raw = f.read()
        except OSError:
            continue  # gone since the listing
        name, rest = raw[raw.index("(") + 1 : raw.rindex(")")], raw[raw.rindex(")") + 2 :].split()
        name = name.split("/")[0] if name.startswith("kworker") else name  # renamed as it works
        out[int(pid)] = (name, sum(int(x) for x in rest[11:15]) / tick)  # utime stime cutime cstime
    return out


def programs_delta(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]], least: float = 0.05
) -> str:
    """What each program used between two `programs_cpu` readings (a process started between them:
    all its time), the largest first."""
    used: dict[str, float] = {}
    for pid, (name, seconds) in after.items():
        earlier = before.get(pid)
        used[name] = used.get(name, 0.0) + seconds - (earlier[1] if earlier and earlier[0] == name else 0.0)
    shown = sorted(((s, n) for n, s in used.items() if s >= least), reverse=True)
    return ", ".join(f"{n} {s:.2f} s" for s, n in shown) or "nothing measurable"


def barrier() -> None:
    """Under `--workers`: say ready once set up, then start when the parent says go."""
    if os.environ.get("BENCH_BARRIER"):
        print("ready", flush=True)
        sys.stdin.readline()


def measure(
    mode: str,
    store: str,
    search: str,
    n: int,
    consume_limit: int = 0,
    urn_range: tuple[str | None, str | None] | None = None,
) -> dict[str, Any]:
    from auditor.backends.connect import kafka_config, open_search
    from auditor.backends.index_writer import BulkItem, IndexWriter
    from auditor.core.model import Selection
    from auditor.platforms.datahub.backends.connect import open_store
    from auditor.platforms.datahub.backends.producer import MclProducer
    from auditor.platforms.datahub.naming import document_id, entity_index, graph_index, system_metadata_index
    from auditor.platforms.datahub.registry.registry import Registry
    from auditor.platforms.datahub.urns import entity_type
    from auditor.rebuild.checkpoint import Checkpoint
    from auditor.rebuild.datahub.documents import build
    from auditor.rebuild.datahub.mcl import RestateBuilder
    from auditor.rebuild.datahub.reindex import Reindexer
    from auditor.rebuild.datahub.replay import Replayer
    from auditor.rebuild.datahub.rows import RowSource

    if mode == "consume":
        return consume(search, n, consume_limit)
    settings = _settings(store, search)
    db = open_store(settings)
    count = 0
    path = Path(tempfile.mkdtemp()) / "ck.json"
    if mode in ("replay", "raw-produce"):
        producer = MclProducer(kafka_config(settings), settings.schema_registry_url, TOPIC)
        source = FirstRows(RowSource(db, Selection(urn_range=urn_range)), n)
        if mode == "raw-produce":  # the same messages, encoded before the clock starts
            from confluent_kafka import Producer

            builder = RestateBuilder(producer.schema_str)
            messages = []
            while page := source.page(None if not messages else messages[-1][2], 5000):
                for urn, row in page:
                    messages.append(
                        (urn.encode(), producer.encode(builder.record(urn, row)), (urn, row.aspect))
                    )
            raw = Producer(
                {
                    **kafka_config(settings),
                    "acks": "all",
                    "enable.idempotence": True,
                    "linger.ms": 20,
                    "partitioner": "murmur2_random",
                }
            )
            barrier()
            started, cpu_started, machine_started = time.monotonic(), time.process_time(), machine_cpu()
            for key, value, _ in messages:
                while True:
                    try:
                        raw.produce(RAW_TOPIC, key=key, value=value)
                        break
                    except BufferError:
                        raw.poll(0.5)
                raw.poll(0)
            raw.flush(120)
            count = len(messages)
        else:
            barrier()
            started, cpu_started, machine_started = time.monotonic(), time.process_time(), machine_cpu()
            # a replay of a filter (`--all`): its checkpoint keeps no urn list, as the CLI's
            ck = Checkpoint("replay", "bench", track_touched=False)
            ck = Replayer(db, producer, ck, path, batch=1000).run(source)  # type: ignore[arg-type]
            count = ck.counts.get("produced", 0)
    else:
        registry = Registry.load()
        search_index = open_search(settings)
        writer = IndexWriter(search_index)
        chosen = Selection(entity_types=("dataset",), urn_range=urn_range)
        urns = list(itertools.islice(RowSource(db, chosen).urns(), n))
        if mode == "raw-bulk":  # the same documents, built before the clock starts
            sysmeta, graph = system_metadata_index(PREFIX), graph_index(PREFIX)
            items = []
            for i in range(0, len(urns), 1000):
                for e in db.stream_entities(urns=tuple(urns[i : i + 1000])):
                    built = build(registry, e)
                    index = entity_index(entity_type(e.urn), PREFIX)
                    if built.entity_doc is not None:
                        items.append(BulkItem("index", index, document_id(e.urn), e.urn, built.entity_doc))
                    for name, docs in ((sysmeta, built.system_metadata), (graph, built.edges)):
                        items += [BulkItem("index", name, i, e.urn, d) for i, d in docs.items()]
            existing = search_index.indices(f"{PREFIX}_*")
            items = [i for i in items if i.index in existing]  # as the tool: only DataHub's indices
            barrier()
            started, cpu_started, machine_started = time.monotonic(), time.process_time(), machine_cpu()
            for i in range(0, len(items), 5000):
                writer.bulk(items[i : i + 5000])
            count = len(urns)
        else:
            barrier()
            started, cpu_started, machine_started = time.monotonic(), time.process_time(), machine_cpu()
            # a reindex of a filter (`--entity-type dataset`): no urn list kept, as the CLI's
            ck = Checkpoint("reindex", "bench", track_touched=False)
            reindexer = Reindexer(db, search_index, writer, registry, ck, path, index_prefix=PREFIX)
            ck = reindexer.run(urns)
            count = ck.counts.get("entities", 0)
    seconds = time.monotonic() - started
    cpu, machine = time.process_time() - cpu_started, machine_cpu()
    return {
        "mode": mode,
        "seconds": seconds,
        "count": count,
        "peak_rss_mib": peak_rss_mib(),
        "cpu_s": cpu,  # this process's, every thread's
        "machine_cpu_s": None if machine is None or machine_started is None else machine - machine_started,
    }


def child_argv(mode: str, args: argparse.Namespace, n: int) -> list[str]:
    return [
        sys.executable, __file__, "--measure", mode, "--store", args.store, "--search", args.search,
        "--n", str(n), "--consume", str(args.consume),
    ]  # fmt: skip


def ranges(
    store: str, search: str, entity_types: tuple[str, ...], total: int, by_rows: bool, n: int
) -> list[Any]:
    """The first `total` rows (or entities) of the bench table cut into n urn ranges of equal rows
    (entities): [(rows or entities in the range, (lo, hi))], as a shard plan cuts a table."""
    from auditor.platforms.datahub.backends.connect import open_store

    db = open_store(_settings(store, search))
    cuts: list[tuple[int, tuple[str | None, str | None]]] = []
    lo: str | None = None
    done, since_cut = 0, 0
    for urn, rows in db.urn_weights(entity_types):
        if done >= total:
            cuts.append((since_cut, (lo, urn)))
            break
        if len(cuts) < n - 1 and done >= total * (len(cuts) + 1) / n:
            cuts.append((since_cut, (lo, urn)))
            lo, since_cut = urn, 0
        weight = rows if by_rows else 1
        done += weight
        since_cut += weight
    else:
        cuts.append((since_cut, (lo, None)))
    db.close()
    return cuts


def run_group(mode: str, args: argparse.Namespace, parts: list[Any]) -> dict[str, Any]:
    """One process per part, set up apart, started together; the group's time is the slowest's."""
    procs = []
    for n, urn_range in parts:
        argv = [*child_argv(mode, args, n), "--range", json.dumps(list(urn_range))]
        procs.append(
            subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "BENCH_BARRIER": "1"},
            )
        )
    for proc in procs:  # every one set up
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line != "ready":
            raise SystemExit(f"{mode}: a child did not get ready ({line!r}, exit {proc.wait()})")
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    results = []
    for proc in procs:
        out, _ = proc.communicate()
        if proc.returncode:
            raise SystemExit(f"{mode}: a child failed with exit {proc.returncode}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return {
        "mode": mode,
        "count": sum(r["count"] for r in results),
        "seconds": max(r["seconds"] for r in results),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in results),
    }


def scale_out(args: argparse.Namespace) -> dict[str, Any]:
    """Replay and reindex at N = each of --workers processes, against the raw limit at the same N."""
    out: dict[str, Any] = {"cores": os.cpu_count()}
    if args.rows:
        prepare_topic()
    try:
        for n in args.workers:
            if args.rows:
                parts = ranges(args.store, args.search, (), args.rows, True, n)
                raw = run_group("raw-produce", args, parts)
                tool = run_group("replay", args, parts)
                out[f"replay_n{n}_rows"] = tool["count"]
                out[f"replay_n{n}_per_s"] = round(tool["count"] / tool["seconds"])
                out[f"raw_produce_n{n}_per_s"] = round(raw["count"] / raw["seconds"])
                out[f"replay_n{n}_ratio_to_raw"] = round(
                    (tool["count"] / tool["seconds"]) / (raw["count"] / raw["seconds"]), 2
                )
            if args.entities:
                parts = ranges(args.store, args.search, ("dataset",), args.entities, False, n)
                raw = run_group("raw-bulk", args, parts)
                tool = run_group("reindex", args, parts)
                out[f"reindex_n{n}_entities"] = tool["count"]
                out[f"reindex_n{n}_per_s"] = round(tool["count"] / tool["seconds"])
                out[f"raw_bulk_n{n}_entities_per_s"] = round(raw["count"] / raw["seconds"])
                out[f"reindex_n{n}_ratio_to_raw"] = round(
                    (tool["count"] / tool["seconds"]) / (raw["count"] / raw["seconds"]), 2
                )
    finally:
        if args.rows:
            drop_topic()
    return out


def run_child(mode: str, args: argparse.Namespace, n: int) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--measure",
            mode,
            "--store",
            args.store,
            "--search",
            args.search,
            "--n",
            str(n),
            "--consume",
            str(args.consume),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def against_raw(
    mode: str, unit: str, raw_name: str, tool: dict[str, Any], raw: dict[str, Any]
) -> dict[str, Any]:
    """The tool's throughput, the raw limit's from the same run, their ratio, the tool's peak RSS."""
    tool_rate, raw_rate = tool["count"] / tool["seconds"], raw["count"] / raw["seconds"]
    raw_mode = raw_name.split("_per_s")[0].removesuffix("_entities")  # raw_produce, raw_bulk
    return {
        f"{mode}_{unit}": tool["count"],
        raw_name: round(raw_rate),
        f"{mode}_{'per_s' if unit == 'rows' else 'entities_per_s'}": round(tool_rate),
        f"{mode}_ratio_to_raw": round(tool_rate / raw_rate, 2),
        f"{mode}_peak_rss_mib": round(tool["peak_rss_mib"]),
        # CPU-seconds: the tool's process, the raw limit's, and the whole machine's during each
        # (the servers' share included) against what its cores could give in that time
        f"{mode}_cpu_s": round(tool["cpu_s"], 2),
        f"{raw_mode}_cpu_s": round(raw["cpu_s"], 2),
        **_machine(mode, tool),
        **_machine(raw_mode, raw),
    }


def _machine(name: str, measured: dict[str, Any]) -> dict[str, Any]:
    """The machine's CPU-seconds during a measurement, of the cores' seconds in that time."""
    if measured.get("machine_cpu_s") is None:
        return {}
    capacity = (os.cpu_count() or 1) * measured["seconds"]
    return {f"{name}_machine_cpu_s": f"{measured['machine_cpu_s']:.2f} of {capacity:.2f}"}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=200_000, help="rows the replay produces (0: no replay)")
    parser.add_argument(
        "--entities", type=int, default=20_000, help="datasets the reindex rebuilds (0: no reindex)"
    )
    parser.add_argument(
        "--consume",
        type=int,
        default=20_000,
        metavar="K",
        help="time the sandbox consumer applying the replay: all of it when --rows is at most K, "
        "else its first K MCLs (its rate); 0 skips it",
    )
    parser.add_argument("--store", default="mariadb", choices=("mariadb", "postgres"))
    parser.add_argument("--search", default="opensearch", choices=("opensearch", "elasticsearch"))
    parser.add_argument(
        "--profile",
        choices=("replay", "reindex"),
        help="run one mode under cProfile and print where its time goes",
    )
    parser.add_argument(
        "--workers",
        type=lambda v: [int(x) for x in v.split(",")],
        metavar="N,N,...",
        help="scale out: replay and reindex with N processes each (shards of the slice) against the "
        "raw limit with N processes, for each N listed",
    )
    parser.add_argument("--range", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        from auditor.backends.lean import collector_on

        collector_on()  # the garbage collector as the command line runs it, the raw limits' too
        urn_range = tuple(json.loads(args.range)) if args.range else None
        print(json.dumps(measure(args.measure, args.store, args.search, args.n, args.consume, urn_range)))  # type: ignore[arg-type]
        return 0
    if args.workers:
        result = {"store": args.store, "search": args.search, **scale_out(args)}
        for key, value in result.items():
            print(f"{key:32} {value}")
        print(json.dumps(result))
        return 0
    if args.profile:  # one mode under cProfile, in this process: where its time goes
        import cProfile
        import pstats

        prepare_topic()
        try:
            n = args.entities if args.profile == "reindex" else args.rows
            profiler = cProfile.Profile()
            result = profiler.runcall(measure, args.profile, args.store, args.search, n)
        finally:
            drop_topic()
        print(json.dumps(result))
        pstats.Stats(profiler).sort_stats(os.environ.get("BENCH_SORT", "tottime")).print_stats(25)
        return 0
    result: dict[str, Any] = {"store": args.store, "search": args.search}
    if args.rows:
        prepare_topic()
        try:
            raw = run_child("raw-produce", args, args.rows)
            replay = run_child("replay", args, args.rows)
            consumed = run_child("consume", args, args.rows) if args.consume else None
        finally:
            drop_topic()
        result |= against_raw("replay", "rows", "raw_produce_per_s", replay, raw)
        if consumed is not None:
            result["consumer_applied"] = consumed["count"]
            result["consumer_applied_all"] = consumed["count"] >= replay["count"]
            result["consumer_seconds"] = round(consumed["seconds"], 2)
            result["consumer_per_s"] = round(consumed["count"] / consumed["seconds"])
    if args.entities:
        bulk = run_child("raw-bulk", args, args.entities)
        reindex = run_child("reindex", args, args.entities)
        result |= against_raw("reindex", "entities", "raw_bulk_entities_per_s", reindex, bulk)
    for key, value in result.items():
        print(f"{key:28} {value}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
