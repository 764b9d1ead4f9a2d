"""`python -m sandbox seed|consume|reset`: fill, run and wipe the test world."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING

from sandbox.consumer import MaeConsumer
from sandbox.database import engine_for
from sandbox.ddl import create_schema, drop_schema
from sandbox.endpoints import Endpoints
from sandbox.generator import seed as seed_catalog
from sandbox.naming import MAE_CONSUMER_GROUP, graph_index, system_metadata_index
from sandbox.search import connect
from sandbox.topics import delete_group, recreate_topics
from sandbox.writer import GmsWriter

if TYPE_CHECKING:
    from sqlalchemy import Engine

STORES = ("postgres", "mariadb")
SEARCHES = ("opensearch", "elasticsearch")


def v3_groups(given: list[str] | None) -> dict[str, str] | None:
    """`--v3` (each entity type its own V3 index) or `--v3 TYPE=GROUP ...`: DataHub's V3 dual write."""
    if given is None:
        return None
    groups = {}
    for item in given:
        etype, sep, group = item.partition("=")
        if not sep or not etype or not group:
            raise SystemExit(f"--v3 takes TYPE=GROUP, not {item!r}")
        groups[etype] = group
    return groups


def cmd_seed(args: argparse.Namespace) -> int:
    """Create the table, write the catalog through the writer, consume until drained."""
    endpoints = Endpoints.from_env()
    engine = engine_for(args.store, endpoints)
    create_schema(engine)
    started = time.monotonic()
    with GmsWriter(engine, endpoints, transport=args.transport) as writer:
        writer.seed_datahub_user(wait=False)
        entities = seed_catalog(writer, args.n, seed=args.seed, prefix=args.prefix)
    aspects = sum(len(e.aspects) for e in entities)
    print(
        f"wrote {len(entities)} entities, {aspects} aspects to {args.store} "
        f"in {time.monotonic() - started:.1f}s"
    )
    if args.no_consume:
        return 0
    consumer = _consumer(args, endpoints, engine)
    consumer.updater.v3 = v3_groups(args.v3)
    with consumer:
        drained = consumer.drain(args.drain_timeout)
    stats = consumer.stats
    print(
        f"consumer into {args.search}: applied {stats.applied}, errors {stats.errors}, "
        f"drained={drained} after {time.monotonic() - started:.1f}s"
    )
    return 0 if drained and stats.errors == 0 else 1


def _consumer(args: argparse.Namespace, endpoints: Endpoints, engine: Engine) -> MaeConsumer:
    """The MAE consumer on Kafka, or on DataHub's PostgreSQL queue (`--transport pgqueue`)."""
    more = {"batch_size": args.batch_size, "group_id": args.group} if hasattr(args, "group") else {}
    if args.transport == "pgqueue":
        from sandbox.pgqueue import queue_for
        from sandbox.pgqueue_consumer import PgQueueMaeConsumer

        return PgQueueMaeConsumer(
            queue_for(engine), args.search, endpoints, index_prefix=args.index_prefix, **more
        )
    return MaeConsumer(args.search, endpoints, index_prefix=args.index_prefix, **more)


def cmd_consume(args: argparse.Namespace) -> int:
    """Run the MAE consumer in the foreground with fault knobs until interrupted."""
    endpoints = Endpoints.from_env()
    consumer = _consumer(args, endpoints, engine_for("postgres", endpoints))
    consumer.updater.v3 = v3_groups(args.v3)
    if args.rate:
        consumer.rate(args.rate)
    if args.pause:
        consumer.pause()
    if args.stall:
        consumer.stall()
    if args.skip_urn:
        consumer.skip_index_write(set(args.skip_urn))
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    consumer.start(wait_assigned=False)
    print(f"consuming into {args.search} as {args.group} (Ctrl-C to stop)", flush=True)
    while not stop.wait(args.report_every):
        s = consumer.stats
        print(
            f"consumed {s.consumed} applied {s.applied} skipped {s.skipped_index_writes} "
            f"errors {s.errors} commits {s.commits}",
            flush=True,
        )
    consumer.stop()
    s = consumer.stats
    print(f"stopped: consumed {s.consumed} applied {s.applied} errors {s.errors}", flush=True)
    return 0


