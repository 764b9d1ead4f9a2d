"""`python -m sandbox seed|consume|reset` as processes, against the real stack."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from sandbox_helpers import end_offsets, rows
from sqlalchemy import Engine, inspect

from sandbox.database import make_engine
from sandbox.endpoints import Endpoints
from sandbox.generator import generate_catalog
from sandbox.naming import entity_doc_id, entity_index
from sandbox.search import connect
from sandbox.topics import recreate_topics
from sandbox.writer import GmsWriter

pytestmark = pytest.mark.integration


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sandbox", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def no_pool_consumer(consumer_pool) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """The CLI runs its own consumer of the group: stop the tests' one meanwhile."""
    consumer_pool.stop()
    yield
    consumer_pool.stop()


def test_seed_writes_and_indexes_a_catalog(
    no_pool_consumer: None, prefix: str, engine_for: Callable[[str], Engine], endpoints: Endpoints
) -> None:
    done = run_cli(
        "seed",
        "--store",
        "mariadb",
        "--search",
        "elasticsearch",
        "-n",
        "15",
        "--seed",
        "3",
        "--prefix",
        prefix,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "drained=True" in done.stdout
    engine = engine_for("mariadb")
    store = connect("elasticsearch", endpoints)
    for entity in generate_catalog(15, seed=3, prefix=prefix):
        assert rows(engine, entity.urn), entity.urn
        assert store.get(entity_index(entity.entity_type), entity_doc_id(entity.urn)), entity.urn


def test_consume_runs_until_interrupted(
    no_pool_consumer: None,
    prefix: str,
    pg_engine: Engine,
    endpoints: Endpoints,
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sandbox",
            "consume",
            "--search",
            "opensearch",
            "--rate",
            "50",
            "--report-every",
            "0.5",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        urn = f"urn:li:dataset:(urn:li:dataPlatform:hive,{prefix}cli,PROD)"
        writer_for(pg_engine).write(urn, "datasetProperties", {"name": "cli"})
        store = connect("opensearch", endpoints)
        deadline = time.monotonic() + 60
        while store.get("datasetindex_v2", entity_doc_id(urn)) is None:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "consume never indexed the write"
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    assert "stopped: consumed" in out


def test_reset_wipes_table_indices_and_group(
    scratch_databases: dict[str, str],
    prefix: str,
    kafka: str,
    endpoints: Endpoints,
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    group = f"{prefix}group"
    env = scratch_databases
    engines = [make_engine(url) for url in env.values()]
    for engine in engines:  # something in each scratch table
        writer_for(engine).write(f"urn:li:tag:{prefix}x", "tagKey", {"name": "x"})
    store = connect("opensearch", endpoints)
    index = f"{prefix}_datasetindex_v2"
    store.put(index, "a", {"urn": "a"})
    store.put(f"{prefix}_graph_service_v1", "e", {"relationshipType": "x"})
    reader = Consumer({"bootstrap.servers": kafka, "group.id": group})
    reader.commit(offsets=[TopicPartition("MetadataChangeLog_Versioned_v1", 0, 0)], asynchronous=False)
    reader.close()

    done = run_cli(
        "reset",
        "--index-prefix",
        prefix,
        "--search",
        "opensearch",
        "--keep-topics",
        "--group",
        group,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for engine in engines:
        assert not inspect(engine).has_table("metadata_aspect_v2")
        engine.dispose()
    assert not store.exists(index) and not store.exists(f"{prefix}_graph_service_v1")
    admin = AdminClient({"bootstrap.servers": kafka})
    assert group not in {g.group_id for g in admin.list_consumer_groups().result().valid}


def test_recreate_topics_empties_them(kafka: str, prefix: str) -> None:
    topic = f"{prefix}mcl"
    recreate_topics(kafka, {topic: 2})
    producer = Producer({"bootstrap.servers": kafka})
    for i in range(5):
        producer.produce(topic, key=str(i).encode(), value=b"x")
    producer.flush(10)
    assert sum(end_offsets(kafka, topic).values()) == 5
    recreate_topics(kafka, {topic: 2})
    assert end_offsets(kafka, topic) == {0: 0, 1: 0}
    admin = AdminClient({"bootstrap.servers": kafka})
    admin.delete_topics([topic])[topic].result()
