"""OpenMetadata's comparison rules: booleans as strings, owners and tags as sets, the tier among tags."""

from __future__ import annotations

import json

import pytest

from auditor.platforms.openmetadata.fields import (
    BadRow,
    as_bool,
    differences,
    doc_fields,
    parse_entity,
    row_fields,
)

ID = "3f1b8c52-8a6e-4a57-9d1c-0c9e5b7a2f10"
ALICE = "0b7e1a3c-1111-4e2b-8c3d-222222222222"
BOB = "0b7e1a3c-3333-4e2b-8c3d-444444444444"


def entity(**more):
    base = {
        "id": ID,
        "name": "orders",
        "fullyQualifiedName": "svc.db.sch.orders",
        "description": "Orders",
        "version": 0.3,
        "updatedAt": 1764745200123,
        "deleted": False,
    }
    return {**base, **more}


def doc(**more):
    base = {
        "id": ID,
        "name": "orders",
        "fullyQualifiedName": "svc.db.sch.orders",
        "description": "Orders",
        "version": 0.3,
        "updatedAt": 1764745200123,
        "deleted": False,
        "owners": [],
        "tags": [],
    }
    return {**base, **more}


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, True), ("true", True), ("TRUE", True), (" True ", True), (1, True), (False, False),
     ("false", False), ("False", False), (0, False), (None, None), ("maybe", None)],
)  # fmt: skip
def test_deleted_reads_as_a_boolean_whether_string_or_bool(value, expected) -> None:
    assert as_bool(value) is expected


def test_the_soft_delete_scripts_string_true_equals_a_rebuilds_boolean() -> None:
    truth = row_fields(entity(deleted=True))
    assert doc_fields(doc(deleted="true")).deleted is True
    assert doc_fields(doc(deleted="true")).deleted == truth.deleted
    assert doc_fields(doc(deleted="false")).deleted != truth.deleted
    assert doc_fields(doc()).deleted is False and doc_fields({"id": ID}).deleted is False


def test_owners_compare_as_a_set_of_ids_from_the_relationships() -> None:
    owners = [{"id": ALICE, "type": "user"}, {"id": BOB, "type": "team"}]
    truth = row_fields(entity(), owners=owners)
    same = doc(owners=[{"id": BOB, "type": "team", "name": "b"}, {"id": ALICE.upper(), "type": "user"}])
    assert differences(truth, doc_fields(same)) == []
    assert differences(truth, doc_fields(doc(owners=[{"id": ALICE, "type": "user"}]))) == ["owners"]


def test_tags_compare_as_a_set_and_the_tier_counts_among_them() -> None:
    tags = [{"tagFQN": "PII.Sensitive"}, {"tagFQN": "Tier.Tier1"}]
    truth = row_fields(entity(), tags=tags)
    split = doc(tags=[{"tagFQN": "PII.Sensitive"}], tier={"tagFQN": "Tier.Tier1"})
    assert differences(truth, doc_fields(split)) == []
    reordered = doc(tags=[{"tagFQN": "Tier.Tier1"}, {"tagFQN": "PII.Sensitive"}])
    assert differences(truth, doc_fields(reordered)) == []
    assert differences(truth, doc_fields(doc(tags=[{"tagFQN": "PII.Sensitive"}]))) == ["tags"]


def test_inline_owners_and_tags_of_the_json_count_too() -> None:
    truth = row_fields(entity(owners=[{"id": ALICE, "type": "user"}], tags=[{"tagFQN": "A.b"}]))
    assert truth.owners == {ALICE} and truth.tags == {"A.b"}


def test_each_key_field_is_compared() -> None:
    truth = row_fields(entity())
    cases = {
        "version": doc(version=0.2),
        "updatedAt": doc(updatedAt=1),
        "name": doc(name="Orders"),
        "fullyQualifiedName": doc(fullyQualifiedName="svc.db.sch.x"),
        "description": doc(description="old"),
    }
    for field_name, stale in cases.items():
        assert differences(truth, doc_fields(stale)) == [field_name]
    # a version the index holds as a float, a missing description as an empty one
    assert differences(truth, doc_fields(doc(version="0.3"))) == []
    assert differences(row_fields(entity(description=None)), doc_fields(doc(description=""))) == []


def test_a_row_that_is_not_an_entity_is_refused_with_the_reason() -> None:
    assert parse_entity(json.dumps(entity()), ID)["name"] == "orders"
    assert parse_entity(entity(), ID)["name"] == "orders"
    with pytest.raises(BadRow, match="not JSON"):
        parse_entity("{oops", ID)
    with pytest.raises(BadRow, match="not an entity object"):
        parse_entity("[1, 2]", ID)
    with pytest.raises(BadRow, match="not the row's id"):
        parse_entity(entity(id="other"), ID)


def test_a_doc_one_soft_delete_behind_keeps_its_version_as_openmetadatas_script_leaves_it() -> None:
    from auditor.platforms.openmetadata.fields import only_the_delete_flag_moved

    change = {
        "fieldsUpdated": [{"name": "deleted", "oldValue": False, "newValue": True}],
        "previousVersion": 0.3,
    }
    row = entity(deleted=True, version=0.4, updatedAt=1764745300000, changeDescription=change)
    by_script = doc_fields(doc(deleted="true"))  # version 0.3, the old updatedAt
    assert only_the_delete_flag_moved(row, by_script)
    # the flag itself not written: not explained; another field changed: not explained either
    assert not only_the_delete_flag_moved(row, doc_fields(doc()))
    described = {**change, "fieldsUpdated": [{"name": "description"}]}
    assert not only_the_delete_flag_moved({**row, "changeDescription": described}, by_script)
    assert not only_the_delete_flag_moved(row, doc_fields(doc(deleted="true", version=0.2)))
