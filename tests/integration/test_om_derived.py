"""What OpenMetadata derives into a document (child tags, inherited owners), against the real servers.

On both pairs (PostgreSQL + OpenSearch 3, MariaDB + Elasticsearch 9): a catalog whose columns
(nested ones too) and pipeline tasks carry tags, and whose tables partly inherit their
schema's owners, written the way OpenMetadata's server writes it, scans clean; a targeted
repair and a full rebuild of those documents keep the column tag, the task tag and the
inherited owner (the documents are read back after each).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from om_world import World, om_world

from auditor.api import rebuild
from auditor.core.model import Selection, Verdict
from auditor.rebuild.request import RebuildRequest
from sandbox.openmetadata.entities import OmEntity
from sandbox.openmetadata.faults import Fault
from sandbox.openmetadata.indices import refresh_all

pytestmark = pytest.mark.integration

PAIRS = [("postgres", "opensearch3"), ("mariadb", "elasticsearch")]


@pytest.fixture(params=PAIRS, ids=lambda p: f"{p[0]}+{p[1]}")
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    with om_world(*request.param, tmp_path) as made:
        yield made


def _tag_fqns(labels: Any) -> set[str]:
    return {t["tagFQN"] for t in labels or []}


def _column_tags(columns: list[dict[str, Any]]) -> set[str]:
    out: set[str] = set()
    for col in columns:
        out |= _tag_fqns(col.get("tags"))
        out |= _column_tags(col.get("children") or [])
    return out


def _task_tags(pipeline: OmEntity) -> set[str]:
    return {x for task in pipeline.json["tasks"] for x in _tag_fqns(task.get("tags"))}


def _subjects(w: World) -> dict[str, OmEntity]:
    """A table whose (nested) column carries a tag its table does not, a pipeline whose task
    does, and a table without owners in a schema with some."""
    s = w.server
    tables = s.of_type("table")
    nested = next(
        t for t in tables
        if any(c.get("children") for c in t.json["columns"])
        and not _tag_fqns(t.json.get("tags")) >= _column_tags(t.json["columns"])
    )  # fmt: skip
    pipeline = next(p for p in s.of_type("pipeline") if _task_tags(p) - _tag_fqns(p.json.get("tags")))
    heir = next(
        t for t in tables
        if not t.json.get("owners") and s.entities[t.parent_id or ""].json.get("owners") and t is not nested
    )  # fmt: skip
    return {"nested": nested, "pipeline": pipeline, "heir": heir}


def _holds_derived(w: World, subjects: dict[str, OmEntity]) -> None:
    """The documents hold what OpenMetadata derives: child tags, the inherited owner."""
    s = w.server
    nested = w.doc(subjects["nested"])
    want = _column_tags(subjects["nested"].json["columns"])
    assert want and want <= _tag_fqns(nested["tags"]) | _tag_fqns([nested.get("tier") or {"tagFQN": ""}])
    assert _column_tags(nested["columns"]) == want  # the columns keep their own tags too
    assert any("." in n for n in nested["columnNames"])  # nested columns' names
    pipeline = w.doc(subjects["pipeline"])
    task_tags = _task_tags(subjects["pipeline"])
    assert task_tags <= _tag_fqns(pipeline["tags"]) | _tag_fqns([pipeline.get("tier") or {"tagFQN": ""}])
    heir = w.doc(subjects["heir"])
    schema = s.entities[subjects["heir"].parent_id or ""]
    assert {o["id"] for o in heir["owners"]} == {o["id"] for o in schema.json["owners"]}
    assert all(o.get("inherited") is True for o in heir["owners"])


def test_a_catalog_with_child_tags_and_inherited_owners_scans_clean(world: World) -> None:
    subjects = _subjects(world)
    _holds_derived(world, subjects)  # as the server-like writer wrote them
    report = world.scan()
    assert report.findings == [], [(c.finding.urn, c.finding.details) for c in report.findings]
    assert report.exit_code == 0


def test_repairs_keep_child_tags_and_inherited_owners(world: World, tmp_path: Path) -> None:
    s, subjects = world.server, _subjects(world)
    s.update(subjects["nested"], description="changed, not indexed", fault=Fault.STALE_UPDATE)
    s.update(subjects["pipeline"], description="changed, not indexed", fault=Fault.STALE_UPDATE)
    index = f"{world.alias}_table_search_index"
    world.search.delete(index, subjects["heir"].id)
    refresh_all(world.search, world.alias)
    report = world.scan()
    found = {c.finding.urn: c for c in report.findings}
    assert set(found) == {e.id for e in subjects.values()}
    assert {c.finding.kind.value for c in report.findings} == {"stale_fields", "missing_document"}
    for c in report.findings:  # the derived fields are not among the differences
        assert {d["field"] for d in c.finding.details.get("fields", [])} <= {
            "version",
            "updatedAt",
            "description",
        }
    assert all(c.verdict == Verdict.DIVERGED for c in report.findings)
    targeted = rebuild(
        world.settings(),
        RebuildRequest("reindex", selection=Selection(urns=tuple(found)), apply=True),
    )
    assert targeted.exit_code == 0, targeted.failed
    refresh_all(world.search, world.alias)
    _holds_derived(world, subjects)
    assert world.doc(subjects["nested"])["description"] == "changed, not indexed"
    assert world.scan().findings == []
    full = rebuild(
        world.settings(),
        RebuildRequest(
            "reindex",
            selection=Selection(entity_types=("table", "pipeline")),
            apply=True,
            full=True,
            replace_concrete=True,
        ),
    )
    assert full.exit_code == 0, full.failed
    refresh_all(world.search, world.alias)
    _holds_derived(world, subjects)
    assert world.scan().findings == []


DEPTH = 3000  # past Python's recursion limit (1000) and orjson's (1024)


def test_a_row_nested_deeper_than_any_decoder_is_invalid_and_the_scan_goes_on(world: World) -> None:
    """PostgreSQL's jsonb holds it (the driver's own decoder would die on it mid-stream); MariaDB
    cannot: OpenMetadata's generated columns refuse it, so no such row can exist there."""
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from sandbox.openmetadata.fqn import fqn_hash
    from sandbox.openmetadata.store import dumps

    model = world.server.of_type("table")[0]
    stored = model.stored_json()
    deep_id = str(uuid.uuid4())
    stored.update(id=deep_id, name="deep", fullyQualifiedName=model.fqn + "_deep")
    body = dumps(stored)[:-1] + ',"extension":' + "[" * DEPTH + "]" * DEPTH + "}"
    postgres = world.server.store.postgres
    value = "CAST(:j AS jsonb)" if postgres else ":j"
    insert = text(f"INSERT INTO table_entity (json, fqnHash) VALUES ({value}, :h)")
    params = {"j": body, "h": fqn_hash(model.fqn + "_deep")}
    if not postgres:  # OpenMetadata's generated columns (json_extract) refuse past 32 levels
        with pytest.raises(OperationalError, match="depth"), world.server.store.engine.begin() as conn:
            conn.execute(insert, params)
        assert world.scan().findings == []
        return
    with world.server.store.engine.begin() as conn:
        conn.execute(insert, params)
    report = world.scan()
    (only,) = report.findings  # the scan read every other row: they agree
    assert only.finding.urn == deep_id and only.verdict == Verdict.INVALID
    assert only.finding.kind.value == "malformed_aspect"
    assert "deeper than" in only.finding.details["reason"]
    assert report.complete and report.entities["table"] == len(world.server.of_type("table")) + 1
