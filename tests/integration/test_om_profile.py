"""The OpenMetadata profile against the real servers: PostgreSQL + OpenSearch 3.x, MariaDB + Elasticsearch 9.

Each test owns a scratch database (`om_<uuid8>`) and a cluster alias of its own, on an
OpenMetadata-shaped world written by the sandbox's server-like writer (faults injected there).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from auditor.api import ScanOptions, rebuild, scan
from auditor.core.model import Report, Verdict
from auditor.rebuild.request import RebuildRequest
from auditor.reports import RENDERERS
from auditor.settings import Settings, load_settings
from sandbox.endpoints import Endpoints
from sandbox.openmetadata.databases import scratch_database
from sandbox.openmetadata.ddl import create_schema
from sandbox.openmetadata.faults import Fault
from sandbox.openmetadata.generator import Catalog, seed
from sandbox.openmetadata.indices import create_indices, drop_cluster_alias, refresh_all
from sandbox.openmetadata.live import LiveWriter
from sandbox.openmetadata.server import OmServer
from sandbox.search import SearchStore, connect

pytestmark = pytest.mark.integration

PAIRS = [("postgres", "opensearch3"), ("mariadb", "elasticsearch")]
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class World:
    server: OmServer
    catalog: Catalog
    search: SearchStore
    alias: str
    store_url: str
    search_url: str
    state: Path

    def settings(self, **more: Any) -> Settings:
        base: dict[str, Any] = {
            "store_url": self.store_url,
            "search_url": self.search_url,
            "platform": "openmetadata",
            "cluster_alias": self.alias,
            "state_file": str(self.state),
            "index_visibility_seconds": 1.5,
        }
        return load_settings(env={}, **{**base, **more})

    def scan(self, grace: float = 300.0, use_state: bool = True, **more: Any) -> Report:
        return scan(self.settings(**more), options=ScanOptions(grace=grace, use_state=use_state))

    def refresh(self) -> None:
        refresh_all(self.search, self.alias)


@contextmanager
def om_world(store: str, search_name: str, tmp_path: Path, n: int = 120) -> Iterator[World]:
    """A scratch OpenMetadata world (schema, indices under an alias of its own, n entities)."""
    endpoints = Endpoints.from_env()
    search = connect(search_name, endpoints)
    alias = f"omt{uuid.uuid4().hex[:8]}"
    with scratch_database(store, endpoints) as engine:
        create_schema(engine)
        create_indices(search, alias)
        try:
            server = OmServer(engine, search, alias)
            catalog = seed(server, n, seed=7)
            refresh_all(search, alias)
            url = make_url(engine.url).render_as_string(hide_password=False)
            yield World(
                server, catalog, search, alias, url, endpoints.search_url(search_name), tmp_path / "state"
            )
        finally:
            drop_cluster_alias(search, alias)


@pytest.fixture(params=PAIRS, ids=lambda p: f"{p[0]}+{p[1]}")
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    with om_world(*request.param, tmp_path) as made:
        yield made


def _by_id(report: Report) -> dict[str, Any]:
    return {c.finding.urn: c for c in report.findings}


def _inject(w: World) -> dict[str, str]:
    """One fault of each kind; returns fault -> the entity id it hit."""
    tables = w.catalog.of_type("table")
    s = w.server
    s.update(tables[0], description="stale <b>|*`\x1b[31m\nline", fault=Fault.STALE_UPDATE)
    s.update(tables[1], description="queued", fault=Fault.SEARCH_WRITE_FAILS_QUEUED)
    s.soft_delete(tables[2], fault=Fault.SOFT_DELETE_NOT_PROPAGATED)
    s.hard_delete(tables[3], fault=Fault.ORPHAN_DOC)
    missing = s.create(
        "table", "never_indexed", s.entities[tables[4].parent_id], fault=Fault.SEARCH_WRITE_FAILS
    )
    s.soft_delete(tables[5])  # a correct soft delete: the script writes deleted='true' only
    w.refresh()
    return {
        "stale": tables[0].id,
        "queued": tables[1].id,
        "soft_delete": tables[2].id,
        "orphan": tables[3].id,
        "missing": missing.id,
        "soft_deleted_right": tables[5].id,
    }


def test_each_fault_gets_its_verdict_fresh_then_diverged_when_seen_again(world: World) -> None:
    hit = _inject(world)
    first = world.scan(grace=300.0)
    found = _by_id(first)
    assert set(found) == {hit[k] for k in ("stale", "queued", "soft_delete", "orphan", "missing")}
    kinds = {k: found[hit[k]].finding.kind.value for k in ("stale", "soft_delete", "orphan", "missing")}
    assert kinds == {
        "stale": "stale_fields",
        "soft_delete": "soft_delete_mismatch",
        "orphan": "orphan_document",
        "missing": "missing_document",
    }
    assert all(c.verdict == Verdict.IN_FLIGHT for c in first.findings) and first.exit_code == 0
    assert "search_index_retry_queue" in found[hit["queued"]].evidence.reason
    assert "unconfirmed" in found[hit["orphan"]].evidence.reason
    assert any("no change log" in w for w in first.warnings)
    stale = {d["field"]: d for d in found[hit["stale"]].finding.details["fields"]}
    assert stale["description"]["expected"].startswith("stale <b>")
    time.sleep(1.5)
    second = _by_id(world.scan(grace=1.0))
    for fault in ("stale", "soft_delete", "orphan", "missing"):
        assert second[hit[fault]].verdict == Verdict.DIVERGED, fault
        assert second[hit[fault]].evidence.seen_before == 1
    assert second[hit["queued"]].verdict == Verdict.IN_FLIGHT  # pending work, however old


def test_reports_escape_what_the_data_holds(world: World) -> None:
    hit = _inject(world)
    odd = "<script>x</script>\x1b[2J\n|`*"
    index = f"{world.alias}_table_search_index"
    world.search.put(index, odd, {"name": "x\x1b[31m", "fullyQualifiedName": "a.\x07b", "deleted": "false"})
    world.search.refresh(index)
    report = world.scan(grace=0.0, use_state=False)
    orphan = _by_id(report)[odd]
    assert orphan.finding.kind.value == "orphan_document" and "not a UUID" in orphan.finding.details["note"]
    for fmt in ("markdown", "html", "json", "prometheus"):
        text = RENDERERS[fmt](report)
        assert "\x1b" not in text and "\x07" not in text, fmt
    html = RENDERERS["html"](report)
    assert "<script>x</script>" not in html
    assert json.loads(RENDERERS["json"](report))["sources"]["platform"] == "openmetadata"
    assert hit["stale"] in RENDERERS["markdown"](report)


def test_an_unknown_entity_table_is_a_usage_error_naming_it(world: World) -> None:
    done = _cli(world, "scan", "--entity-type", "tabel_entity")
    assert done.returncode == 2
    assert "tabel_entity" in done.stderr and "table_entity" in done.stderr
    assert "Traceback" not in done.stderr and "datahub" not in done.stderr


def cli_env(w: World, alias: str | None = "") -> dict[str, str]:
    """The environment of a CLI child process; `alias`: the cluster alias ("" the world's, None none)."""
    return {
        **os.environ,
        "AUDITOR_STORE_URL": w.store_url,
        "AUDITOR_SEARCH_URL": w.search_url,
        "AUDITOR_PLATFORM": "openmetadata",
        "ELASTICSEARCH_CLUSTER_ALIAS": w.alias if alias == "" else alias or "",
        "AUDITOR_STATE_FILE": str(w.state),
        "AUDITOR_INDEX_VISIBILITY_SECONDS": "1.5",
    }


def _cli(w: World, *args: str, alias: str | None = "") -> subprocess.CompletedProcess[str]:
    """The CLI in a child process; `alias`: the cluster alias to set ("" the world's, None none)."""
    return subprocess.run(
        [sys.executable, "-m", "auditor.cli", *args],
        capture_output=True,
        text=True,
        env=cli_env(w, alias),
        cwd=ROOT,
        timeout=600,
    )


def test_targeted_repair_from_the_report_leads_to_a_clean_rescan(world: World, tmp_path: Path) -> None:
    hit = _inject(world)
    report = tmp_path / "scan.json"
    scanned = _cli(world, "scan", "--grace", "0", "-f", "json", "-o", str(report))
    assert scanned.returncode == 1, scanned.stderr
    planned = _cli(world, "rebuild", "plan", "--from-report", str(report))
    assert planned.returncode == 0 and "rewrite the entity's document from its row" in planned.stdout
    assert "entities in scope" in planned.stdout and "version-0" not in planned.stdout  # OpenMetadata's words
    assert "replay" not in planned.stdout
    applied = _cli(world, "rebuild", "reindex", "--from-report", str(report), "--include",
                   "diverged,in_flight", "--apply", alias=None)  # fmt: skip
    assert applied.returncode == 0, applied.stdout + applied.stderr  # the report's cluster alias
    other = _cli(world, "rebuild", "reindex", "--from-report", str(report), "--apply", alias="elsewhere")
    assert other.returncode == 2 and "elsewhere" in other.stderr and world.alias in other.stderr
    assert "verified" in applied.stdout
    after = world.scan(grace=0.0, use_state=False)
    assert after.findings == [] and after.exit_code == 0
    doc = world.server.doc(world.server.entities[hit["soft_delete"]])
    assert doc is not None and doc["deleted"] is True and doc["entityType"] == "table"


def test_repair_by_fqn_and_full_rebuild_with_an_alias_swap(world: World) -> None:
    hit = _inject(world)
    fqn = world.server.entities[hit["stale"]].fqn
    outcome = rebuild(world.settings(), RebuildRequest("reindex", selection=_sel(urns=(fqn,)), apply=True))
    assert outcome.exit_code == 0 and outcome.counts.get("documents written") == 1
    live = f"{world.alias}_table_search_index"
    before = set(world.search.client.indices.get_alias(index=live))
    full = rebuild(
        world.settings(),
        RebuildRequest(
            "reindex", selection=_sel(types=("table",)), apply=True, full=True, replace_concrete=True
        ),
    )
    assert full.exit_code == 0, full.failed
    behind = world.search.client.indices.get_alias(index=live)
    body = behind.body if hasattr(behind, "body") else behind
    (fresh,) = body
    assert fresh.startswith(f"{live}_rebuild_") and not before & set(body)
    assert {live, f"{world.alias}_table", f"{world.alias}_dataAsset"} <= set(body[fresh]["aliases"])
    # the old concrete index is gone: its name now resolves to the fresh index alone, beside the
    # copy of the concrete index the undo would move the name onto
    indices = world.search.client.indices.get(index=f"{world.alias}_table_search_index*")
    left = set(indices.body if hasattr(indices, "body") else indices) - {fresh}
    assert len(left) == 1 and next(iter(left)).startswith(f"{live}_kept-"), left
    after = world.scan(grace=0.0, use_state=False)
    table_findings = [c for c in after.findings if c.finding.entity_type == "table"]
    assert table_findings == []


def _unreadable_table(world: World) -> str | None:
    """A table row nested deeper than any decoder reads, its document still in the live index (as
    OpenMetadata indexed it before): PostgreSQL only (MariaDB's generated columns refuse the row)."""
    from sqlalchemy import text

    from sandbox.openmetadata.fqn import fqn_hash
    from sandbox.openmetadata.store import dumps

    if not world.server.store.postgres:
        return None
    model = world.server.of_type("table")[0]
    deep_id, fqn = str(uuid.uuid4()), model.fqn + "_deep"
    stored = {**model.stored_json(), "id": deep_id, "name": "deep", "fullyQualifiedName": fqn}
    body = dumps(stored)[:-1] + ',"extension":' + "[" * 1100 + "]" * 1100 + "}"
    with world.server.store.engine.begin() as conn:
        conn.execute(
            text("INSERT INTO table_entity (json, fqnHash) VALUES (CAST(:j AS jsonb), :h)"),
            {"j": body, "h": fqn_hash(fqn)},
        )
    doc = {**(world.server.doc(model) or {}), "id": deep_id, "name": "deep", "fullyQualifiedName": fqn}
    world.search.put(f"{world.alias}_table_search_index", deep_id, doc)
    return deep_id


def test_full_keeps_a_concrete_live_index_unless_told_and_carries_an_unreadable_rows_document(
    world: World,
) -> None:
    """As a fresh install creates them, the live index is concrete: `--full` leaves it alone and
    refuses (nothing created) unless --replace-concrete-index; told, it replaces it, and a table
    whose row cannot be read keeps its document (carried over) and is reported invalid beside the
    promotion. Behind the alias, a second `--full` keeps the old index, as --help says."""
    from auditor.rebuild.staged import NotPromoted

    live = f"{world.alias}_table_search_index"
    deep = _unreadable_table(world)
    world.refresh()
    tables = world.search.client.count(index=live)["count"]
    request = RebuildRequest("reindex", selection=_sel(types=("table",)), apply=True, full=True)
    with pytest.raises(NotPromoted, match="concrete index") as refused:
        rebuild(world.settings(), request)
    assert "--replace-concrete-index" in (refused.value.hint or "")
    assert world.search.list_indices(f"{live}*") == [live]  # left alone, no staged index made
    first = rebuild(world.settings(), dataclasses.replace(request, replace_concrete=True))
    (copy,) = world.search.list_indices(f"{live}_kept-*")  # the concrete index, kept for the undo
    (fresh,) = set(world.search.list_indices(f"{live}*")) - {copy}
    second = rebuild(world.settings(), request)
    found = world.search.client.indices.get_alias(name=live)
    (newer,) = found.body if hasattr(found, "body") else found
    kept = set(world.search.list_indices(f"{live}*"))
    world.refresh()
    assert fresh != live and newer != fresh and kept == {copy, fresh, newer}, kept
    assert any(f"removed {live}" in n for n in first.notes) and not any("removed" in n for n in second.notes)
    assert any(f"the old index {fresh} is kept" in n for n in second.notes), second.notes
    assert world.search.client.count(index=live)["count"] == tables
    for outcome in (first, second):
        invalid = [(c.finding.urn, c.verdict) for c in outcome.still_wrong]
        assert invalid == ([(deep, Verdict.INVALID)] if deep else []) and not outcome.failed, outcome.why
        assert outcome.exit_code == (1 if deep else 0)
    if deep is not None:
        doc = world.search.get(live, deep)
        assert doc is not None and doc["name"] == "deep"
        # asked, the next --full leaves it out (the row reported invalid all the same)
        left = rebuild(world.settings(), dataclasses.replace(request, leave_out_invalid=True))
        assert world.search.get(live, deep) is None and [c.finding.urn for c in left.still_wrong] == [deep]
        assert not left.failed and left.exit_code == 1, left.why


def _sel(types: tuple[str, ...] = (), urns: tuple[str, ...] = ()) -> Any:
    from auditor.core.model import Selection

    return Selection(entity_types=types, urns=urns)


def test_a_scan_under_live_writes_reports_no_divergence(world: World) -> None:
    with LiveWriter(world.server, rate=15.0, seed=3) as writer:
        time.sleep(1.0)
        report = world.scan(grace=0.0, use_state=False)
    assert writer.writes > 10 and not writer.errors
    assert report.total(Verdict.DIVERGED) == 0, [(c.subkind, c.evidence.reason) for c in report.findings]
    assert report.exit_code == 0


def test_select_on_the_read_tables_is_all_a_scan_needs_and_a_missing_grant_is_named(world: World) -> None:
    from sqlalchemy import text

    from auditor.errors import AccessRefused
    from auditor.platforms.openmetadata.naming import ENTITIES

    engine = world.server.store.engine
    postgres = engine.dialect.name == "postgresql"
    user, password = f"omro_{uuid.uuid4().hex[:8]}", "pw-" + uuid.uuid4().hex[:8]
    database = engine.url.database
    reads = ["entity_relationship", "tag_usage", "search_index_retry_queue", "user_entity", "team_entity"]
    with engine.connect() as conn:
        present = {t for t in (e.table for e in ENTITIES.values()) if _exists(conn, t)}
    grantee = user if postgres else f"'{user}'@'%'"
    with engine.begin() as conn:
        conn.execute(
            text(f"CREATE USER {grantee} {'WITH PASSWORD' if postgres else 'IDENTIFIED BY'} '{password}'")
        )
        if postgres:
            conn.execute(text(f"GRANT CONNECT ON DATABASE {database} TO {user}"))
            conn.execute(text(f"GRANT USAGE ON SCHEMA public TO {user}"))
        for table in sorted(present | set(reads)):
            conn.execute(text(f"GRANT SELECT ON {'' if postgres else database + '.'}{table} TO {grantee}"))
    try:
        _inject(world)
        url = make_url(world.store_url).set(username=user, password=password)
        limited = url.render_as_string(hide_password=False)
        report = world.scan(grace=300.0, use_state=False, store_url=limited)
        assert len(report.findings) == 5 and report.exit_code == 0
        with engine.begin() as conn:
            table = "search_index_retry_queue"
            conn.execute(text(f"REVOKE SELECT ON {'' if postgres else database + '.'}{table} FROM {grantee}"))
        with pytest.raises(AccessRefused, match="SELECT on search_index_retry_queue refused") as caught:
            world.scan(grace=300.0, use_state=False, store_url=limited)
        assert password not in str(caught.value) and "GRANT SELECT" in (caught.value.hint or "")
    finally:
        with engine.begin() as conn:
            if postgres:
                conn.execute(text(f"DROP OWNED BY {user}"))
            conn.execute(text(f"DROP USER {grantee}"))


def _exists(conn: Any, table: str) -> bool:
    from sqlalchemy import text

    try:
        conn.execute(text(f"SELECT 1 FROM {table} WHERE 1 = 0"))
        return True
    except Exception:
        conn.rollback()
        return False


def test_a_full_rebuild_while_the_server_keeps_writing_leaves_a_clean_index(world: World) -> None:
    _inject(world)
    with LiveWriter(world.server, rate=10.0, seed=11, kinds=("table",)) as writer:
        time.sleep(0.5)
        full = rebuild(
            world.settings(),
            RebuildRequest(
                "reindex", selection=_sel(types=("table",)), apply=True, full=True, replace_concrete=True
            ),
        )
    assert full.exit_code == 0, full.failed
    assert writer.writes > 5 and not writer.errors
    world.refresh()
    after = world.scan(grace=0.0, use_state=False)
    wrong = [(c.subkind, c.finding.urn) for c in after.findings if c.finding.entity_type == "table"]
    assert wrong == []
