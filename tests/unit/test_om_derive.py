"""What OpenMetadata derives into a document (child tags, column names, inherited refs), and
stored JSON too deep for a decoder."""

from __future__ import annotations

import pytest

from auditor.core.json_guard import TooDeep, loads
from auditor.platforms.openmetadata.document import build_document, fqn_hash
from auditor.platforms.openmetadata.fields import BadRow, parse_entity, row_fields


def _table() -> dict:
    return {
        "id": "i",
        "name": "t",
        "fullyQualifiedName": "s.d.c.t",
        "sampleData": {"rows": []},
        "columns": [
            {"name": "a", "fullyQualifiedName": "s.d.c.t.a", "description": "x"},
            {
                "name": "addr",
                "fullyQualifiedName": "s.d.c.t.addr",
                "children": [{"name": "zip.code", "fullyQualifiedName": 's.d.c.t.addr."zip.code"'}],
            },
        ],
    }


def test_column_tags_go_into_the_tags_and_back_on_their_columns() -> None:
    nested = 's.d.c.t.addr."zip.code"'
    usages = [
        {"tagFQN": "PII.Sensitive", "source": 0, "labelType": 0, "state": 1, "target": fqn_hash(nested)},
        {"tagFQN": "Tier.Tier1", "source": 0, "labelType": 0, "state": 1, "target": fqn_hash("s.d.c.t")},
    ]
    row = _table()
    doc = build_document(row, "table", tags=usages)
    assert [t["tagFQN"] for t in doc["tags"]] == ["PII.Sensitive"] and doc["tier"]["tagFQN"] == "Tier.Tier1"
    assert doc["columns"][1]["children"][0]["tags"][0]["tagFQN"] == "PII.Sensitive"
    assert "tags" not in row["columns"][1]["children"][0]  # the row itself is left alone
    assert doc["columnNames"] == ["a", "addr", 'addr."zip.code"']
    assert doc["columnDescriptionStatus"] == "INCOMPLETE" and "sampleData" not in doc
    assert row_fields(row, tags=usages).tags == {"PII.Sensitive", "Tier.Tier1"}


def test_inline_child_tags_count_and_inherited_refs_keep_their_mark() -> None:
    pipeline = {
        "id": "p",
        "name": "p",
        "fullyQualifiedName": "svc.p",
        "tasks": [{"name": "t1", "tags": [{"tagFQN": "PII.NonSensitive"}]}],
    }
    owner = {"id": "team1", "type": "team", "name": "t", "inherited": True}
    doc = build_document(
        pipeline, "pipeline", owners=[owner], domains=[{"id": "d", "type": "domain", "name": "D"}]
    )
    assert [t["tagFQN"] for t in doc["tags"]] == ["PII.NonSensitive"]
    assert doc["owners"][0]["inherited"] is True and doc["domains"][0]["displayName"] == "D"
    assert row_fields(pipeline).tags == {"PII.NonSensitive"}


@pytest.mark.parametrize("depth", [1025, 5000, 100_000])
def test_json_deeper_than_any_decoder_is_an_unreadable_row_not_a_crash(depth: int) -> None:
    text = '{"id": "x", "a": ' + "[" * depth + "]" * depth + "}"
    with pytest.raises(TooDeep):
        loads(text)
    with pytest.raises(BadRow, match="deeper than"):
        parse_entity(text, "x")
    lone = '{"id": "x", "s": "\\ud800"}'  # orjson refuses a lone surrogate; the stdlib reads it
    assert loads(lone)["s"] == "\ud800"
    with pytest.raises(ValueError):
        loads("{")


def _chain(levels: int) -> dict:
    """A column with `levels` nested children below it, each tagged with its depth."""
    column: dict = {"name": f"c{levels}", "tags": [{"tagFQN": f"T.{levels}"}]}
    for depth in reversed(range(levels)):
        column = {"name": f"c{depth}", "tags": [{"tagFQN": f"T.{depth}"}], "children": [column]}
    return column


def test_the_childrens_inline_labels_and_hashes_are_walked_as_openmetadata_nests_them() -> None:
    """The scan gathers every row's children's inline labels and hashes with its own walkers:
    nested columns and schema fields down to 64 levels below the first, tasks and an ML
    feature's sources one level only (their hashes: the features' own), a name holding a dot
    quoted in its hash, what is not an object passed over."""
    from auditor.platforms.openmetadata.derive import child_hashes, inline_child_labels, part_hash

    entity = {
        "columns": [_chain(70), "not a child"],
        "tasks": [{"name": "t", "tags": [{"tagFQN": "Task.T"}], "children": [_chain(1)]}],
        "messageSchema": {"schemaFields": [{"name": "f.x", "tags": ["bare", {"tagFQN": "F.X"}]}]},
        "mlFeatures": [{"name": "m", "tags": [{"tagFQN": "M.M"}], "featureSources": [_chain(1)]}],
    }
    fqns = [label["tagFQN"] for label in inline_child_labels(entity)]
    assert fqns == [f"T.{d}" for d in range(65)] + ["Task.T", "F.X", "M.M", "T.0"]
    hashes = child_hashes(entity, "own")
    column = "own"
    for depth in range(65):
        column = f"{column}.{part_hash(f'c{depth}')}"
        assert hashes[depth] == column
    assert hashes[65:] == [
        f"own.{part_hash('t')}",
        f"own.{part_hash(chr(34) + 'f.x' + chr(34))}",
        f"own.{part_hash('m')}",
    ]
