"""RDS IAM database authentication: the store's password is a fresh token per connection. A
stand-in for RDS in front of the stack's PostgreSQL (sandbox/rds_iam.py) checks each token's
SigV4 signature with botocore (service rds-db, action connect, the user, the host:port) before
opening the session. Through it: the scan reads the table, a reindex repairs from the rows, the
re-scan is clean; a wrong secret is refused with exit 3, the identity and what to grant."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from faults import skip_index_write
from sqlalchemy.engine import make_url
from world import World

from sandbox.aws_sigv4 import Key, Verifier
from sandbox.endpoints import stack_home
from sandbox.rds_iam import RdsIamProxy

pytestmark = pytest.mark.integration

REGION = "eu-north-1"
AKID, SECRET = "AKIAAUDITORRDSTEST01", f"rds-{uuid.uuid4().hex}"
SOCKET = stack_home() / "run" / "postgres" / ".s.PGSQL.15432"


@pytest.fixture(scope="module")
def rds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, RdsIamProxy, set[str]]]:
    tmp = tmp_path_factory.mktemp("rds")
    world = World("postgres", "opensearch", tmp, n=20, release="1.7.0")
    verifier = Verifier(REGION, "rds-db")
    verifier.add(Key(AKID, SECRET))
    try:
        targets = skip_index_write(world)
        world.consumer.reset_faults()
        with RdsIamProxy(str(SOCKET), verifier) as proxy:
            yield world, proxy, targets
    finally:
        world.close()


def database(world: World) -> str:
    """The world's own database (each test worker has one)."""
    return str(make_url(world.endpoints.store_url("postgres")).database)


def run(world: World, proxy: RdsIamProxy, *args: str, **over: str) -> subprocess.CompletedProcess[str]:
    env = world.cli_env(
        # the user only: with IAM the password is the token (DataHub: EBEAN_USE_IAM_AUTH)
        AUDITOR_STORE_URL=f"postgresql+psycopg://datahub@127.0.0.1:{proxy.port}/{database(world)}?sslmode=disable",
        EBEAN_USE_IAM_AUTH="true",
        AWS_REGION=REGION,
        AWS_ACCESS_KEY_ID=AKID,
        AWS_SECRET_ACCESS_KEY=SECRET,
        AWS_CONFIG_FILE="/nonexistent",
        AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
        AWS_EC2_METADATA_DISABLED="true",
    )
    env.pop("AWS_SESSION_TOKEN", None)
    command = [sys.executable, "-m", "auditor.cli", *args]
    done = subprocess.run(command, env={**env, **over}, capture_output=True, text=True, timeout=180)
    assert SECRET not in done.stdout + done.stderr
    return done


def test_scan_and_reindex_through_rds_iam_tokens(
    rds: tuple[World, RdsIamProxy, set[str]], tmp_path: Path
) -> None:
    world, proxy, targets = rds
    world.refresh()
    scanned = run(world, proxy, "scan", "--no-state", "-f", "json", "--settle", "0.5")
    assert scanned.returncode == 1, scanned.stderr[-2000:]
    report = json.loads(scanned.stdout)
    assert {f["urn"] for f in report["findings"] if f["verdict"] == "diverged"} == targets
    assert proxy.accepted and set(proxy.accepted) == {"datahub"}
    urn = next(iter(targets))
    triaged = run(world, proxy, "triage", urn, "-f", "json", "--settle", "0.5")
    assert triaged.returncode == 1 and urn in triaged.stdout, triaged.stderr[-2000:]
    (tmp_path / "report.json").write_text(scanned.stdout)
    state = str(tmp_path / "state.sqlite")
    repair = ("rebuild", "reindex", "--from-report", str(tmp_path / "report.json"), "--apply", "--json")
    repaired = run(world, proxy, *repair, AUDITOR_STATE_FILE=state)
    assert repaired.returncode == 0, repaired.stderr[-2000:]
    again = run(world, proxy, "scan", "--no-state", "-f", "json", "--settle", "0.5")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-1500:]


def test_a_refused_token_names_the_identity_and_what_to_grant(
    rds: tuple[World, RdsIamProxy, set[str]],
) -> None:
    world, proxy, _ = rds
    refused = len(proxy.refused)
    done = run(world, proxy, "scan", "--no-state", AWS_SECRET_ACCESS_KEY="not-the-secret")
    assert done.returncode == 3, done.stderr[-2000:]
    assert done.stderr.startswith("error: ") and "RDS IAM token for datahub" in done.stderr, done.stderr
    assert "rds-db:connect" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(proxy.refused) > refused and "signature" in proxy.refused[-1]
