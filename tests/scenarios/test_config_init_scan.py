"""`auditor config init` end to end: DataHub's environment variables pointing at the sandbox make
a file that `auditor scan --config` accepts and runs with (over TLS: the user may not connect
without it), the password given only in the environment; the password is in neither the file
nor anything either command prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sqlalchemy.engine import make_url
from test_security import drop_user, read_only_user
from world import World

pytestmark = pytest.mark.integration

# (store, search, the JDBC URL's scheme and parameters, driver): MariaDB gets DataHub's
# docker-compose MySQL URL, parameters and all (TLS, unverified); PostgreSQL pgJDBC's verified
# TLS against the stack's CA. The user is admitted only over TLS, so a scan that runs used it.
CASES = [
    (
        "postgres",
        "opensearch",
        "jdbc:postgresql://{host}:{port}/{db}?sslmode=verify-full&sslrootcert={ca}",
        "org.postgresql.Driver",
    ),
    (
        "mariadb",
        "elasticsearch",
        "jdbc:mysql://{host}:{port}/{db}?verifyServerCertificate=false&useSSL=true"
        "&useUnicode=yes&characterEncoding=UTF-8",
        "com.mysql.cj.jdbc.Driver",
    ),
]


def auditor() -> list[str]:
    """The console script next to this interpreter (what users run), else the module."""
    script = Path(sys.executable).with_name("auditor")
    return [str(script)] if script.exists() else [sys.executable, "-m", "auditor.cli"]


def base_env() -> dict[str, str]:
    """Nothing of the caller's environment but what a process needs to start."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    return {k: os.environ[k] for k in keep if k in os.environ}


@pytest.mark.parametrize(("store", "search", "jdbc", "driver"), CASES, ids=[c[0] for c in CASES])
def test_config_init_then_scan(store: str, search: str, jdbc: str, driver: str, tmp_path: Path) -> None:
    world = World(store, search, tmp_path, n=20)
    user = ""
    try:
        _, user, password = read_only_user(world, tls_only=True)  # SELECT on the table only
        db = make_url(world.endpoints.store_url(store))
        es = urlsplit(world.endpoints.search_url(search))
        datahub_env = {
            "EBEAN_DATASOURCE_URL": jdbc.format(
                host=db.host, port=db.port, db=db.database, ca=world.endpoints.tls_ca
            ),
            "EBEAN_DATASOURCE_USERNAME": user,
            "EBEAN_DATASOURCE_PASSWORD": password,
            "EBEAN_DATASOURCE_DRIVER": driver,
            "ELASTICSEARCH_HOST": es.hostname or "",
            "ELASTICSEARCH_PORT": str(es.port),
            "ELASTICSEARCH_USE_SSL": "false",
            "KAFKA_BOOTSTRAP_SERVER": world.endpoints.kafka,
            "KAFKA_SCHEMAREGISTRY_URL": world.endpoints.registry,
            "INDEX_PREFIX": world.prefix,
            # the world's own change-log topics and MAE group, as GMS is told them
            "METADATA_CHANGE_LOG_VERSIONED_TOPIC_NAME": world.topics[0],
            "METADATA_CHANGE_LOG_TIMESERIES_TOPIC_NAME": world.topics[1],
            "METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID": world.group,
        }
        init = subprocess.run(
            [*auditor(), "config", "init", "-o", "tmp.toml"],
            cwd=tmp_path,
            env={**base_env(), **datahub_env},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert init.returncode == 0, init.stdout + init.stderr
        config = (tmp_path / "tmp.toml").read_text()
        # only the password: everything else the scan needs must come from the file
        scan = subprocess.run(
            [*auditor(), "scan", "--config", "tmp.toml", "-f", "json", "--no-state"],
            cwd=tmp_path,
            env={**base_env(), "EBEAN_DATASOURCE_PASSWORD": password},
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        if user:
            drop_user(world, user)
        world.close()
    assert scan.returncode in (0, 1), scan.stderr[-3000:]
    report = json.loads(scan.stdout)
    sources = report["sources"]
    assert sources["store"].startswith(f"{db.drivername}://{user}:***@{db.host}:{db.port}/{db.database}")
    assert sources["search"] == world.endpoints.search_url(search)
    assert sources["kafka"] == world.endpoints.kafka
    assert report["complete"] and report["entities"], report.get("warnings")
    for where in (config, init.stdout, init.stderr, scan.stdout, scan.stderr):
        assert password not in where
    assert f'"{world.prefix}"' in config and "EBEAN_DATASOURCE_PASSWORD" in config
