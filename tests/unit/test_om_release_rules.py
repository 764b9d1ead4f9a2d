"""OpenMetadata's derived fields by release (pure): classificationTags / glossaryTags written from
SPLIT_TAGS_SINCE and compared only where a document holds them; Tier left out of the comparison."""

from __future__ import annotations

from auditor.platforms.openmetadata.document import SPLIT_TAGS_SINCE, build_document, split_by_source
from auditor.platforms.openmetadata.fields import differences, doc_fields, keys_agree, row_fields

ID = "3f1b8c52-8a6e-4a57-9d1c-0c9e5b7a2f10"
PII = {"tagFQN": "PII.Sensitive", "source": "Classification"}
TIER = {"tagFQN": "Tier.Tier1", "source": "Classification"}
TERM = {"tagFQN": "Glossary.Revenue", "source": "Glossary"}


def entity(**more):
    base = {
        "id": ID,
        "name": "orders",
        "fullyQualifiedName": "svc.db.sch.orders",
        "version": 0.1,
        "updatedAt": 1,
    }
    return {**base, **more}


def test_split_by_source_keeps_a_tier_among_the_classification_tags():
    assert split_by_source([PII, TIER, TERM]) == {
        "classificationTags": ["PII.Sensitive", "Tier.Tier1"],
        "glossaryTags": ["Glossary.Revenue"],
    }


def test_a_repair_writes_them_from_the_release_that_does():
    row = entity(tags=[PII, TIER, TERM])
    newest = build_document(row, "table")
    assert newest["classificationTags"] == ["PII.Sensitive", "Tier.Tier1"]
    assert newest["glossaryTags"] == ["Glossary.Revenue"] and newest["tier"]["tagFQN"] == "Tier.Tier1"
    assert build_document(row, "table", release=SPLIT_TAGS_SINCE)["glossaryTags"] == ["Glossary.Revenue"]
    older = build_document(row, "table", release=(1, 9, 0))
    assert "classificationTags" not in older and "glossaryTags" not in older
    assert older["tier"]["tagFQN"] == "Tier.Tier1"  # an object in every release read
    assert build_document(entity(), "table")["tier"] is None  # TableIndex puts it, null when none


def test_a_document_without_them_is_never_a_difference():
    truth = row_fields(entity(tags=[PII, TERM]))
    old = doc_fields(entity(tags=[PII, TERM]))
    assert differences(truth, old) == []


def test_compared_where_the_document_holds_them():
    truth = row_fields(entity(tags=[PII, TERM]))
    good = doc_fields(
        entity(
            tags=[PII, TERM],
            classificationTags=["PII.Sensitive", "Tier.Tier1"],
            glossaryTags=["Glossary.Revenue"],
        )
    )
    assert differences(truth, good) == []
    assert truth.key() == good.key() and keys_agree(truth.key(), good.key())
    bad = doc_fields(
        entity(tags=[PII, TERM], classificationTags=[], glossaryTags=["Glossary.Revenue", "Glossary.Cost"])
    )
    assert differences(truth, bad) == ["classificationTags", "glossaryTags"]


def test_children_s_tags_may_or_may_not_be_counted():
    own_hash_child = {"tagFQN": "PII.NonSensitive", "source": 0, "target": "not-the-entity"}
    truth = row_fields(entity(tags=[PII]), tags=[own_hash_child])
    for held in (["PII.Sensitive"], ["PII.Sensitive", "PII.NonSensitive"]):
        seen = doc_fields(entity(tags=[PII, own_hash_child], classificationTags=held, glossaryTags=[]))
        assert differences(truth, seen) == [], held
        assert keys_agree(truth.key(), seen.key()), held  # the range decided on the keys alone
    for held in ([], ["PII.NonSensitive"], ["PII.Sensitive", "PII.Other"]):  # short of it, or past it
        seen = doc_fields(entity(tags=[PII, own_hash_child], classificationTags=held, glossaryTags=[]))
        assert differences(truth, seen) == ["classificationTags"], held
        assert not keys_agree(truth.key(), seen.key()), held


def test_a_label_source_counts_in_any_spelling_and_an_unknown_one_in_neither_field():
    """tag_usage stores the source as an ordinal, a TagLabel spells it; the key's split fields
    bucket every spelling alike (and an odd value, even an unhashable one, in neither)."""
    spelled = [
        {"tagFQN": "PII.Sensitive", "source": 0},
        {"tagFQN": "Glossary.Revenue", "source": "Glossary"},
        {"tagFQN": "PII.Name", "source": "CLASSIFICATION"},
        {"tagFQN": "Glossary.Cost", "source": 1},
        {"tagFQN": "Odd.One", "source": ["Classification"]},
        {"tagFQN": "Tier.Tier1", "source": "Classification"},
    ]
    truth = row_fields(entity(), tags=spelled)
    own = dict(zip(("classificationTags", "glossaryTags"), truth.split, strict=True))
    assert own["classificationTags"] == (frozenset({"PII.Sensitive", "PII.Name"}),) * 2
    assert own["glossaryTags"] == (frozenset({"Glossary.Revenue", "Glossary.Cost"}),) * 2
    assert row_fields(entity(), tags=[]).split == ((frozenset(), frozenset()),) * 2


def test_the_fqn_hash_a_caller_already_made_gives_the_same_fields():
    """The tag attach hands its hash of the JSON's FQN on (`own_hash`); the fields are the ones
    made without it, and a child's label still counts as the child's."""
    from auditor.platforms.openmetadata.document import fqn_hash

    own_hash = fqn_hash("svc.db.sch.orders")
    labels = [
        {"tagFQN": "PII.Sensitive", "source": 0, "target": own_hash},
        {"tagFQN": "PII.Name", "source": 0, "target": own_hash + ".abc"},
    ]
    made = row_fields(entity(), tags=labels)
    assert row_fields(entity(), tags=labels, own_hash=own_hash) == made
    assert made.split[0] == (frozenset({"PII.Sensitive"}), frozenset({"PII.Sensitive", "PII.Name"}))
