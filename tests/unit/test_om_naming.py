"""OpenMetadata's names: index and aliases under a cluster alias, entity types by table, ids."""

from __future__ import annotations

import pytest

from auditor.errors import ConfigError
from auditor.platforms.openmetadata.document import build_document, fqn_hash, split_fqn
from auditor.platforms.openmetadata.naming import entities, entity, is_uuid


def test_index_and_aliases_take_the_cluster_alias_prefix() -> None:
    table = entity("table")
    assert table.index_name() == "table_search_index"
    assert table.index_name("prod") == "prod_table_search_index"
    assert table.aliases("prod")[:2] == ("prod_table", "prod_database")
    assert "prod_dataAsset" in table.aliases("prod")
    assert entity("glossary_term_entity").index_name() == "glossary_term_search_index"
    assert entity("dbservice_entity").entity_type == "databaseService"


def test_an_unknown_entity_table_is_a_clear_error_with_the_nearest() -> None:
    with pytest.raises(ConfigError) as caught:
        entity("tabel_entity")
    assert "tabel_entity" in str(caught.value) and "table_entity" in (caught.value.hint or "")
    assert [e.entity_type for e in entities(("table", "table_entity"))] == ["table"]


def test_ids_are_uuids() -> None:
    assert is_uuid("3f1b8c52-8a6e-4a57-9d1c-0c9e5b7a2f10")
    assert not is_uuid("urn:li:dataset:x") and not is_uuid("3f1b8c52") and not is_uuid("")


def test_fqn_hash_is_the_md5_of_each_part_and_quotes_keep_dots_inside() -> None:
    assert split_fqn('svc.db."sch.with.dots".t') == ["svc", "db", '"sch.with.dots"', "t"]
    assert fqn_hash("a.b") == "0cc175b9c0f1b6a831c399e269772661.92eb5ffee6ae2fec3ad71c777531578f"


def test_the_document_drops_unindexed_fields_and_adds_the_common_attributes() -> None:
    row = {
        "id": "i",
        "name": "t",
        "fullyQualifiedName": "s.d.c.t",
        "deleted": "true",
        "changeDescription": {"x": 1},
        "votes": {"upVotes": 3, "downVotes": 1},
    }
    doc = build_document(
        row,
        "table",
        owners=[{"id": "u1", "type": "user", "name": "alice"}],
        tags=[{"tagFQN": "PII.Sensitive", "source": 0, "labelType": 0, "state": 1}, {"tagFQN": "Tier.Tier2"}],
    )
    assert "changeDescription" not in doc and "votes" not in doc
    assert doc["deleted"] is True and doc["entityType"] == "table" and doc["totalVotes"] == 2
    assert doc["owners"] == [{"id": "u1", "type": "user", "name": "alice", "displayName": "alice"}]
    # a TagLabel carries its tag's name (the last part of its FQN), as OpenMetadata indexes it
    assert doc["tags"] == [
        {
            "tagFQN": "PII.Sensitive",
            "name": "Sensitive",
            "source": "Classification",
            "labelType": "Manual",
            "state": "Confirmed",
        }
    ]
    assert doc["tier"] == {"tagFQN": "Tier.Tier2", "name": "Tier2"}
    assert doc["descriptionStatus"] == "INCOMPLETE"
    assert doc["fqnHash"] == fqn_hash("s.d.c.t") and "t" not in doc["fqnParts"] and "s.d.c" in doc["fqnParts"]
    # FullyQualifiedName.getAllParts: every contiguous run, the middle ones too
    assert {"d.c", "c.t", "d.c.t", "s.d.c.t"} <= set(doc["fqnParts"])
    assert doc["descriptionSources"] == {} and doc["upstreamLineage"] == []


def test_the_platform_and_the_cluster_alias_come_from_toml_env_or_flags(tmp_path) -> None:
    from auditor.settings import load_settings

    config = tmp_path / "om.toml"
    config.write_text('platform = "openmetadata"\ncluster_alias = "from_file"\n')
    s = load_settings(config, env={})
    assert s.platform == "openmetadata" and s.cluster_alias == "from_file"
    s = load_settings(config, env={"ELASTICSEARCH_CLUSTER_ALIAS": "om_env", "AUDITOR_PLATFORM": "datahub"})
    assert s.cluster_alias == "om_env" and s.platform == "datahub"
    assert load_settings(env={}, platform="openmetadata", cluster_alias="flag").cluster_alias == "flag"
    with pytest.raises(ConfigError, match="platform"):
        load_settings(env={"AUDITOR_PLATFORM": "amundsen"})
