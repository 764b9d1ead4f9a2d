"""The OpenMetadata-shaped sandbox on real servers: DDL, docs, aliases, each fault, live writes.

Each test owns a scratch database (om_<uuid8>, dropped after) and a cluster alias of its own
(its indices and aliases are `<alias>_...`, deleted after), on PostgreSQL + OpenSearch 3 and
MariaDB + Elasticsearch 9.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import text

from sandbox.endpoints import Endpoints
from sandbox.openmetadata import fqn, indices
from sandbox.openmetadata.databases import scratch_database
from sandbox.openmetadata.ddl import create_schema
from sandbox.openmetadata.entities import OmEntity, tag_label
from sandbox.openmetadata.faults import Fault
from sandbox.openmetadata.generator import seed
from sandbox.openmetadata.live import LiveWriter
from sandbox.openmetadata.server import OmServer
from sandbox.search import connect

pytestmark = pytest.mark.integration
PAIRS = [("postgres", "opensearch3"), ("mariadb", "elasticsearch")]


@dataclass
class World:
    server: OmServer
    store: str
    alias: str


@pytest.fixture(params=PAIRS, ids=lambda p: f"{p[0]}+{p[1]}")
def world(request: pytest.FixtureRequest) -> Iterator[World]:
    store, search_name = request.param
    endpoints = Endpoints.from_env()
    search = connect(search_name, endpoints)
    try:
        search.client.info()
    except Exception as exc:
        pytest.fail(f"{search_name} unreachable at {endpoints.search_url(search_name)}: {exc}", pytrace=False)
    alias = f"om{uuid.uuid4().hex[:8]}"
    with scratch_database(store, endpoints) as engine:
        create_schema(engine)
        indices.create_indices(search, alias)
        try:
            yield World(OmServer(engine, search, alias), store, alias)
        finally:
            indices.delete_indices(search, alias)


def small_catalog(s: OmServer) -> dict[str, OmEntity]:
    """A service, database, schema with two tables, a user and a team, a tag."""
    user = s.create("user", "alice", email="alice@example.com", isBot=False)
    team = s.create("team", "data", teamType="Group")
    cls = s.create("classification", "PII", provider="user")
    tag = s.create("tag", "Sensitive", cls, description="sensitive")
    svc = s.create("databaseService", "pg", serviceType="Postgres")
    db = s.create("database", "sales", svc)
    sch = s.create("databaseSchema", "public", db, owners=[team])
    t1 = s.create(
        "table", "orders", sch, description="orders", owners=[user], tags=[tag_label(tag.fqn)], columns=[]
    )
    t2 = s.create("table", "customers", sch, columns=[])
    return {"user": user, "team": team, "tag": tag, "svc": svc, "db": db, "sch": sch, "t1": t1, "t2": t2}


def bool_of(value: object) -> bool:
    """A doc's `deleted` as a boolean (the soft-delete path writes the string 'true')."""
    return value is True or value == "true"


def test_generated_columns_hold_what_oms_do(world: World) -> None:
    s = world.server
    c = small_catalog(s)
    create_schema(s.store.engine)  # a second call changes nothing
    s.soft_delete(c["t2"])
    with s.store.engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT id, name, updatedAt, updatedBy, deleted, fqnHash, databaseSchemaHash "
                "FROM table_entity ORDER BY name"
            )
        ).all()
        user = conn.execute(text("SELECT name, email, nameHash FROM user_entity")).one()
        svc = conn.execute(text("SELECT serviceType, nameHash FROM dbservice_entity")).one()
        tag = conn.execute(text("SELECT classificationHash, fqnHash FROM tag")).one()
    by_name = {r[1]: r for r in rows}
    t1, t2 = c["t1"], c["t2"]
    assert by_name["orders"][0] == t1.id
    assert by_name["orders"][2] == t1.json["updatedAt"] and by_name["orders"][3] == "admin"
    assert bool(by_name["orders"][4]) is False and bool(by_name["customers"][4]) is True
    assert by_name["orders"][5] == fqn.fqn_hash("pg.sales.public.orders")
    assert by_name["orders"][6] == fqn.fqn_hash("pg.sales.public")
    assert by_name["customers"][0] == t2.id
    assert tuple(user) == ("alice", "alice@example.com", fqn.fqn_hash("alice"))
    assert tuple(svc) == ("Postgres", fqn.fqn_hash("pg"))
    assert tuple(tag) == (fqn.fqn_hash("PII"), fqn.fqn_hash("PII.Sensitive"))


