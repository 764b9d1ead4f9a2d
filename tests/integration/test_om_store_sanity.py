"""Sanity before deletion on OpenMetadata (MariaDB + Elasticsearch), and a store of the wrong
platform on both, the CLI in child processes.

A database restored with most of its entity rows missing (every entity table emptied but the
services'), under a healthy index: the scan's headline is the store (exit 8), its orphans still
in the JSON report; the repair of that report, or a full rebuild of a type, deletes nothing
without `--allow-delete N` (exit 8, every document still there). And the wrong platform's
database: OpenMetadata's scan of a database holding DataHub's tables only, and DataHub's scan
of one holding OpenMetadata's, are configuration errors (exit 2) naming what was looked for and
whose tables are there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url
from test_om_profile import ROOT, World, _cli, om_world

from auditor.platforms.openmetadata.naming import ENTITIES
from sandbox.database import engine_for, make_engine
from sandbox.ddl import create_schema as create_datahub_schema
from sandbox.endpoints import Endpoints
from sandbox.openmetadata.databases import scratch_database
from sandbox.openmetadata.ddl import create_schema as create_om_schema
from sandbox.openmetadata.indices import refresh_all

pytestmark = pytest.mark.integration


def _documents(w: World) -> dict[str, int]:
    """Every index of the world's cluster alias and its documents."""
    refresh_all(w.search, w.alias)
    return {i: w.search.count(i) for i in w.search.list_indices(f"{w.alias}_*")}


def test_a_store_far_smaller_than_the_index_is_the_headline_and_deletes_nothing_unasked(
    tmp_path: Path,
) -> None:
    with om_world("mariadb", "elasticsearch", tmp_path, n=40) as w:
        db = make_engine(w.store_url)
        try:
            present = set(inspect(db).get_table_names())
            emptied = [e.table for e in ENTITIES.values() if e.table in present and "service" not in e.table]
            with db.begin() as conn:  # the restore brought back the services only
                for table in emptied:
                    conn.execute(text(f"DELETE FROM {table}"))
        finally:
            db.dispose()
        before = _documents(w)
        report = tmp_path / "scan.json"
        console = _cli(w, "scan", "--grace", "0", "--no-state")
        assert console.returncode == 8, console.stdout[-2000:] + console.stderr[-2000:]
        head = console.stdout.splitlines()[:2]
        assert "far smaller than the index" in head[0] and "with no row" in head[1], head
        done = _cli(w, "scan", "--grace", "0", "--no-state", "-f", "json", "-o", str(report))
        assert done.returncode == 8, done.stderr[-2000:]
        data = json.loads(report.read_text())
        smaller = data["store_smaller"]
        assert data["exit_code"] == 8 and 0 < smaller["rows"] < smaller["orphans"], smaller
        table = next(i for i in data["documents"] if i.endswith("table_search_index"))
        assert smaller["indices"][table] == [data["documents"][table]] * 2  # every document of it
        orphans = [f for f in data["findings"] if f["kind"] == "orphan_document"]
        assert len(orphans) == smaller["orphans"]  # still listed, for whoever decides
        repair = ["rebuild", "reindex", "--from-report", str(report), "--include", "diverged,in_flight"]
        planned = _cli(w, *repair)
        assert planned.returncode == 0 and "--allow-delete" in planned.stdout, planned.stdout[-2000:]
        refused = _cli(w, *repair, "--apply")
        assert refused.returncode == 8, refused.stdout[-2000:] + refused.stderr[-2000:]
        assert "--allow-delete" in refused.stderr and "Nothing was deleted" in refused.stderr
        assert _documents(w) == before
        # a full rebuild of the tables from what is left: its fresh index is never swapped in
        full = _cli(w, "rebuild", "reindex", "-t", "table", "--full", "--replace-concrete-index", "--apply")
        assert full.returncode == 8, full.stdout[-2000:] + full.stderr[-2000:]
        assert _documents(w) == before  # the fresh index dropped, the live one as it was


def test_a_store_of_the_other_platform_is_a_configuration_error(tmp_path: Path) -> None:
    endpoints = Endpoints.from_env()
    datahub = engine_for("postgres", endpoints)  # this worker's DataHub database: its table only
    try:
        create_datahub_schema(datahub)
        url = make_url(datahub.url).render_as_string(hide_password=False)
    finally:
        datahub.dispose()
    om = subprocess.run(
        [sys.executable, "-m", "auditor.cli", "scan", "--platform", "openmetadata", "--no-state"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**_env(endpoints, url, tmp_path), "ELASTICSEARCH_CLUSTER_ALIAS": f"omx{uuid.uuid4().hex[:6]}"},
    )
    assert om.returncode == 2, om.stdout[-2000:] + om.stderr[-2000:]
    assert "none of OpenMetadata's" in om.stderr and "table_entity" in om.stderr, om.stderr
    assert "DataHub's tables (metadata_aspect_v2)" in om.stderr, om.stderr
    with scratch_database("mariadb", endpoints, prefix="omsane") as engine:
        create_om_schema(engine)
        url = make_url(engine.url).render_as_string(hide_password=False)
        dh = subprocess.run(
            [sys.executable, "-m", "auditor.cli", "scan", "--no-state"],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
            env={**_env(endpoints, url, tmp_path), "AUDITOR_INDEX_PREFIX": f"dhx{uuid.uuid4().hex[:6]}"},
        )
    assert dh.returncode == 2, dh.stdout[-2000:] + dh.stderr[-2000:]
    assert "unreachable" not in dh.stderr and "has no table metadata_aspect_v2" in dh.stderr, dh.stderr
    assert "OpenMetadata's tables" in dh.stderr and "--platform openmetadata" in dh.stderr, dh.stderr


def _env(endpoints: Endpoints, store_url: str, tmp_path: Path) -> dict[str, str]:
    """A CLI environment on `store_url` and the Elasticsearch node, without Kafka."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUDITOR_", "ELASTICSEARCH_"))}
    return {
        **env,
        "AUDITOR_STORE_URL": store_url,
        "AUDITOR_SEARCH_URL": endpoints.search_url("elasticsearch"),
        "AUDITOR_STATE_FILE": str(tmp_path / "state"),
    }
