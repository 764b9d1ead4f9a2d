"""DataHub identities: doc ids, system-metadata and edge ids, and Kafka's murmur2 partitioner."""

from __future__ import annotations

import pytest

from auditor.platforms.datahub.naming import document_id, edge_id, system_metadata_id
from auditor.platforms.datahub.urns import UrnError, entity_type, murmur2, urn_partition

# Kafka's own test vectors (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java)
MURMUR2 = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("data", "expected"), MURMUR2)
def test_murmur2_matches_kafka(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@pytest.mark.parametrize(
    ("urn", "doc_id"),
    [
        (
            "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)",
            "urn%3Ali%3Adataset%3A%28urn%3Ali%3AdataPlatform%3Ahive%2Cdb.t%2CPROD%29",
        ),
        ("urn:li:corpuser:jdoe", "urn%3Ali%3Acorpuser%3Ajdoe"),
        ("urn:li:tag:a b~c*d+e%f", "urn%3Ali%3Atag%3Aa+b%7Ec*d%2Be%25f"),
        ("urn:li:tag:café_中", "urn%3Ali%3Atag%3Acaf%C3%A9_%E4%B8%AD"),
    ],
)
def test_document_id_is_java_urlencoder(urn: str, doc_id: str) -> None:
    assert document_id(urn) == doc_id


def test_partition_is_positive_murmur2_mod_partitions() -> None:
    urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"
    assert urn_partition(urn, 4) == (murmur2(urn.encode()) & 0x7FFFFFFF) % 4
    assert {urn_partition(f"urn:li:tag:{i}", 4) for i in range(50)} == {0, 1, 2, 3}


def test_ids_of_system_metadata_and_edges() -> None:
    # base64(md5("urn:li:corpuser:datahub--corpUserInfo")) computed with coreutils
    assert system_metadata_id("urn:li:corpuser:datahub", "corpUserInfo") == "gou3MO0jzerhyT5BOUlkeg=="
    assert edge_id("urn:li:a:1", "OwnedBy", "urn:li:corpuser:x") != edge_id(
        "urn:li:a:1", "OwnedBy", "urn:li:corpuser:x", "owner"
    )


def test_entity_type() -> None:
    assert entity_type("urn:li:dataset:(urn:li:dataPlatform:hive,x,PROD)") == "dataset"
    with pytest.raises(UrnError):
        entity_type("dataset:x")


@pytest.mark.parametrize(
    ("urn", "expected"),
    [
        ("urn:li:dataJob:(urn:li:dataFlow:(airflow,dag,prod),task)", "dataJob"),
        ("urn:li:corpuser", "corpuser"),  # no key: still a corpuser (its key cannot be read)
        ("urn:li:", None),
        ("urn:li::x", None),
        ("urn:custom-ns:dataset:x", None),  # a Java Urn, but not in DataHub's namespace
    ],
)
def test_entity_type_is_read_one_way(urn: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(UrnError):
            entity_type(urn)
    else:
        assert entity_type(urn) == expected
