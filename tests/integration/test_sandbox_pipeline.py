"""The healthy path: GmsWriter -> table + Kafka (Avro, registry) -> MaeConsumer -> index."""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable

import datahub.metadata.schema_classes as m
import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Message, TopicPartition
from confluent_kafka.admin import AdminClient
from fastavro import parse_schema, schemaless_reader
from sandbox_helpers import java_murmur2, java_partition, md5_base64, rows
from sqlalchemy import Engine

from sandbox.avro import mcl_schema, registry_client
from sandbox.consumer import MaeConsumer
from sandbox.generator import generate_catalog, seed
from sandbox.naming import entity_doc_id
from sandbox.projection import document_fields
from sandbox.writer import GmsWriter

pytestmark = pytest.mark.integration

SEARCHES = ("opensearch", "elasticsearch")
ACTOR = "urn:li:corpuser:datahub"


def dataset_urn(prefix: str, name: str = "db.t") -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:hive,{prefix}{name},PROD)"


def read_message(kafka: str, topic: str, partition: int, offset: int) -> Message:
    consumer = Consumer(
        {"bootstrap.servers": kafka, "group.id": "sandbox-test-reader", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        for _ in range(50):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                return msg
        raise AssertionError(f"no message at {topic}[{partition}]@{offset}")
    finally:
        consumer.close()


@pytest.mark.parametrize("search", SEARCHES)
def test_write_reaches_the_index(
    engine: Engine,
    search: str,
    prefix: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae(search)
    writer = writer_for(engine)
    urn = dataset_urn(prefix)
    owner = f"urn:li:corpuser:{prefix}jdoe"
    writer.write(
        urn,
        "datasetKey",
        m.DatasetKeyClass(platform="urn:li:dataPlatform:hive", name=f"{prefix}db.t", origin="PROD"),
    )
    writer.write(
        urn,
        "datasetProperties",
        m.DatasetPropertiesClass(name="t", description="Orders", customProperties={"team": "core"}),
    )
    writer.write(
        urn,
        "ownership",
        {
            "owners": [{"owner": owner, "type": "TECHNICAL_OWNER"}],
            "ownerTypes": {"urn:li:ownershipType:__system__none": [owner]},
        },
    )
    assert consumer.drain(30)
    assert consumer.stats.errors == 0

    doc_id = f"urn%3Ali%3Adataset%3A%28urn%3Ali%3AdataPlatform%3Ahive%2C{prefix}db.t%2CPROD%29"
    doc = consumer.store.get("datasetindex_v2", doc_id)
    assert doc is not None
    assert isinstance(doc.pop("systemCreated"), int)
    assert doc == {
        "urn": urn,
        "platform": "urn:li:dataPlatform:hive",
        "id": f"{prefix}db.t",
        "origin": "PROD",
        "customProperties": ["team=core"],
        "name": "t",
        "description": "Orders",
        "hasDescription": True,
        "owners": [owner],
        "hasOwners": True,
        "ownerAttributionDates": [],
        "ownerAttributionActors": [],
        "ownerAttributionSources": [],
        "ownerTypes": {"urn:li:ownershipType:__system__none": [owner]},
    }
    row = rows(engine, urn, "ownership")[0]
    sm_doc = consumer.store.get("system_metadata_service_v1", md5_base64(f"{urn}--ownership"))
    assert sm_doc == {
        "urn": urn,
        "aspect": "ownership",
        "runId": "no-run-id-provided",
        "lastUpdated": row["systemmetadata"]["lastObserved"],
        "registryName": "unknownRegistry",
        "registryVersion": "0.0.0",
        "removed": False,
    }
    edge = consumer.store.get("graph_service_v1", md5_base64(f"{urn}--OwnedBy--{owner}"))
    assert edge == {
        "source": {"urn": urn, "entityType": "dataset"},
        "destination": {"urn": owner, "entityType": "corpuser"},
        "relationshipType": "OwnedBy",
        "createdOn": row["systemmetadata"]["lastObserved"],
        "createdActor": ACTOR,
        "updatedOn": row["systemmetadata"]["lastObserved"],
        "updatedActor": ACTOR,
    }


def test_versioning_archives_the_old_row(
    engine: Engine, prefix: str, writer_for: Callable[[Engine], GmsWriter]
) -> None:
    writer = writer_for(engine)
    urn = dataset_urn(prefix)
    first = writer.write(urn, "datasetProperties", {"name": "v1"}, system_metadata={"runId": "run-1"})
    second = writer.write(
        urn,
        "datasetProperties",
        {"name": "v2"},
        system_metadata={"runId": "run-2"},
        actor=f"urn:li:corpuser:{prefix}x",
    )
    third = writer.write(urn, "datasetProperties", {"name": "v3"})
    assert (first.version, first.archived_version) == (1, None)
    assert (second.version, second.archived_version) == (2, 1)
    assert (third.version, third.archived_version) == (3, 2)

    found = rows(engine, urn, "datasetProperties")
    assert [(r["version"], r["metadata"]) for r in found] == [
        (0, {"name": "v3"}),
        (1, {"name": "v1"}),
        (2, {"name": "v2"}),
    ]
    current, v1, v2 = found
    assert v1["systemmetadata"]["runId"] == "run-1"
    assert v2["systemmetadata"]["runId"] == "run-2"
    assert v2["systemmetadata"]["lastRunId"] == "run-1"
    assert v2["createdby"] == f"urn:li:corpuser:{prefix}x"
    assert current["createdby"] == ACTOR
    sm = current["systemmetadata"]
    assert sm["version"] == "3" and sm["lastRunId"] == "run-2"
    assert sm["registryName"] == "unknownRegistry" and sm["registryVersion"] == "0.0.0"
    assert isinstance(sm["lastObserved"], int)
    assert v1["createdon"] <= v2["createdon"] <= current["createdon"]


def test_murmur2_matches_kafka_test_vectors() -> None:
    # org.apache.kafka.common.utils.UtilsTest#testMurmur2
    assert java_murmur2(b"21") == -973932308
    assert java_murmur2(b"foobar") == -790332482
    assert java_murmur2(b"a-little-bit-long-string") == -985981536
    assert java_murmur2(b"a-little-bit-longer-string") == -1486304829
    assert java_murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert java_murmur2(b"abc") == 479470107


def test_mcl_is_confluent_framed_avro_on_the_murmur2_partition(
    pg_engine: Engine, prefix: str, kafka: str, registry: str, writer_for: Callable[[Engine], GmsWriter]
) -> None:
    writer = writer_for(pg_engine)
    urns = [dataset_urn(prefix, f"db.t{i}") for i in range(12)]
    results = [writer.write(u, "datasetProperties", {"name": u[-12:]}) for u in urns]
    update = writer.write(
        urns[0],
        "datasetProperties",
        {"name": "renamed"},
        system_metadata={"runId": "run-9", "properties": {"appSource": "ui"}},
    )

    topic = "MetadataChangeLog_Versioned_v1"
    admin = AdminClient({"bootstrap.servers": kafka})
    partitions = len(admin.list_topics(topic, timeout=10).topics[topic].partitions)
    assert partitions > 1
    for urn, result in zip(urns, results, strict=True):
        assert result.topic == topic and result.published
        assert result.partition == java_partition(urn.encode("utf-8"), partitions)
    assert len({r.partition for r in results}) > 1

    client = registry_client(registry)
    latest = client.get_latest_version(f"{topic}-value")
    wheel = mcl_schema()
    assert json.loads(latest.schema.schema_str) == wheel
    assert update.partition is not None and update.offset is not None

    msg = read_message(kafka, topic, update.partition, update.offset)
    assert msg.key() == urns[0].encode("utf-8")
    value = msg.value()
    magic, schema_id = struct.unpack(">bI", value[:5])
    assert magic == 0 and schema_id == latest.schema_id
    record = schemaless_reader(io.BytesIO(value[5:]), parse_schema(wheel))
    assert record["entityType"] == "dataset"
    assert record["entityUrn"] == urns[0]
    assert record["changeType"] == "UPSERT"
    assert record["aspectName"] == "datasetProperties"
    assert record["aspect"]["contentType"] == "application/json"
    assert json.loads(record["aspect"]["value"]) == {"name": "renamed"}
    assert json.loads(record["previousAspectValue"]["value"]) == {"name": urns[0][-12:]}
    assert record["systemMetadata"]["runId"] == "run-9"
    assert record["systemMetadata"]["properties"] == {"appSource": "ui"}
    assert record["systemMetadata"]["version"] == "2"
    assert record["previousSystemMetadata"]["runId"] == "no-run-id-provided"
    assert record["created"]["actor"] == ACTOR
    row = rows(pg_engine, urns[0], "datasetProperties")[0]
    assert record["systemMetadata"]["lastObserved"] == row["systemmetadata"]["lastObserved"]
    assert record["created"]["time"] == row["systemmetadata"]["lastObserved"]


def test_group_and_topic_names(
    pg_engine: Engine,
    prefix: str,
    kafka: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae("opensearch")
    result = writer_for(pg_engine).write(dataset_urn(prefix), "status", {"removed": False})
    assert consumer.drain(30)
    admin = AdminClient({"bootstrap.servers": kafka})
    group = "generic-mae-consumer-job-client"
    tp = TopicPartition("MetadataChangeLog_Versioned_v1", result.partition)
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [tp])])[group].result()
    assert offsets.topic_partitions[0].offset >= (result.offset or 0) + 1
    description = admin.describe_consumer_groups([group])[group].result()
    assigned = {tp.topic for member in description.members for tp in member.assignment.topic_partitions}
    assert assigned == {"MetadataChangeLog_Versioned_v1", "MetadataChangeLog_Timeseries_v1"}


def test_index_names_and_literal_doc_ids(
    pg_engine: Engine,
    prefix: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae("opensearch")
    writer = writer_for(pg_engine)
    user = f"urn:li:corpuser:{prefix}Jane Doe~é+*%"
    term = f"urn:li:glossaryTerm:{prefix}Finance.Revenue (Net)"
    job = f"urn:li:dataJob:(urn:li:dataFlow:(airflow,{prefix}flow,prod),load*orders)"
    writer.write(user, "corpUserKey", {"username": f"{prefix}Jane Doe~é+*%"})
    writer.write(term, "glossaryTermKey", {"name": f"{prefix}Finance.Revenue (Net)"})
    writer.write(
        job, "dataJobKey", {"flow": f"urn:li:dataFlow:(airflow,{prefix}flow,prod)", "jobId": "load*orders"}
    )
    assert consumer.drain(30)
    store = consumer.store
    assert (
        store.get("corpuserindex_v2", f"urn%3Ali%3Acorpuser%3A{prefix}Jane+Doe%7E%C3%A9%2B*%25")["ldap"]
        == f"{prefix}Jane Doe~é+*%"
    )
    assert (
        store.get("glossarytermindex_v2", f"urn%3Ali%3AglossaryTerm%3A{prefix}Finance.Revenue+%28Net%29")[
            "id"
        ]
        == f"{prefix}Finance.Revenue (Net)"
    )
    job_doc = store.get(
        "datajobindex_v2",
        f"urn%3Ali%3AdataJob%3A%28urn%3Ali%3AdataFlow%3A%28airflow%2C{prefix}flow%2Cprod%29%2Cload*orders%29",
    )
    assert job_doc is not None and job_doc["jobId"] == "load*orders"
    flow = f"urn:li:dataFlow:(airflow,{prefix}flow,prod)"
    assert store.get("graph_service_v1", md5_base64(f"{job}--IsPartOf--{flow}")) is not None
    assert store.get("system_metadata_service_v1", md5_base64(f"{user}--corpUserKey")) is not None


def test_deletes_and_soft_deletes(
    pg_engine: Engine,
    prefix: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae("opensearch")
    writer = writer_for(pg_engine)
    user = f"urn:li:corpuser:{prefix}owner"
    a, b = dataset_urn(prefix, "a"), dataset_urn(prefix, "b")
    writer.write(user, "corpUserKey", {"username": f"{prefix}owner"})
    for urn in (a, b):
        writer.write(urn, "datasetProperties", {"name": "x", "description": "d"})
        writer.write(urn, "globalTags", {"tags": [{"tag": f"urn:li:tag:{prefix}pii"}]})
        writer.write(urn, "ownership", {"owners": [{"owner": user, "type": "DATAOWNER"}]})
    assert consumer.drain(30)
    store = consumer.store

    writer.delete_aspect(a, "globalTags")  # a non-key aspect: its fields become null/false
    writer.soft_delete(b)
    writer.delete_aspect(user, "corpUserKey")  # the key aspect: the entity is gone
    assert consumer.drain(30)

    doc_a = store.get(
        "datasetindex_v2", f"urn%3Ali%3Adataset%3A%28urn%3Ali%3AdataPlatform%3Ahive%2C{prefix}a%2CPROD%29"
    )
    assert doc_a is not None
    assert (doc_a["tags"], doc_a["hasTags"], doc_a["tagAttributionDates"]) == (None, False, None)
    assert doc_a["name"] == "x"
    assert rows(pg_engine, a, "globalTags") == []
    assert store.get("system_metadata_service_v1", md5_base64(f"{a}--globalTags")) is None
    assert store.get("graph_service_v1", md5_base64(f"{a}--TaggedWith--urn:li:tag:{prefix}pii")) is None

    doc_b = store.get(
        "datasetindex_v2", f"urn%3Ali%3Adataset%3A%28urn%3Ali%3AdataPlatform%3Ahive%2C{prefix}b%2CPROD%29"
    )
    assert doc_b is not None and doc_b["removed"] is True
    sm_b = store.search("system_metadata_service_v1", {"term": {"urn": b}})
    assert len(sm_b) == 5 and all(hit["_source"]["removed"] is True for hit in sm_b)

    assert rows(pg_engine, user) == []
    assert store.get("corpuserindex_v2", f"urn%3Ali%3Acorpuser%3A{prefix}owner") is None
    assert store.search("system_metadata_service_v1", {"term": {"urn": user}}) == []
    assert store.search("graph_service_v1", {"term": {"destination.urn": user}}) == []


def test_timeseries_aspect_goes_to_its_topic_without_a_row(
    pg_engine: Engine, prefix: str, writer_for: Callable[[Engine], GmsWriter]
) -> None:
    urn = dataset_urn(prefix)
    result = writer_for(pg_engine).write(
        urn, "datasetProfile", m.DatasetProfileClass(timestampMillis=1_700_000_000_000, rowCount=10)
    )
    assert result.topic == "MetadataChangeLog_Timeseries_v1" and result.published
    assert rows(pg_engine, urn) == []


@pytest.mark.parametrize("store,search", [("postgres", "opensearch"), ("mariadb", "elasticsearch")])
def test_seeded_catalog_is_consistent(
    store: str,
    search: str,
    prefix: str,
    engine_for: Callable[[str], Engine],
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    engine = engine_for(store)
    consumer = mae(search)
    entities = seed(writer_for(engine), 40, seed=7, prefix=prefix)
    assert entities == generate_catalog(40, seed=7, prefix=prefix)
    assert consumer.drain(60) and consumer.stats.errors == 0
    for entity in entities:
        current = {r["aspect"]: r["metadata"] for r in rows(engine, entity.urn) if r["version"] == 0}
        assert current == dict(entity.aspects)
        expected = document_fields(entity.aspects)
        index = f"{entity.entity_type.lower()}index_v2"
        doc = consumer.store.get(index, entity_doc_id(entity.urn))
        assert doc is not None, entity.urn
        doc.pop("systemCreated", None)
        assert doc == {"urn": entity.urn, **expected}, entity.urn


def test_restate_reindexes_with_force_indexing(
    pg_engine: Engine,
    prefix: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae("opensearch")
    store = consumer.store
    writer = writer_for(pg_engine)
    urn = dataset_urn(prefix)
    doc_id = entity_doc_id(urn)
    owner, bogus = f"urn:li:corpuser:{prefix}a", f"urn:li:corpuser:{prefix}bogus"
    consumer.skip_index_write({urn})
    writer.write(urn, "ownership", {"owners": [{"owner": owner, "type": "DATAOWNER"}]})
    assert consumer.drain(30)
    assert store.get("datasetindex_v2", doc_id) is None
    consumer.skip_index_write(None)
    stale_id = md5_base64(f"{urn}--OwnedBy--{bogus}")
    store.put(
        "graph_service_v1",
        stale_id,
        {
            "source": {"urn": urn, "entityType": "dataset"},
            "destination": {"urn": bogus, "entityType": "corpuser"},
            "relationshipType": "OwnedBy",
        },
    )

    result = writer.restate(urn, "ownership")
    assert result is not None and result.change_type == "RESTATE" and result.published
    assert result.system_metadata["properties"] == {"forceIndexing": "true"}
    assert [(r["aspect"], r["version"]) for r in rows(pg_engine, urn)] == [
        ("datasetKey", 0),
        ("ownership", 0),
    ]
    assert consumer.drain(30)
    assert store.get("datasetindex_v2", doc_id)["owners"] == [owner]
    assert store.get("graph_service_v1", stale_id) is None  # non-diff mode replaced the edges
    assert store.get("graph_service_v1", md5_base64(f"{urn}--OwnedBy--{owner}")) is not None
    assert writer.restate(dataset_urn(prefix, "absent"), "ownership") is None


def test_first_write_of_an_entity_writes_its_key_aspect(
    pg_engine: Engine,
    prefix: str,
    mae: Callable[[str], MaeConsumer],
    writer_for: Callable[[Engine], GmsWriter],
) -> None:
    consumer = mae("opensearch")
    writer = writer_for(pg_engine)
    urn = f"urn:li:chart:(looker,{prefix}Revenue %28EUR%29)"
    first = writer.write(urn, "status", {"removed": False})
    writer.write(urn, "status", {"removed": True})
    found = rows(pg_engine, urn)
    assert [(r["aspect"], r["version"]) for r in found] == [("chartKey", 0), ("status", 0), ("status", 1)]
    assert found[0]["metadata"] == {"dashboardTool": "looker", "chartId": f"{prefix}Revenue %28EUR%29"}
    key_message = read_message(
        consumer.endpoints.kafka, first.topic, first.partition or 0, (first.offset or 1) - 1
    )
    assert key_message.key() == urn.encode("utf-8")
    key_mcl = consumer.codec.decode(first.topic, key_message.value() or b"")
    assert (key_mcl["entityUrn"], key_mcl["aspectName"]) == (urn, "chartKey")
    assert consumer.drain(30)
    doc = consumer.store.get(
        "chartindex_v2", f"urn%3Ali%3Achart%3A%28looker%2C{prefix}Revenue+%2528EUR%2529%29"
    )
    assert doc is not None
    assert (doc["tool"], doc["removed"]) == ("looker", True)
    assert isinstance(doc["systemCreated"], int)
