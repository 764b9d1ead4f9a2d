"""`auditor config init --platform openmetadata` from OpenMetadata's own server variables, then the
commands with that file only.

Plain: DB_SCHEME/DB_HOST/DB_PORT/OM_DATABASE/DB_USER/DB_USER_PASSWORD and ELASTICSEARCH_* of a
PostgreSQL + OpenSearch 3 deployment: the file holds no password, the scan (the password from
DB_USER_PASSWORD at run time, as the server reads it) finds the lost index writes, a reindex from
its report repairs them, the re-scan is clean.

On AWS, through the stand-ins (sandbox/rds_iam.py for RDS IAM, sandbox/aws_sigv4.py for Amazon
OpenSearch Service with SigV4 over HTTPS, every signature checked with botocore): DB_PARAMS with
`awsRegion` (OpenMetadata's switch for RDS IAM), SEARCH_AWS_IAM_AUTH_ENABLED, AWS_DEFAULT_REGION;
with only AWS credentials in the environment the same scan, repair and clean re-scan."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from om_world import World, om_world
from sqlalchemy.engine import make_url

from sandbox.aws_sigv4 import Key, SearchProxy, Verifier
from sandbox.endpoints import stack_home
from sandbox.openmetadata.faults import Fault
from sandbox.rds_iam import RdsIamProxy

pytestmark = pytest.mark.integration

REGION = "eu-central-1"
AKID, SECRET = "AKIAAUDITOROMINIT001", f"om-{uuid.uuid4().hex}"
TLS = stack_home() / "run" / "tls"
SOCKET = stack_home() / "run" / "postgres" / ".s.PGSQL.15432"
CLEAN_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[World, set[str]]]:
    with om_world("postgres", "opensearch", tmp_path, prefix="ominit", n=30) as w:
        tables = w.server.of_type("table")[:2]
        for t in tables:
            w.server.update(t, description=f"lost write <{t.name}>", fault=Fault.STALE_UPDATE)
        yield w, {t.id for t in tables}


def cli(config: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "auditor.cli", *args, "--config", str(config)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)


def scan_repair_rescan(
    config: Path, env: dict[str, str], lost: set[str], tmp: Path, secret: str | None
) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = cli(config, env, *args)
        assert secret is None or secret not in done.stdout + done.stderr
        return done

    scanned = run("scan", "--no-state", "--grace", "0", "-f", "json")
    assert scanned.returncode == 1, scanned.stderr[-2000:]
    report = json.loads(scanned.stdout)
    assert report["sources"]["platform"] == "openmetadata"
    assert {f["urn"] for f in report["findings"] if f["verdict"] == "diverged"} == lost
    (tmp / "report.json").write_text(scanned.stdout)
    repaired = run("rebuild", "reindex", "--from-report", str(tmp / "report.json"), "--apply")
    assert repaired.returncode == 0, repaired.stdout[-1500:] + repaired.stderr[-1500:]
    again = run("scan", "--no-state", "--grace", "0", "-f", "json")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-1500:]


def init(env: dict[str, str], config: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "auditor.cli", "config", "init", "--platform", "openmetadata"]
    done = subprocess.run([*command, "-o", str(config)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done


def base() -> dict[str, str]:
    return {k: os.environ[k] for k in CLEAN_ENV if k in os.environ}


def test_config_init_from_openmetadata_variables_then_scan_and_repair(
    world: tuple[World, set[str]], tmp_path: Path
) -> None:
    w, lost = world
    db, search = make_url(w.store_url), make_url(w.search_url)
    password = str(db.password)
    server = {  # as OpenMetadata's server is given them (docker-compose-postgres.yml)
        "DB_DRIVER_CLASS": "org.postgresql.Driver",
        "DB_SCHEME": "postgresql",
        "DB_HOST": str(db.host),
        "DB_PORT": str(db.port),
        "OM_DATABASE": str(db.database),
        "DB_USER": str(db.username),
        "DB_USER_PASSWORD": password,
        "DB_PARAMS": "allowPublicKeyRetrieval=true&sslmode=disable&serverTimezone=UTC",
        "SEARCH_TYPE": "opensearch",
        "ELASTICSEARCH_HOST": str(search.host),
        "ELASTICSEARCH_PORT": str(search.port),
        "ELASTICSEARCH_SCHEME": "http",
        "ELASTICSEARCH_CLUSTER_ALIAS": w.alias,
    }
    config = tmp_path / "om.toml"
    done = init({**base(), **server}, config)
    text = config.read_text()
    stored = tomllib.loads(text)  # the stack's password is its user's name: read the URL itself
    assert make_url(stored["store"]["url"]).password is None and "DB_USER_PASSWORD (set now" in done.stderr
    assert 'platform = "openmetadata"' in text and f'cluster_alias = "{w.alias}"' in text
    run_time = {**base(), "DB_USER_PASSWORD": password, "AUDITOR_STATE_FILE": str(tmp_path / "s.sqlite")}
    scan_repair_rescan(config, run_time, lost, tmp_path, None)


def test_config_init_on_aws_rds_iam_and_sigv4_then_scan_and_repair(
    world: tuple[World, set[str]], tmp_path: Path
) -> None:
    w, lost = world
    db = make_url(w.store_url)
    key = Key(AKID, SECRET, arn="arn:aws:sts::123456789012:assumed-role/openmetadata-auditor/irsa")
    verifiers = {service: Verifier(REGION, service) for service in ("es", "rds-db")}
    for verifier in verifiers.values():
        verifier.add(key)
    tls = (str(TLS / "server.pem"), str(TLS / "server.key"))
    with (
        RdsIamProxy(str(SOCKET), verifiers["rds-db"]) as rds,
        SearchProxy(w.search_url, verifiers["es"], tls=tls) as proxy,
    ):
        server = {  # OpenMetadata on RDS with IAM and Amazon OpenSearch Service with IAM
            "DB_DRIVER_CLASS": "org.postgresql.Driver",
            "DB_SCHEME": "postgresql",
            "DB_HOST": "127.0.0.1",
            "DB_PORT": str(rds.port),
            "OM_DATABASE": str(db.database),
            "DB_USER": str(db.username),
            "DB_USER_PASSWORD": "placeholder",  # OpenMetadata insists on one; the token replaces it
            "DB_PARAMS": f"allowPublicKeyRetrieval=true&sslmode=disable&awsRegion={REGION}",
            "SEARCH_TYPE": "opensearch",
            "ELASTICSEARCH_HOST": "127.0.0.1",
            "ELASTICSEARCH_PORT": proxy.url.rsplit(":", 1)[1],
            "ELASTICSEARCH_SCHEME": "https",
            "ELASTICSEARCH_CLUSTER_ALIAS": w.alias,
            "SEARCH_AWS_IAM_AUTH_ENABLED": "true",
            "AWS_DEFAULT_REGION": REGION,
        }
        config = tmp_path / "om-aws.toml"
        done = init({**base(), **server}, config)
        text = config.read_text()
        assert "DB_USER_PASSWORD" not in done.stderr  # no password to ask for: a token
        iam = ("aws_iam = true   # DB_PARAMS awsRegion", "aws_iam = true   # SEARCH_AWS_IAM_AUTH_ENABLED")
        for line in (*iam, f'region = "{REGION}"'):
            assert line in text, text
        run_time = {  # IRSA's credentials, the test CA
            **base(),
            "AWS_ACCESS_KEY_ID": AKID,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_CONFIG_FILE": "/nonexistent",
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AUDITOR_SEARCH_CA_CERTS": str(TLS / "ca.pem"),
            "AUDITOR_STATE_FILE": str(tmp_path / "s.sqlite"),
        }
        scan_repair_rescan(config, run_time, lost, tmp_path, SECRET)
        assert rds.accepted and set(rds.accepted) == {str(db.username)}
        assert proxy.verifier.seen and not rds.refused
