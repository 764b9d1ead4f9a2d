"""What an OpenMetadata document takes from `entity_relationship` beyond owners and domains, scanned
and repaired against the real servers: a table's upstream lineage (`upstream`, 13, with its
LineageDetails), a topic's, a dashboard's and a pipeline's service (`contains`, 0, from the
service), followers (`follows`, 11) and votes (`voted`, 18).

Each entity is made stale (a lost description write) and repaired three ways: from a scan's
report, by `--urn`, and by `--full`; each time every field of its document reads back equal to
what the sandbox's server indexes (its own builder, sandbox/openmetadata/docs.py). A lineage edge,
a follow and a vote whose index update was lost are found, each as its field alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from om_world import World, om_world

from auditor.api import rebuild
from auditor.core.model import Selection
from auditor.platforms.openmetadata import relations
from auditor.platforms.openmetadata.inherit import Inheritance
from auditor.platforms.openmetadata.naming import ENTITIES
from auditor.platforms.openmetadata.store import OmStore
from auditor.rebuild.request import RebuildRequest
from sandbox.openmetadata.docs import build_doc
from sandbox.openmetadata.entities import OmEntity
from sandbox.openmetadata.faults import Fault
from sandbox.openmetadata.indices import refresh_all

pytestmark = pytest.mark.integration

PAIRS = [("postgres", "opensearch3"), ("mariadb", "elasticsearch")]
ORDERLESS = ("tags", "classificationTags", "glossaryTags", "fqnParts", "followers")


@pytest.fixture(params=PAIRS, ids=lambda p: f"{p[0]}+{p[1]}")
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    with om_world(*request.param, tmp_path, n=60) as made:
        yield made


def _differ(world: World, e: OmEntity) -> dict[str, Any]:
    """The fields whose values differ between the document read back and what the server indexes."""

    def norm(key: str, value: Any) -> Any:
        if key in ORDERLESS and isinstance(value, list):
            return sorted(str(v) for v in value)
        return value

    indexed, written = build_doc(e, world.server.writer.lookup), world.doc(e)
    keys = set(indexed) | set(written)
    return {
        k: (indexed.get(k), written.get(k))
        for k in sorted(keys)
        if norm(k, indexed.get(k)) != norm(k, written.get(k))
    }


def _related(world: World) -> tuple[OmEntity, OmEntity, list[OmEntity]]:
    """A table with an upstream table (its edge indexed as the server does), and a topic, a
    dashboard and a pipeline, one followed and one voted for."""
    s = world.server
    upstream, table = s.of_type("table")[:2]
    edge = {"description": "nightly load", "sqlQuery": "insert into b select * from a"}
    s.add_lineage(upstream, table, edge)
    others = [s.of_type(kind)[0] for kind in ("topic", "dashboard", "pipeline")]
    user = s.of_type("user")[0]
    s.follow(others[1], user)
    s.vote(others[2], user, up=True)
    refresh_all(world.search, world.alias)
    return upstream, table, others


def _stale(world: World, entities: list[OmEntity], round_: int) -> None:
    for e in entities:
        world.server.update(e, description=f"changed {round_}, not indexed", fault=Fault.STALE_UPDATE)
    refresh_all(world.search, world.alias)


def test_lineage_and_services_survive_every_repair(world: World) -> None:
    upstream, table, others = _related(world)
    stale = [table, *others]
    lineage = world.doc(table)["upstreamLineage"]
    assert [e["fromEntity"]["id"] for e in lineage] == [upstream.id]
    assert world.scan().findings == []  # what the server indexed agrees with the derivation
    _stale(world, stale, 1)
    report = world.scan()
    found = {c.finding.urn: {d["field"] for d in c.finding.details["fields"]} for c in report.findings}
    assert found == {e.id: {"version", "updatedAt", "description"} for e in stale}, found
    settings = world.settings()
    done = rebuild(settings, RebuildRequest("reindex", findings=report.findings, apply=True))
    assert done.exit_code == 0 and done.still_wrong == [], done.failed
    refresh_all(world.search, world.alias)
    for e in stale:
        assert _differ(world, e) == {}, e.fqn
    assert (
        world.doc(table)["upstreamLineage"][0]["fromEntity"]["fqnHash"] == lineage[0]["fromEntity"]["fqnHash"]
    )
    assert {e.type: world.doc(e)["service"]["id"] for e in others} == {
        e.type: e.json["service"]["id"] for e in others
    }
    _stale(world, stale, 2)
    done = rebuild(
        settings, RebuildRequest("reindex", selection=Selection(urns=tuple(e.id for e in stale)), apply=True)
    )
    assert done.exit_code == 0, done.failed
    refresh_all(world.search, world.alias)
    for e in stale:
        assert _differ(world, e) == {}, e.fqn
    _stale(world, stale, 3)
    types = tuple(e.type for e in stale)
    done = rebuild(
        settings,
        RebuildRequest(
            "reindex", selection=Selection(entity_types=types), apply=True, full=True, replace_concrete=True
        ),
    )
    assert done.exit_code == 0, done.failed
    refresh_all(world.search, world.alias)
    for e in stale:
        assert _differ(world, e) == {}, e.fqn
    assert world.scan().findings == []


def test_a_re_read_walks_each_level_of_parents_once_per_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table's service is its schema's database's: a re-read of many tables reads each level of
    their parents in one IN list, not once per table (the SQL is the same on both stores: one)."""
    with om_world("postgres", "opensearch3", tmp_path, n=60) as world:
        _walks_once(world, monkeypatch)


