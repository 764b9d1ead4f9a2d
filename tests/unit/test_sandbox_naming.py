"""DataHub names and ids as the sandbox produces them, against values written out literally."""

from __future__ import annotations

import pytest

from sandbox.endpoints import Endpoints
from sandbox.naming import (
    edge_doc_id,
    entity_doc_id,
    entity_index,
    entity_type_of,
    graph_index,
    subject_for,
    system_metadata_doc_id,
    system_metadata_index,
)


@pytest.mark.parametrize(
    "urn,doc_id",
    [
        (
            "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)",
            "urn%3Ali%3Adataset%3A%28urn%3Ali%3AdataPlatform%3Ahive%2Cdb.t%2CPROD%29",
        ),
        ("urn:li:corpuser:Jane Doe", "urn%3Ali%3Acorpuser%3AJane+Doe"),
        ("urn:li:tag:a~b*c-d_e.f", "urn%3Ali%3Atag%3Aa%7Eb*c-d_e.f"),
        ("urn:li:tag:c++ 50%", "urn%3Ali%3Atag%3Ac%2B%2B+50%25"),
        ("urn:li:glossaryTerm:Méta.中文", "urn%3Ali%3AglossaryTerm%3AM%C3%A9ta.%E4%B8%AD%E6%96%87"),
        (
            "urn:li:dataset:(urn:li:dataPlatform:hive,t%281%29%2Cx,PROD)",
            "urn%3Ali%3Adataset%3A%28urn%3Ali%3AdataPlatform%3Ahive%2Ct%25281%2529%252Cx%2CPROD%29",
        ),
        ("urn:li:chart:(looker,A/B?&=#'!)", "urn%3Ali%3Achart%3A%28looker%2CA%2FB%3F%26%3D%23%27%21%29"),
    ],
)
def test_entity_doc_id_is_java_urlencoder(urn: str, doc_id: str) -> None:
    assert entity_doc_id(urn) == doc_id


def test_system_metadata_and_edge_ids() -> None:
    # base64(md5(...)) of the UTF-8 bytes, standard alphabet with padding
    assert system_metadata_doc_id("urn:li:corpuser:datahub", "corpUserInfo") == "gou3MO0jzerhyT5BOUlkeg=="
    assert (
        edge_doc_id("urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)", "OwnedBy", "urn:li:corpuser:jdoe")
        == "eQXSLUjGvoL/uHbsywFjlQ=="
    )
    assert edge_doc_id("a", "R", "b", "owner") != edge_doc_id("a", "R", "b")
    assert edge_doc_id("a", "R", "b", " ") == edge_doc_id("a", "R", "b")


def test_index_names() -> None:
    assert entity_index("dataset") == "datasetindex_v2"
    assert entity_index("corpGroup") == "corpgroupindex_v2"
    assert entity_index("glossaryTerm", "prod") == "prod_glossarytermindex_v2"
    assert system_metadata_index() == "system_metadata_service_v1"
    assert graph_index("x") == "x_graph_service_v1"
    assert subject_for("MetadataChangeLog_Versioned_v1") == "MetadataChangeLog_Versioned_v1-value"


def test_entity_type_of() -> None:
    assert entity_type_of("urn:li:dataJob:(urn:li:dataFlow:(a,b,c),d)") == "dataJob"
    assert entity_type_of("urn:li:corpuser:a:b") == "corpuser"
    with pytest.raises(ValueError):
        entity_type_of("not-a-urn")


def test_endpoints_defaults_and_overrides() -> None:
    defaults = Endpoints.from_env({})
    assert defaults.pg_url == "postgresql+psycopg://datahub:datahub@127.0.0.1:15432/datahub"
    assert defaults.mysql_url == "mysql+pymysql://datahub:datahub@127.0.0.1:13306/datahub"
    assert defaults.kafka == "127.0.0.1:19092"
    assert defaults.registry == "http://127.0.0.1:18081/apis/ccompat/v7"
    assert defaults.opensearch == "http://127.0.0.1:19200"
    assert defaults.elasticsearch == "http://127.0.0.1:19201"
    custom = Endpoints.from_env(
        {
            "SANDBOX_KAFKA": "k:1",
            "SANDBOX_OPENSEARCH": "http://o:2",
            "SANDBOX_PG_URL": "",
            "SANDBOX_MYSQL_URL": "mysql://m",
            "SANDBOX_REGISTRY": "http://r",
            "SANDBOX_ELASTICSEARCH": "e",
        }
    )
    assert (custom.kafka, custom.opensearch, custom.pg_url) == ("k:1", "http://o:2", defaults.pg_url)
    assert custom.store_url("mariadb") == "mysql://m"
    assert custom.search_url("elasticsearch") == "e"
    with pytest.raises(ValueError):
        custom.store_url("oracle")
