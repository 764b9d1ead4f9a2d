"""The faults scenarios inject, each through the sandbox; each returns the urns it broke."""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import text
from world import World

from sandbox.faults import restore_index, snapshot_index
from sandbox.naming import ASPECT_TABLE, entity_doc_id, entity_index


def _tags(*names: str) -> dict:
    return {"tags": [{"tag": f"urn:li:tag:{n}"} for n in names]}


def _datasets(world: World, k: int) -> list[str]:
    urns = [e.urn for e in world.of_type("dataset")]
    assert len(urns) >= k, f"the seed catalog has only {len(urns)} live datasets"
    return urns[:k]


def none(world: World) -> set[str]:
    return set()


def drop_mcl(world: World, which: int = 0) -> set[str]:
    urn = _datasets(world, which + 1)[which]
    world.writer.write(urn, "globalTags", _tags("dropped"), drop_mcl=True)
    return {urn}


def skip_index_write(world: World) -> set[str]:
    urn = _datasets(world, 1)[0]
    world.consumer.skip_index_write({urn})
    world.writer.write(urn, "globalTags", _tags("skipped"))
    assert world.consumer.drain(60)
    return {urn}


def skip_index_write_new_entity(world: World) -> set[str]:
    urn = f"urn:li:tag:{world.prefix}-skipped new tag"
    world.consumer.skip_index_write({urn})
    world.writer.write(urn, "tagKey", {"name": f"{world.prefix}-skipped new tag"})
    world.writer.write(urn, "tagProperties", {"name": "skipped", "description": "never indexed"})
    assert world.consumer.drain(60)
    return {urn}


def hard_delete(world: World, which: int = 0) -> set[str]:
    urn = _datasets(world, which + 1)[which]
    assert world.writer.hard_delete_rows(urn) > 0
    return {urn}


def soft_delete_not_applied(world: World) -> set[str]:
    urn = _datasets(world, 1)[0]
    world.consumer.skip_index_write({urn})
    world.writer.soft_delete(urn)
    assert world.consumer.drain(60)
    return {urn}


def stale_field(world: World) -> set[str]:
    entity = next(e for e in world.of_type("dataset") if dict(e.aspects).get("datasetProperties"))
    index = entity_index("dataset", world.prefix)
    world.search.upsert(index, entity_doc_id(entity.urn), {"name": "renamed behind DataHub's back"})
    return {entity.urn}


def restore_snapshot(world: World) -> set[str]:
    index = entity_index("dataset", world.prefix)
    world.search.refresh(index)
    snapshot = snapshot_index(world.search, index)
    time.sleep(1.1)  # the snapshot predates every change below, to the database's precision
    urns = set(_datasets(world, 12))
    for i, urn in enumerate(sorted(urns)):
        world.writer.write(urn, "globalTags", _tags(f"after-snapshot-{i}"))
    assert world.consumer.drain(60)
    restore_index(world.search, index, snapshot)
    return urns


def backlog(world: World) -> set[str]:
    world.consumer.pause()
    urns = set(_datasets(world, 12))
    for j in range(5):  # 60 MCLs in all, in rounds: each urn's last value is in the last 12
        for i, urn in enumerate(sorted(urns)):  # (at 3/s, 16 s after the resume at the soonest)
            world.writer.write(urn, "globalTags", _tags(f"backlog-{i}-{j}"))
    world.consumer.rate(3.0)
    world.consumer.resume()
    time.sleep(1.0)
    return urns


def stall(world: World) -> set[str]:
    world.consumer.stall()
    time.sleep(0.5)
    urns = set(_datasets(world, 3))
    for urn in sorted(urns):
        world.writer.write(urn, "globalTags", _tags("while-stalled"))
    return urns


def _tagged_dataset(world: World) -> str:
    """A live dataset with a `globalTags` row (the seed gives most datasets one, not every one)."""
    return next(e.urn for e in world.of_type("dataset") if "globalTags" in dict(e.aspects))


def lost_to_retention(world: World) -> set[str]:
    """A stopped consumer's backlog passes the topic's retention: the change's MCL was published,
    then deleted (DeleteRecords, as retention does) before the group read it. Its committed
    offset is left below the partition's first offset."""
    from confluent_kafka import TopicPartition

    from auditor.platforms.datahub.urns import urn_partition
    from sandbox.topics import admin_client, end_offsets

    world.consumer.stop()  # the group keeps its committed offsets, no member reads on
    urn = _datasets(world, 1)[0]
    world.writer.write(urn, "globalTags", _tags("lost-to-retention"))
    topic = world.topics[0]
    ends = end_offsets(world.endpoints.kafka, [topic])
    partition = urn_partition(urn, len(ends))
    admin = admin_client(world.endpoints.kafka)
    futures = admin.delete_records([TopicPartition(topic, partition, ends[(topic, partition)])])
    for future in futures.values():
        future.result(timeout=30)
    return {urn}


def malformed_json(world: World) -> set[str]:
    urn = _tagged_dataset(world)
    with world.engine.begin() as conn:
        done = conn.execute(
            text(
                f"UPDATE {ASPECT_TABLE} SET metadata = :bad "
                "WHERE urn = :urn AND aspect = 'globalTags' AND version = 0"
            ),
            {"bad": '{"tags": [{"tag": "urn:li:tag:x"', "urn": urn},
        )
        assert done.rowcount == 1
    return {urn}


def deeply_nested_json(world: World) -> set[str]:
    """An aspect whose JSON nests deeper than any decoder follows (orjson: 1024, Python: its
    recursion limit): the row is unreadable, never a crash of the scan."""
    urn = _tagged_dataset(world)
    depth = 5000
    with world.engine.begin() as conn:
        done = conn.execute(
            text(
                f"UPDATE {ASPECT_TABLE} SET metadata = :bad "
                "WHERE urn = :urn AND aspect = 'globalTags' AND version = 0"
            ),
            {"bad": '{"tags": [], "x": ' + "[" * depth + "]" * depth + "}", "urn": urn},
        )
        assert done.rowcount == 1
    return {urn}


FAULTS: dict[str, Callable[[World], set[str]]] = {
    f.__name__: f
    for f in (
        none,
        drop_mcl,
        skip_index_write,
        skip_index_write_new_entity,
        hard_delete,
        soft_delete_not_applied,
        stale_field,
        restore_snapshot,
        backlog,
        stall,
        lost_to_retention,
        malformed_json,
        deeply_nested_json,
    )
}
