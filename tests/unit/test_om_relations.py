"""What an OpenMetadata document takes from entity_relationship (relations.py), compared and
built without a server; and an OpenMetadata repair's outcome in OpenMetadata's words."""

from __future__ import annotations

import io

from rich.console import Console

from auditor.core.model import RepairKind
from auditor.core.plan import RebuildOutcome, RepairAction, RepairPlan
from auditor.platforms.openmetadata import relations
from auditor.platforms.openmetadata.document import fqn_hash
from auditor.platforms.openmetadata.fields import differences, doc_fields, keys_agree, row_fields
from auditor.platforms.openmetadata.store import reference
from auditor.reports.rebuild_report import render_console

T, U, S, P, ALICE = (f"{n}0000000-0000-4000-8000-000000000000" for n in "12345")
TABLE = {"id": T, "name": "b", "fullyQualifiedName": "svc.db.sch.b", "version": 0.2, "updatedAt": 5}
UP = {"id": U, "name": "a", "fullyQualifiedName": "svc.db.sch.a"}
LINKS = [
    {"r": 0, "id": S, "type": "databaseService"},
    {
        "r": 13,
        "id": U,
        "type": "table",
        "json": '{"description": "load", "columnsLineage": [], "source": "Manual"}',
    },
    {"r": 11, "id": ALICE, "type": "user"},
    {"r": 18, "id": ALICE, "type": "user", "json": '"votedUp"'},
]


def test_the_row_side_reads_each_relation_for_the_types_that_write_it() -> None:
    truth = row_fields(TABLE, links=LINKS, entity_type="table")
    assert (truth.service, truth.lineage, truth.followers, truth.votes) == (S, {U}, {ALICE}, 1)
    user = row_fields({"id": T, "name": "u"}, links=LINKS, entity_type="user")
    assert user.service is None and user.lineage is None  # a user's index writes neither
    assert row_fields(TABLE, links=LINKS).service is None  # no type said: not compared


def test_a_lost_edge_follow_or_vote_is_its_field_alone() -> None:
    truth = row_fields(TABLE, links=LINKS, entity_type="table")
    held = {**TABLE, "service": {"id": S}, "followers": [ALICE], "totalVotes": 1}
    assert differences(truth, doc_fields({**held, "upstreamLineage": [{"fromEntity": {"id": U}}]})) == []
    assert differences(truth, doc_fields({**held, "upstreamLineage": []})) == ["upstreamLineage"]
    assert differences(truth, doc_fields(held)) == ["upstreamLineage"]  # [] is left out by `_source`
    lost = {**held, "upstreamLineage": [{"fromEntity": {"id": U}}]}
    assert differences(truth, doc_fields({**lost, "service": None})) == ["service"]
    assert differences(truth, doc_fields({**lost, "followers": []})) == ["followers"]
    assert differences(truth, doc_fields({**lost, "totalVotes": 0})) == ["totalVotes"]
    assert not keys_agree(truth.key(), doc_fields({**held, "upstreamLineage": []}).key())
    bare = row_fields({"id": T, "name": "u"}, entity_type="user")
    assert keys_agree(bare.key(), doc_fields({"id": T, "name": "u"}).key())  # none on both sides


def test_lineage_entries_are_built_as_lineage_repository_builds_them() -> None:
    found = {U: ("table", UP), S: ("databaseService", {"name": "svc", "fullyQualifiedName": "svc"})}
    built = relations.derived("table", TABLE, LINKS, found, reference, fqn_hash)
    assert built["service"]["id"] == S and built["followers"] == [ALICE] and built["totalVotes"] == 1
    (entry,) = built["upstreamLineage"]
    assert entry == {
        "docId": "svc.db.sch.a--->svc.db.sch.b",
        "docUniqueId": f"{U}--->{T}",
        "fromEntity": {
            "id": U,
            "type": "table",
            "fullyQualifiedName": "svc.db.sch.a",
            "fqnHash": fqn_hash("svc.db.sch.a"),
        },
        "description": "load",
        "source": "Manual",
    }  # the empty columnsLineage left out (collectionOrDefault), nulls left out
    gone = relations.derived("table", TABLE, LINKS, {}, reference, fqn_hash)
    assert gone["upstreamLineage"] == [] and "service" not in gone  # rows gone: skipped
    assert relations.total_votes([{"r": 18, "json": "votedDown"}, {"r": 18, "json": '"votedDown"'}]) == 0


def test_an_openmetadata_repair_speaks_openmetadata() -> None:
    action = RepairAction(RepairKind.REWRITE_DOCUMENT, T, entity_type="table")
    outcome = RebuildOutcome("reindex", False, RepairPlan([action]), rows=1, platform="openmetadata")
    out = io.StringIO()
    render_console(outcome, Console(file=out, width=200))
    said = out.getvalue()
    assert "1  entities in scope" in said and "from its row and relationships" in said
    assert "version-0" not in said and "replay" not in said


def test_an_edge_through_a_pipeline_carries_the_pipeline_as_its_row_holds_it() -> None:
    via = {"r": 13, "id": U, "type": "table", "json": {"pipeline": {"id": P, "type": "pipeline"}}}
    pipeline = {"id": P, "name": "etl", "fullyQualifiedName": "airflow.etl", "changeDescription": {}}
    found = {U: ("table", UP), P: ("pipeline", pipeline)}
    (entry,) = relations.derived("table", TABLE, [via], found, reference, fqn_hash)["upstreamLineage"]
    assert entry["docId"] == f"svc.db.sch.a--->pipeline:{P}--->svc.db.sch.b"
    assert entry["pipelineEntityType"] == "pipeline"
    assert entry["pipeline"] == {
        "id": P,
        "name": "etl",
        "fullyQualifiedName": "airflow.etl",
        "fqnHash": fqn_hash("airflow.etl"),
    }
    assert relations.wanted("table", [via]) == {("table", U), ("pipeline", P)}