def _walks_once(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[tuple[str, int]] = []
    real = Inheritance._load

    def counted(self: Inheritance, kind: str, ids: Any) -> None:
        known = self._known.get(kind, {})
        loads.append((kind, len([i for i in ids or () if i and i not in known])))  # ids it queries
        real(self, kind, ids)

    monkeypatch.setattr(Inheritance, "_load", counted)
    tables = world.server.of_type("table")
    store = OmStore(world.store_url)
    try:
        rows = store.read(ENTITIES["table"], [t.id for t in tables])
    finally:
        store.close()
    services = {t.id: t.json["service"]["id"] for t in tables}
    assert {i: relations.service_link(r.links)["id"] for i, r in rows.items()} == services
    assert [kind for kind, n in loads if n] == ["databaseSchema", "database", "databaseService"], loads


def test_a_lost_lineage_follow_or_vote_update_is_found_and_repaired(world: World) -> None:
    s = world.server
    upstream, table = s.of_type("table")[2:4]
    topic, dashboard = s.of_type("topic")[0], s.of_type("dashboard")[0]
    user = s.of_type("user")[1]
    s.add_lineage(upstream, table, {"description": "lost"}, fault=Fault.STALE_UPDATE)
    s.follow(topic, user, fault=Fault.STALE_UPDATE)
    s.vote(dashboard, user, up=True, fault=Fault.STALE_UPDATE)
    refresh_all(world.search, world.alias)
    assert world.doc(table)["upstreamLineage"] == []  # what a lost update (or the old repair) left
    report = world.scan()
    found = {c.finding.urn: c.finding.details["fields"] for c in report.findings}
    assert {u: [f["field"] for f in fields] for u, fields in found.items()} == {
        table.id: ["upstreamLineage"],
        topic.id: ["followers"],
        dashboard.id: ["totalVotes"],
    }, found
    assert found[table.id][0]["expected"] == [upstream.id] and found[table.id][0]["actual"] == []
    done = rebuild(world.settings(), RebuildRequest("reindex", findings=report.findings, apply=True))
    assert done.exit_code == 0 and done.still_wrong == [], done.failed
    refresh_all(world.search, world.alias)
    for e in (table, topic, dashboard):
        assert _differ(world, e) == {}, e.fqn
    assert world.scan().findings == []
