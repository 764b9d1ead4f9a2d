"""The scan with a read-only database user (the grants docs/reliability.md gives), on
PostgreSQL and MariaDB: it completes, finds what is wrong, and that user cannot write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from faults import drop_mcl
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from world import World

from sandbox.naming import ASPECT_TABLE

pytestmark = pytest.mark.integration


def read_only_user(world: World, tls_only: bool = False) -> tuple[str, str, str]:
    """A user granted SELECT on the aspect table only; its URL, name and password. `tls_only`:
    the server refuses it any connection that is not TLS (PostgreSQL: a member of the stack's
    `tls_only` role, which pg_hba rejects without TLS; MariaDB: `REQUIRE SSL`)."""
    name, password = f"ro_{uuid.uuid4().hex[:8]}", f"ro-{uuid.uuid4().hex}"
    url = make_url(world.endpoints.store_url(world.store_name))
    with world.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        if world.engine.dialect.name == "postgresql":
            conn.execute(text(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'"))
            conn.execute(text(f"GRANT CONNECT ON DATABASE {url.database} TO {name}"))
            conn.execute(text(f"GRANT USAGE ON SCHEMA public TO {name}"))
            conn.execute(text(f"GRANT SELECT ON {ASPECT_TABLE} TO {name}"))
            if tls_only:
                conn.execute(text(f"GRANT tls_only TO {name}"))
        else:
            require = " REQUIRE SSL" if tls_only else ""
            conn.execute(text(f"CREATE USER '{name}'@'%' IDENTIFIED BY '{password}'{require}"))
            conn.execute(text(f"GRANT SELECT ON {url.database}.{ASPECT_TABLE} TO '{name}'@'%'"))
    ro = url.set(username=name, password=password).render_as_string(hide_password=False)
    return ro, name, password


def drop_user(world: World, name: str) -> None:
    url = make_url(world.endpoints.store_url(world.store_name))
    with world.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        if world.engine.dialect.name == "postgresql":
            conn.execute(text(f"REVOKE ALL ON {ASPECT_TABLE} FROM {name}"))
            conn.execute(text(f"REVOKE ALL ON SCHEMA public FROM {name}"))
            conn.execute(text(f"REVOKE ALL ON DATABASE {url.database} FROM {name}"))
            conn.execute(text(f"DROP ROLE {name}"))
        else:
            conn.execute(text(f"DROP USER '{name}'@'%'"))


@pytest.mark.parametrize("store", ["postgres", "mariadb"])
def test_the_scan_needs_only_select_on_the_table(store: str, tmp_path: Path) -> None:
    world = World(store, "opensearch", tmp_path, n=30)
    name = ""
    try:
        (dropped,) = drop_mcl(world)
        ro_url, name, password = read_only_user(world)
        with pytest.raises(SQLAlchemyError), create_engine(ro_url).begin() as conn:  # noqa: PT012
            conn.execute(text(f"DELETE FROM {ASPECT_TABLE} WHERE urn = :u"), {"u": dropped})
        s = world.settings()
        env = {
            **os.environ,
            "AUDITOR_STORE_URL": ro_url,
            "AUDITOR_SEARCH_URL": s.search_url or "",
            "AUDITOR_KAFKA_BOOTSTRAP": s.kafka_bootstrap or "",
            "AUDITOR_SCHEMA_REGISTRY_URL": s.schema_registry_url or "",
            "AUDITOR_INDEX_PREFIX": world.prefix,
            "AUDITOR_STATE_FILE": str(tmp_path / "state.sqlite"),
            **world.kafka_env(),
        }
        done = subprocess.run(
            [sys.executable, "-m", "auditor.cli", "scan", "--format", "json", "--grace", "0", "--debug"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        if name:
            drop_user(world, name)
        world.close()
    assert done.returncode == 1, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["complete"] and any(f["urn"] == dropped for f in report["findings"])
    assert password not in done.stdout + done.stderr  # not even with --debug


def test_no_password_reaches_any_output_the_state_file_or_a_debug_traceback(tmp_path: Path) -> None:
    """Every output format, triage, a saved report rendered again, the state file and `--debug`
    runs (also failing ones, whose tracebacks name the URLs they failed on) are grepped for the
    database and search passwords."""
    world = World("mariadb", "opensearch", tmp_path, n=20)
    name = ""
    outputs: list[str] = []
    try:
        (dropped,) = drop_mcl(world)
        ro_url, name, db_password = read_only_user(world)
        search_password = f"search-{uuid.uuid4().hex}"  # the sandbox's node has no security plugin
        s = world.settings()
        env = {
            **os.environ,
            "AUDITOR_STORE_URL": ro_url,
            "AUDITOR_SEARCH_URL": s.search_url or "",
            "ELASTICSEARCH_USERNAME": "auditor",
            "ELASTICSEARCH_PASSWORD": search_password,
            "AUDITOR_KAFKA_BOOTSTRAP": s.kafka_bootstrap or "",
            "AUDITOR_SCHEMA_REGISTRY_URL": s.schema_registry_url or "",
            "AUDITOR_INDEX_PREFIX": world.prefix,
            "AUDITOR_STATE_FILE": str(tmp_path / "state.sqlite"),
            **world.kafka_env(),
        }

        def auditor(*args: str, code: int | None = None, **over: str) -> None:
            done = subprocess.run(
                [sys.executable, "-m", "auditor.cli", *args, "--debug"],
                env={**env, **over},
                capture_output=True,
                text=True,
                timeout=300,
                cwd=tmp_path,
            )
            assert code is None or done.returncode == code, (args, done.returncode, done.stderr[-2000:])
            outputs.extend([done.stdout, done.stderr])

        fast = ("--settle", "0.5", "--sample-window", "1")
        auditor("scan", *fast, "-f", "json", "-o", "scan.json", "--metrics-file", "scan.prom", code=1)
        for fmt in ("console", "markdown", "html"):
            auditor("scan", *fast, "-f", fmt, code=1)
        auditor("report", "render", "scan.json", "-f", "html", code=1)
        auditor("triage", dropped, "--settle", "0.5", code=1)
        auditor("triage", dropped, "--settle", "0.5", "-f", "json", code=1)
        auditor("rebuild", "plan", "--from-report", "scan.json")
        # failures, with tracebacks: the search node and the database unreachable
        auditor("scan", *fast, code=3, AUDITOR_SEARCH_URL="http://127.0.0.1:9")
        closed = make_url(ro_url).set(port=9).render_as_string(hide_password=False)
        auditor("scan", *fast, code=3, AUDITOR_STORE_URL=closed)
        auditor("triage", dropped, code=3, AUDITOR_STORE_URL=closed)
    finally:
        if name:
            drop_user(world, name)
        world.close()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"scan.json", "scan.prom", "state.sqlite"} <= {p.name for p in files}
    for secret in (db_password, search_password):
        for i, text_ in enumerate(outputs):
            assert secret not in text_, f"output {i}: {text_[:500]}"
        for path in files:
            assert secret.encode() not in path.read_bytes(), path
    assert any("Traceback" in text_ for text_ in outputs)  # --debug did show tracebacks
