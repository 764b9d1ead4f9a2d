"""OpenMetadata's domains, compared and repaired, and `--full` beside its own reindex job, against
the real servers.

On both pairs (PostgreSQL + OpenSearch 3, MariaDB + Elasticsearch 9): domains are an entity's
`has` (10) relationships from a domain, inherited from its schema when it has none. Three
faults OpenMetadata's own paths can leave behind, each found as `domains` and repaired by a
targeted reindex of the entities the report names:
- a PATCH of a table's domains whose index write was lost (its version moved too);
- "add assets": a domain takes tables, only `entity_relationship` changes (no version bump), and
  the assets' index update is lost;
- a schema's domain PATCH whose propagation to the tables that inherit it is lost (the tables'
  rows never change).
After the repair, each document's domains equal what the server indexes (read back).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from om_world import World, full_rebuild, om_world
from sqlalchemy import text

from auditor.api import rebuild
from auditor.core.model import Verdict
from auditor.platforms.openmetadata.reindex_rows import OmReindexRunning
from auditor.rebuild.request import RebuildRequest
from sandbox.openmetadata.docs import build_doc
from sandbox.openmetadata.entities import OmEntity
from sandbox.openmetadata.faults import Fault
from sandbox.openmetadata.indices import refresh_all
from sandbox.openmetadata.reindex import Reindex

pytestmark = pytest.mark.integration

PAIRS = [("postgres", "opensearch3"), ("mariadb", "elasticsearch")]


@pytest.fixture(params=PAIRS, ids=lambda p: f"{p[0]}+{p[1]}")
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    with om_world(*request.param, tmp_path, n=80) as made:
        yield made


def _domain_ids(doc: dict) -> set[str]:
    return {d["id"] for d in doc.get("domains") or []}


def _heirs(world: World, schema: OmEntity) -> list[OmEntity]:
    tables = world.server.of_type("table")
    return [t for t in tables if t.parent_id == schema.id and not t.json.get("domains")]


def test_domain_faults_are_found_and_a_targeted_repair_writes_what_the_server_indexes(
    world: World, tmp_path: Path
) -> None:
    s = world.server
    sales = s.create("domain", "Sales", domainType="Aggregate", description="sales")
    finance = s.create("domain", "Finance", domainType="Aggregate", description="finance")
    schemas = [sc for sc in s.of_type("databaseSchema") if any(True for _ in _heirs(world, sc))]
    assert len(schemas) >= 2, "the seed has schemas with tables"
    inheriting = schemas[0]
    s.update(inheriting, domains=[sales])  # its tables inherit Sales, indexed as the server does
    refresh_all(world.search, world.alias)
    clean = world.scan()
    assert clean.findings == []
    # the migration level, read as numbers (the string maximum of SERVER_CHANGE_LOG is '1.9.0')
    assert clean.sources["platform_version"] == "1.12.1 (SERVER_CHANGE_LOG, the migration level)"
    tables = [t for t in s.of_type("table") if t.parent_id not in (inheriting.id,)]
    patched, moved = tables[0], tables[1:3]
    s.update(patched, domains=[finance], fault=Fault.STALE_UPDATE)  # PATCH, index write lost
    s.add_assets(finance, moved, fault=Fault.STALE_UPDATE)  # relationships only, docs not updated
    s.update(inheriting, domains=[finance], fault=Fault.INHERITED_NOT_PROPAGATED)
    heirs = _heirs(world, inheriting)
    refresh_all(world.search, world.alias)
    report = world.scan()
    found = {c.finding.urn: c for c in report.findings}
    expected = {patched.id, *(m.id for m in moved), *(h.id for h in heirs)}
    assert set(found) == expected, sorted(found)
    for urn, c in found.items():
        assert c.verdict == Verdict.DIVERGED, c.evidence.reason
        fields = {d["field"]: d for d in c.finding.details["fields"]}
        assert "domains" in fields, fields
        assert fields["domains"]["expected"] == [finance.id], fields["domains"]
        if urn != patched.id:  # "add assets" and inheritance move no version
            assert set(fields) == {"domains"}, fields
    patched_fields = {d["field"] for d in found[patched.id].finding.details["fields"]}
    assert {"version", "updatedAt", "domains"} <= patched_fields
    done = rebuild(world.settings(), RebuildRequest("reindex", findings=report.findings, apply=True))
    assert done.exit_code == 0 and done.rows == len(expected), (done.rows, done.failed)
    refresh_all(world.search, world.alias)
    for e in [patched, *moved, *heirs]:
        written = world.doc(e)
        indexed = build_doc(e, s.writer.lookup)  # what the server writes for it
        assert _domain_ids(written) == _domain_ids(indexed) == {finance.id}, e.fqn
        differ = sorted(k for k in set(indexed) | set(written) if indexed.get(k) != written.get(k))
        assert differ == [], (e.fqn, {k: (indexed.get(k), written.get(k)) for k in differ})
    assert world.scan().findings == []


def test_full_refuses_to_race_openmetadatas_running_reindex_job(world: World) -> None:
    """OpenMetadata's own reindex (1.12+: `search_index_job`) RUNNING over tables: `--full` of
    tables is refused (exit 3) naming the job; of another type, and once the job finished, not."""
    job = Reindex(world.server, ["table"], batch_size=5)
    job.start()
    job.step(1)
    with pytest.raises(OmReindexRunning) as refused:
        rebuild(
            world.settings(),
            full_rebuild("table"),
        )
    assert refused.value.exit_code == 3 and job.job_id in str(refused.value), str(refused.value)
    assert "race" in str(refused.value) and "targeted" in (refused.value.hint or "")
    other = rebuild(
        world.settings(),
        full_rebuild("pipeline"),
    )
    assert other.exit_code == 0, other.failed
    assert job.finish() == "COMPLETED"
    after = rebuild(
        world.settings(),
        full_rebuild("table"),
    )
    assert after.exit_code == 0, after.failed
    refresh_all(world.search, world.alias)
    assert world.scan().findings == []


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}+{p[1]}")
def test_an_older_release_s_documents_are_read_and_repaired_in_its_shape(
    pair: tuple[str, str], tmp_path: Path
) -> None:
    """OpenMetadata 1.8 (migrations up to 1.8.0) writes one `domain` per document: its catalog
    scans clean, a lost domain PATCH is found and repaired in 1.8's shape (read back field by
    field against the server's own document); after the 1.9.0 migration (`domains`), the 1.8
    documents are still read, and a repair writes 1.9's shape."""
    with om_world(*pair, tmp_path, n=40, reindex_tables=False, release="1.8.0") as world:
        s = world.server
        sales = s.create("domain", "Sales", domainType="Aggregate", description="sales")
        table = s.of_type("table")[0]
        s.update(table, domains=[sales], fault=Fault.STALE_UPDATE)
        refresh_all(world.search, world.alias)
        report = world.scan()
        assert report.sources["platform_version"] == "1.8.0 (SERVER_CHANGE_LOG, the migration level)"
        assert [c.finding.urn for c in report.findings] == [table.id]
        assert "domains" in {d["field"] for d in report.findings[0].finding.details["fields"]}
        done = rebuild(world.settings(), RebuildRequest("reindex", findings=report.findings, apply=True))
        assert done.exit_code == 0, done.failed
        refresh_all(world.search, world.alias)
        written, indexed = world.doc(table), build_doc(table, s.writer.lookup, "1.8.0")
        assert "domains" not in written and written["domain"]["id"] == sales.id
        assert sorted(k for k in set(indexed) | set(written) if indexed.get(k) != written.get(k)) == []
        assert world.scan().findings == []
        # the server is upgraded: 1.9.0's migration; its documents stay as 1.8 wrote them
        with s.store.engine.begin() as conn:
            row = "INSERT INTO SERVER_CHANGE_LOG (version, migrationFileName, checksum) VALUES (:v, 'x', '0')"
            conn.execute(text(row), {"v": "1.9.0"})
        after = world.scan()
        assert after.findings == [] and after.sources["platform_version"].startswith("1.9.0")
        s.writer.release = "1.9.0"
        s.update(table, description="after the upgrade, not indexed", fault=Fault.STALE_UPDATE)
        refresh_all(world.search, world.alias)
        stale = world.scan()
        assert [c.finding.urn for c in stale.findings] == [table.id]
        rewritten = rebuild(world.settings(), RebuildRequest("reindex", findings=stale.findings, apply=True))
        assert rewritten.exit_code == 0, rewritten.failed
        refresh_all(world.search, world.alias)
        written, indexed = world.doc(table), build_doc(table, s.writer.lookup, "1.9.0")
        assert "domain" not in written and [d["id"] for d in written["domains"]] == [sales.id]
        assert sorted(k for k in set(indexed) | set(written) if indexed.get(k) != written.get(k)) == []
        assert world.scan().findings == []
