"""The OM sandbox's pure logic: FQN quoting and hashing, index names and aliases, the doc shape."""

from __future__ import annotations

import hashlib

import pytest

from sandbox.openmetadata import fqn, indices
from sandbox.openmetadata.docs import build_doc
from sandbox.openmetadata.entities import OmEntity, new_entity_json, next_version, tag_label


def md5(s: str) -> str:
    return hashlib.md5(s.encode()).hexdigest()


def test_fqn_hash_hashes_each_quoted_part() -> None:
    assert fqn.fqn_hash("svc.db.sch.t") == ".".join(md5(p) for p in ("svc", "db", "sch", "t"))
    # a name with a dot stays quoted inside the FQN and is hashed with its quotes
    assert fqn.build("svc", "a.b") == 'svc."a.b"'
    assert fqn.split('svc."a.b".t') == ["svc", '"a.b"', "t"]
    assert fqn.fqn_hash('svc."a.b"') == md5("svc") + "." + md5('"a.b"')
    # a quoted name without a dot is unquoted before hashing (quoteName)
    assert fqn.fqn_hash('"svc".db') == md5("svc") + "." + md5("db")
    assert fqn.fqn_hash("user1") == md5("user1")


def test_fqn_rejects_bad_names() -> None:
    with pytest.raises(ValueError):
        fqn.split('svc."a.b')
    with pytest.raises(ValueError):
        fqn.quote_name('a"b')


def test_fqn_parts_exclude_the_entity_name() -> None:
    assert fqn.fqn_parts("s.d.c.t") == sorted(
        {"s", "d", "c", "s.d", "s.d.c", "s.d.c.t", "d.c", "d.c.t", "c.t"}
    )


def test_index_names_and_aliases_take_the_cluster_alias() -> None:
    assert indices.index_name("table") == "table_search_index"
    assert indices.index_name("table", "prod") == "prod_table_search_index"
    assert indices.aliases("table", "prod") == [
        "prod_table",
        "prod_database",
        "prod_databaseSchema",
        "prod_databaseService",
        "prod_all",
        "prod_dataAsset",
    ]
    assert indices.aliases("user") == ["user"]
    assert "table" in indices.child_aliases("databaseSchema")


def test_doc_drops_change_description_and_adds_common_attributes() -> None:
    owner = OmEntity("user", new_entity_json("user", "alice", None, email="a@x"))
    table = OmEntity("table", new_entity_json("table", "t", None, description="d"))
    table.json["owners"] = [owner.reference()]
    table.json["tags"] = [tag_label("PII.Sensitive"), tag_label("Tier.Tier1")]
    table.json["changeDescription"] = {"fieldsUpdated": []}
    table.json["columns"] = [{"name": "c1", "tags": []}]
    doc = build_doc(table)
    assert "changeDescription" not in doc and "votes" not in doc
    assert doc["entityType"] == "table" and doc["displayName"] == "t"
    assert doc["owners"][0]["displayName"] == "alice"
    assert [t["tagFQN"] for t in doc["tags"]] == ["PII.Sensitive"]
    assert doc["tier"]["tagFQN"] == "Tier.Tier1"
    assert doc["descriptionStatus"] == "COMPLETE" and doc["deleted"] is False
    assert doc["fqnHash"] == md5("t") and doc["columnNames"] == ["c1"]
    stored = table.stored_json()
    assert "owners" not in stored and "tags" not in stored and "tags" not in stored["columns"][0]


def test_version_bumps_by_a_tenth() -> None:
    assert next_version(0.1) == 0.2 and next_version(0.9) == 1.0 and next_version(1.2) == 1.3