def test_relationships_and_tag_usage_rows(world: World) -> None:
    s = world.server
    c = small_catalog(s)
    with s.store.engine.connect() as conn:
        rel = {
            tuple(r)
            for r in conn.execute(
                text("SELECT fromId, toId, fromEntity, toEntity, relation FROM entity_relationship")
            )
        }
        usage = conn.execute(
            text("SELECT source, tagFQN, tagFQNHash, targetFQNHash, labelType, state FROM tag_usage")
        ).all()
    assert (c["sch"].id, c["t1"].id, "databaseSchema", "table", 0) in rel
    assert (c["svc"].id, c["db"].id, "databaseService", "database", 0) in rel
    assert (c["user"].id, c["t1"].id, "user", "table", 8) in rel
    assert (c["team"].id, c["sch"].id, "team", "databaseSchema", 8) in rel
    assert [tuple(u) for u in usage] == [
        (0, "PII.Sensitive", fqn.fqn_hash("PII.Sensitive"), c["t1"].fqn_hash, 0, 1)
    ]
    row = s.row(c["t1"])
    assert row is not None and "owners" not in row and "tags" not in row  # OM keeps them out


def test_seeded_entities_become_docs_under_their_uuid_and_aliases_resolve(world: World) -> None:
    s = world.server
    started = time.monotonic()
    catalog = seed(s, 300, seed=7)
    elapsed = time.monotonic() - started
    assert len(catalog.entities) == 300 and len(s.entities) == 300
    indices.refresh_all(s.search, world.alias)
    for kind in (
        "table",
        "databaseSchema",
        "dashboard",
        "topic",
        "pipeline",
        "glossaryTerm",
        "user",
        "team",
        "tag",
    ):
        expected = {e.id for e in catalog.of_type(kind)}
        index = indices.index_name(kind, world.alias)
        ids = {doc_id for doc_id, _ in s.search.scan(index)}
        assert ids == expected, kind
        with s.store.engine.connect() as conn:
            db_table = s.entities[next(iter(expected))].et.table
            assert conn.execute(text(f"SELECT count(*) FROM {db_table}")).scalar() == len(expected)
    table = catalog.of_type("table")[0]
    doc = s.doc(table)
    assert doc is not None and doc["id"] == table.id and doc["entityType"] == "table"
    assert doc["fqnHash"] == table.fqn_hash and doc["deleted"] is False
    assert doc["service"]["type"] == "databaseService" and "changeDescription" not in doc
    assets = sum(
        len(catalog.of_type(k))
        for k in (
            "table",
            "dashboard",
            "topic",
            "pipeline",
            "glossaryTerm",
            "database",
            "databaseSchema",
            "tag",
        )
    )
    assert s.search.count(f"{world.alias}_dataAsset") == assets
    assert s.search.count(f"{world.alias}_databaseSchema") == (
        len(catalog.of_type("table")) + len(catalog.of_type("databaseSchema"))
    )
    print(f"seeded 300 entities in {elapsed:.2f}s on {world.store}")


def test_update_bumps_version_and_rewrites_the_doc(world: World) -> None:
    s = world.server
    c = small_catalog(s)
    s.update(c["t1"], description="new", owners=[c["team"]], display_name="Orders")
    row, doc = s.row(c["t1"]), s.doc(c["t1"])
    assert row is not None and doc is not None
    assert row["version"] == 0.2 and row["description"] == "new"
    assert doc["version"] == 0.2 and doc["description"] == "new"
    assert doc["displayName"] == "Orders" and [o["id"] for o in doc["owners"]] == [c["team"].id]
    assert "changeDescription" in row and "changeDescription" not in doc


def test_search_write_failure_is_logged_and_the_commit_stands(world: World) -> None:
    s = world.server
    c = small_catalog(s)
    s.update(c["t1"], description="lost", fault=Fault.SEARCH_WRITE_FAILS)
    assert s.row(c["t1"])["description"] == "lost"  # type: ignore[index]
    assert s.doc(c["t1"])["description"] == "orders"  # type: ignore[index]
    assert s.store.retry_queue() == []
    s.update(c["t2"], description="queued", fault=Fault.SEARCH_WRITE_FAILS_QUEUED)
    queue = s.store.retry_queue()
    assert [(q["entityId"], q["entityFqn"], q["status"], q["entityType"]) for q in queue] == [
        (c["t2"].id, c["t2"].fqn, "PENDING", "table")
    ]
    assert "description" not in s.doc(c["t2"])  # type: ignore[operator]
    assert [f[0] for f in s.search_failures] == [c["t1"].id, c["t2"].id]