def cmd_reset(args: argparse.Namespace) -> int:
    """Drop the table, delete the indices, delete the group's offsets, recreate the topics."""
    endpoints = Endpoints.from_env()
    for store in args.store or STORES:
        drop_schema(engine_for(store, endpoints))
        print(f"{store}: dropped metadata_aspect_v2")
    prefix = f"{args.index_prefix}_" if args.index_prefix else ""
    for search in args.search or SEARCHES:
        client = connect(search, endpoints)
        doomed = client.list_indices(f"{prefix}*index_v2") + [
            i
            for i in (system_metadata_index(args.index_prefix), graph_index(args.index_prefix))
            if client.exists(i)
        ]
        for index in doomed:
            client.delete_index(index)
        print(f"{search}: deleted {len(doomed)} indices")
    if args.transport == "pgqueue":  # the queue's messages, leases, offsets and registrations
        from sandbox.pgqueue import queue_for

        queue_for(engine_for("postgres", endpoints)).reset()
        print("pgqueue: queue emptied")
        return 0
    existed = delete_group(endpoints.kafka, args.group)
    print(f"kafka: group {args.group} {'deleted' if existed else 'had no offsets'}")
    if not args.keep_topics:
        recreate_topics(endpoints.kafka)
        print("kafka: MCL topics recreated (empty)")
    return 0


def parser() -> argparse.ArgumentParser:
    """The CLI's arguments."""
    top = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__)
    top.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = top.add_subparsers(dest="command", required=True)

    seed = sub.add_parser("seed", help="write a generated catalog and index it")
    seed.add_argument("--store", choices=STORES, default="postgres")
    seed.add_argument("--search", choices=SEARCHES, default="opensearch")
    seed.add_argument("-n", type=int, default=500, help="number of entities")
    seed.add_argument("--seed", type=int, default=42, help="random seed (same seed, same catalog)")
    seed.add_argument("--prefix", default="", help="prefix for generated names (isolation)")
    seed.add_argument("--index-prefix", default="")
    seed.add_argument("--drain-timeout", type=float, default=600.0)
    seed.add_argument(
        "--no-consume",
        action="store_true",
        help="only write rows and MCLs (leave consuming to a running consumer)",
    )
    seed.add_argument(
        "--v3",
        nargs="*",
        metavar="TYPE=GROUP",
        help="also write DataHub's V3 index (TYPE=GROUP: a type in a search group's index)",
    )
    seed.set_defaults(func=cmd_seed)
    for command in (
        seed,
        consume := sub.add_parser("consume", help="run the MAE consumer with fault knobs"),
        reset := sub.add_parser("reset", help="wipe table, indices, group offsets and topics"),
    ):
        command.add_argument(
            "--transport",
            choices=("kafka", "pgqueue"),
            default="kafka",
            help="Kafka, or DataHub's PostgreSQL queue (pgqueue: postgres only)",
        )

    consume.add_argument("--search", choices=SEARCHES, default="opensearch")
    consume.add_argument("--index-prefix", default="")
    consume.add_argument("--batch-size", type=int, default=200)
    consume.add_argument("--rate", type=float, help="messages per second")
    consume.add_argument("--pause", action="store_true", help="join the group but fetch nothing")
    consume.add_argument("--stall", action="store_true", help="poll but never apply or commit")
    consume.add_argument(
        "--skip-urn",
        action="append",
        metavar="URN",
        help="consume and commit but do not write this urn's doc (repeatable)",
    )
    consume.add_argument("--group", default=MAE_CONSUMER_GROUP, help="consumer group")
    consume.add_argument("--report-every", type=float, default=10.0, help="seconds between stats")
    consume.add_argument(
        "--v3",
        nargs="*",
        metavar="TYPE=GROUP",
        help="also write DataHub's V3 index (TYPE=GROUP: a type in a search group's index)",
    )
    consume.set_defaults(func=cmd_consume)

    reset.add_argument("--store", choices=STORES, action="append")
    reset.add_argument("--search", choices=SEARCHES, action="append")
    reset.add_argument("--index-prefix", default="")
    reset.add_argument("--keep-topics", action="store_true")
    reset.add_argument("--group", default=MAE_CONSUMER_GROUP, help="consumer group to delete")
    reset.set_defaults(func=cmd_reset)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
