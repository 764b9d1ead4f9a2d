"""Every fault knob produces the divergence it promises: read back from DB, topic, group, index."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from sandbox_helpers import committed_offsets, end_offsets, group_members, md5_base64, rows
from sqlalchemy import Engine

from sandbox.consumer import MaeConsumer
from sandbox.faults import (
    delete_entity_doc,
    hard_delete_rows,
    plant_orphan_doc,
    restore_index,
    snapshot_index,
)
from sandbox.writer import GmsWriter

pytestmark = pytest.mark.integration

INDEX = "datasetindex_v2"


def dataset(prefix: str, name: str = "t") -> tuple[str, str]:
    """A dataset urn and its doc id, written out."""
    urn = f"urn:li:dataset:(urn:li:dataPlatform:hive,{prefix}{name},PROD)"
    doc_id = f"urn%3Ali%3Adataset%3A%28urn%3Ali%3AdataPlatform%3Ahive%2C{prefix}{name}%2CPROD%29"
    return urn, doc_id


def test_drop_mcl_writes_the_row_but_publishes_nothing(
    pg_engine: Engine,
    prefix: str,
    kafka: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae("opensearch")
    urn, doc_id = dataset(prefix)
    before = end_offsets(kafka)
    result = writer_for(pg_engine).write(urn, "datasetProperties", {"name": "x"}, drop_mcl=True)
    assert not result.published and result.partition is None and result.offset is None
    assert {r["aspect"]: r["metadata"] for r in rows(pg_engine, urn)} == {
        "datasetKey": {
            "platform": "urn:li:dataPlatform:hive",
            "name": f"{prefix}t",
            "origin": "PROD",
        },  # GMS writes the new entity's key aspect too
        "datasetProperties": {"name": "x"},
    }
    assert end_offsets(kafka) == before
    assert consumer.drain(30)
    assert consumer.store.get(INDEX, doc_id) is None


def test_pause_stops_consuming_until_resume(
    pg_engine: Engine,
    prefix: str,
    kafka: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae("opensearch")
    assert consumer.drain(30)
    consumer.pause()
    urn, doc_id = dataset(prefix)
    result = writer_for(pg_engine).write(urn, "datasetProperties", {"name": "x"})
    assert result.partition is not None and result.offset is not None
    committed = committed_offsets(kafka)[result.partition]
    assert committed <= result.offset
    assert not consumer.drain(1.5)
    assert committed_offsets(kafka)[result.partition] == committed
    assert consumer.store.get(INDEX, doc_id) is None
    assert group_members(kafka) == 1
    consumer.resume()
    assert consumer.drain(30)
    assert committed_offsets(kafka)[result.partition] >= result.offset + 1
    assert consumer.store.get(INDEX, doc_id)["name"] == "x"


def test_stall_keeps_membership_but_neither_applies_nor_commits(
    pg_engine: Engine,
    prefix: str,
    kafka: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae("opensearch")
    assert consumer.drain(30)
    consumer.stall()
    applied = consumer.stats.applied
    urn, doc_id = dataset(prefix)
    result = writer_for(pg_engine).write(urn, "datasetProperties", {"name": "x"})
    assert result.partition is not None and result.offset is not None
    committed = committed_offsets(kafka)[result.partition]
    assert committed <= result.offset
    assert not consumer.drain(1.5)
    assert consumer.stalled and consumer.running
    assert group_members(kafka) == 1
    assert committed_offsets(kafka)[result.partition] == committed
    assert end_offsets(kafka)[result.partition] > committed
    assert consumer.stats.applied == applied
    assert consumer.store.get(INDEX, doc_id) is None
    consumer.resume()
    assert consumer.drain(30)
    assert consumer.store.get(INDEX, doc_id)["name"] == "x"


def test_rate_throttles_consumption(
    pg_engine: Engine,
    prefix: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae("opensearch")
    assert consumer.drain(30)
    consumer.pause()  # the 15 are all on the topic before the throttled consumer starts
    consumer.rate(10)
    writer = writer_for(pg_engine)
    for i in range(15):
        writer.write(dataset(prefix, f"t{i}")[0], "datasetProperties", {"name": str(i)}, wait=False)
    writer.flush()
    started = time.monotonic()
    consumer.resume()
    time.sleep(0.5)
    seen_early = sum(consumer.store.get(INDEX, dataset(prefix, f"t{i}")[1]) is not None for i in range(15))
    assert seen_early < 15
    assert consumer.drain(30)
    assert time.monotonic() - started >= 1.3  # 15 messages at 10/s
    assert all(consumer.store.get(INDEX, dataset(prefix, f"t{i}")[1]) for i in range(15))


def test_skip_index_write_consumes_and_commits_without_the_doc(
    pg_engine: Engine,
    prefix: str,
    kafka: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae("opensearch")
    writer = writer_for(pg_engine)
    skipped, skipped_id = dataset(prefix, "skipped")
    kept, kept_id = dataset(prefix, "kept")
    consumer.skip_index_write({skipped})
    result = writer.write(skipped, "datasetProperties", {"name": "s"})
    writer.write(kept, "datasetProperties", {"name": "k"})
    assert consumer.drain(30)  # the group is past the message ...
    assert result.partition is not None and result.offset is not None
    assert committed_offsets(kafka)[result.partition] >= result.offset + 1
    assert consumer.store.get(INDEX, skipped_id) is None  # ... but the doc was never written
    assert consumer.store.get(INDEX, kept_id)["name"] == "k"
    assert (
        consumer.store.get("system_metadata_service_v1", md5_base64(f"{skipped}--datasetProperties"))
        is not None
    )
    assert consumer.stats.skipped_index_writes >= 1

    consumer.skip_index_write(lambda urn, aspect: aspect == "globalTags")
    writer.write(kept, "globalTags", {"tags": [{"tag": f"urn:li:tag:{prefix}x"}]})
    assert consumer.drain(30)
    assert "tags" not in consumer.store.get(INDEX, kept_id)


@pytest.mark.alone  # drops and restores the unprefixed dataset index other tests write to
@pytest.mark.parametrize("search", ["opensearch", "elasticsearch"])
def test_restore_from_an_old_snapshot(
    search: str,
    pg_engine: Engine,
    prefix: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae(search)
    writer = writer_for(pg_engine)
    old, old_id = dataset(prefix, "old")
    new, new_id = dataset(prefix, "new")
    writer.write(old, "datasetProperties", {"name": "old", "description": "before"})
    assert consumer.drain(30)
    snapshot = snapshot_index(consumer.store.client, INDEX)  # a raw client works too
    assert old_id in dict(snapshot.docs)

    writer.write(old, "datasetProperties", {"name": "old", "description": "after"})
    writer.write(new, "datasetProperties", {"name": "new"})
    assert consumer.drain(30)
    assert consumer.store.get(INDEX, new_id) is not None

    assert restore_index(consumer.store, INDEX, snapshot) == len(snapshot)
    assert consumer.store.count(INDEX) == len(snapshot)
    assert consumer.store.get(INDEX, new_id) is None
    assert consumer.store.get(INDEX, old_id)["description"] == "before"
    assert rows(pg_engine, old, "datasetProperties")[0]["metadata"]["description"] == "after"
    assert rows(pg_engine, new)  # the database kept everything


def test_hard_delete_rows_behind_the_index(
    engine: Engine,
    prefix: str,
    kafka: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae("opensearch")
    writer = writer_for(engine)
    urn, doc_id = dataset(prefix)
    writer.write(urn, "datasetProperties", {"name": "a"})
    writer.write(urn, "datasetProperties", {"name": "b"})
    writer.write(urn, "status", {"removed": False})
    assert consumer.drain(30)
    before = end_offsets(kafka)
    assert hard_delete_rows(engine, urn, "status") == 1
    assert writer.hard_delete_rows(urn) == 3  # datasetKey and two datasetProperties rows
    assert rows(engine, urn) == []
    assert end_offsets(kafka) == before
    assert consumer.drain(30)
    assert consumer.store.get(INDEX, doc_id)["name"] == "b"


def test_docs_removed_or_planted_behind_the_database(
    pg_engine: Engine,
    prefix: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae("opensearch")
    urn, doc_id = dataset(prefix)
    writer_for(pg_engine).write(urn, "datasetProperties", {"name": "a"})
    assert consumer.drain(30)
    assert delete_entity_doc(consumer.store, urn)
    assert consumer.store.get(INDEX, doc_id) is None
    assert rows(pg_engine, urn)

    ghost, ghost_id = dataset(prefix, "ghost")
    assert plant_orphan_doc(consumer.store, ghost, {"name": "ghost"}) == ghost_id
    assert consumer.store.get(INDEX, ghost_id) == {"urn": ghost, "name": "ghost"}
    assert rows(pg_engine, ghost) == []