def test_stale_owner_update_never_reaches_search(world: World) -> None:
    s = world.server
    c = small_catalog(s)
    s.update(c["t1"], owners=[c["team"]], fault=Fault.STALE_UPDATE)
    with s.store.engine.connect() as conn:
        owners = (
            conn.execute(
                text("SELECT fromId FROM entity_relationship WHERE toId = :t AND relation = 8"),
                {"t": c["t1"].id},
            )
            .scalars()
            .all()
        )
    assert owners == [c["team"].id]
    assert [o["id"] for o in s.doc(c["t1"])["owners"]] == [c["user"].id]  # type: ignore[index]
    assert s.row(c["t1"])["version"] == 0.2 and s.doc(c["t1"])["version"] == 0.1  # type: ignore


def test_soft_delete_cascades_as_strings_and_restore_undoes_it(world: World) -> None:
    s = world.server
    c = small_catalog(s)
    touched = s.soft_delete(c["sch"])
    assert {e.id for e in touched} == {c["sch"].id, c["t1"].id, c["t2"].id}
    for key in ("sch", "t1", "t2"):
        assert s.row(c[key])["deleted"] is True  # type: ignore[index]
        assert s.doc(c[key])["deleted"] == "true"  # type: ignore[index]  # the script's string
    assert s.doc(c["db"])["deleted"] is False  # type: ignore[index]
    s.restore(c["sch"])
    for key in ("sch", "t1", "t2"):
        assert s.row(c[key])["deleted"] is False  # type: ignore[index]
        assert s.doc(c[key])["deleted"] == "false"  # type: ignore[index]


def test_soft_delete_not_propagated_leaves_the_doc_live(world: World) -> None:
    s = world.server
    c = small_catalog(s)
    s.soft_delete(c["t1"], fault=Fault.SOFT_DELETE_NOT_PROPAGATED)
    assert s.row(c["t1"])["deleted"] is True  # type: ignore[index]
    assert s.doc(c["t1"])["deleted"] is False  # type: ignore[index]


def test_schema_soft_delete_not_propagated_to_its_tables_docs(world: World) -> None:
    s = world.server
    c = small_catalog(s)
    s.soft_delete(c["sch"], fault=Fault.CHILDREN_NOT_SOFT_DELETED)
    assert bool_of(s.doc(c["sch"])["deleted"])  # type: ignore[index]
    for key in ("t1", "t2"):
        assert s.row(c[key])["deleted"] is True  # type: ignore[index]
        assert s.doc(c[key])["deleted"] is False  # type: ignore[index]


def test_hard_delete_removes_rows_and_docs_or_leaves_an_orphan(world: World) -> None:
    s = world.server
    c = small_catalog(s)
    t1, t2 = c["t1"], c["t2"]
    s.hard_delete(t1, fault=Fault.ORPHAN_DOC)
    assert s.store.read(t1.et, t1.id) is None
    assert s.doc(t1) is not None and s.doc(t1)["id"] == t1.id  # type: ignore[index]
    with s.store.engine.connect() as conn:
        assert (
            conn.execute(
                text("SELECT count(*) FROM entity_relationship WHERE toId = :i OR fromId = :i"), {"i": t1.id}
            ).scalar()
            == 0
        )
        assert (
            conn.execute(
                text("SELECT count(*) FROM tag_usage WHERE targetFQNHash = :h"), {"h": t1.fqn_hash}
            ).scalar()
            == 0
        )
    s.hard_delete(c["sch"])
    assert s.store.read(t2.et, t2.id) is None and s.doc(t2) is None
    assert s.doc(c["sch"]) is None
    # the parent's hard delete removes its children's docs by query (databaseSchema.id): the orphan too
    assert s.doc(t1) is None


def test_index_restored_from_an_older_snapshot(world: World) -> None:
    s = world.server
    c = small_catalog(s)
    snap = s.snapshot()
    s.update(c["t1"], description="after the snapshot")
    late = s.create("table", "late", c["sch"], columns=[])
    written = s.restore_snapshot(snap)
    assert written == sum(len(docs) for docs in snap.values())
    assert s.doc(c["t1"])["description"] == "orders"  # type: ignore[index]
    assert s.row(c["t1"])["description"] == "after the snapshot"  # type: ignore[index]
    assert s.doc(late) is None and s.row(late) is not None
    assert s.search.count(f"{world.alias}_table") == 2  # aliases back after the restore


def test_live_writes_keep_arriving_until_stopped(world: World) -> None:
    s = world.server
    seed(s, 60, seed=3)
    with LiveWriter(s, rate=20, seed=1) as live:
        time.sleep(1.5)
    writes = live.writes
    assert writes >= 5 and live.errors == []
    time.sleep(0.5)
    assert live.writes == writes  # stopped
    last = s.entities[live.written[-1]]
    assert s.row(last)["version"] == s.doc(last)["version"] > 0.1  # type: ignore[index]
