"""RDS IAM database authentication on MySQL: the store's password is a fresh token per connection.
A stand-in for RDS MySQL in front of the stack's MariaDB (sandbox/rds_iam_mysql.py) greets as
MariaDB, switches PyMySQL to `mysql_clear_password` as an `AWSAuthenticationPlugin` user does,
checks each token's SigV4 signature with botocore (service rds-db, action connect, the user, the
host:port), then logs in to MariaDB itself and relays. Through it: the scan reads the table, a
reindex repairs from the rows, the re-scan is clean; a wrong secret is refused (MySQL's 1045)
with exit 3, the identity and what to grant. No TLS between the auditor and the stand-in."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from faults import skip_index_write
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from world import World

from sandbox.aws_sigv4 import Key, Verifier
from sandbox.rds_iam_mysql import NATIVE, RdsIamMysqlProxy

pytestmark = pytest.mark.integration

REGION = "eu-north-1"
AKID, SECRET = "AKIAAUDITORRDSTEST02", f"rds-{uuid.uuid4().hex}"
USER = "datahub"  # the IAM user the auditor names; the stand-in logs in to MariaDB as the stack's


@pytest.fixture(scope="module")
def rds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, RdsIamMysqlProxy, set[str]]]:
    tmp = tmp_path_factory.mktemp("rds-mysql")
    world = World("mariadb", "opensearch", tmp, n=20, release="1.7.0")
    verifier = Verifier(REGION, "rds-db")
    verifier.add(Key(AKID, SECRET))
    backend = make_url(world.endpoints.store_url("mariadb"))
    try:
        targets = skip_index_write(world)
        world.consumer.reset_faults()
        front = RdsIamMysqlProxy(
            str(backend.host), backend.port or 3306, str(backend.username), str(backend.password), verifier
        )
        with front as proxy:
            yield world, proxy, targets
    finally:
        world.close()


def database(world: World) -> str:
    """The world's own database (each test worker has one)."""
    return str(make_url(world.endpoints.store_url("mariadb")).database)


def store_url(world: World, proxy: RdsIamMysqlProxy, tls: bool = False) -> str:
    # the user only: with IAM the password is the token (DataHub: EBEAN_USE_IAM_AUTH); the
    # stand-in has no TLS, which the auditor requires for a token unless the URL turns it off
    return f"mysql+pymysql://{USER}@127.0.0.1:{proxy.port}/{database(world)}" + (
        "" if tls else "?ssl_disabled=true"
    )


def aws_env() -> dict[str, str]:
    return {
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": AKID,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def run(world: World, proxy: RdsIamMysqlProxy, *args: str, **over: str) -> subprocess.CompletedProcess[str]:
    env = world.cli_env(AUDITOR_STORE_URL=store_url(world, proxy), EBEAN_USE_IAM_AUTH="true", **aws_env())
    env.pop("AWS_SESSION_TOKEN", None)
    command = [sys.executable, "-m", "auditor.cli", *args]
    done = subprocess.run(command, env={**env, **over}, capture_output=True, text=True, timeout=180)
    assert SECRET not in done.stdout + done.stderr
    return done


def test_scan_and_reindex_through_rds_iam_tokens(
    rds: tuple[World, RdsIamMysqlProxy, set[str]], tmp_path: Path
) -> None:
    world, proxy, targets = rds
    refused, switches = len(proxy.refused), len(proxy.backend_switches)
    world.refresh()
    scanned = run(world, proxy, "scan", "--no-state", "-f", "json", "--settle", "0.5")
    assert scanned.returncode == 1, scanned.stderr[-2000:]
    report = json.loads(scanned.stdout)
    assert {f["urn"] for f in report["findings"] if f["verdict"] == "diverged"} == targets
    assert proxy.accepted and set(proxy.accepted) == {USER}
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
    # every session the front opened was an IAM login (no other way in), none was refused
    assert set(proxy.accepted) == {USER} and len(proxy.refused) == refused
    assert len(proxy.backend_switches) == switches  # MariaDB's user takes mysql_native_password


def test_a_refused_token_names_the_identity_and_what_to_grant(
    rds: tuple[World, RdsIamMysqlProxy, set[str]],
) -> None:
    world, proxy, _ = rds
    refused = len(proxy.refused)
    done = run(world, proxy, "scan", "--no-state", AWS_SECRET_ACCESS_KEY="not-the-secret")
    assert done.returncode == 3, done.stderr[-2000:]
    assert done.stderr.startswith("error: ") and f"RDS IAM token for {USER}" in done.stderr, done.stderr
    assert "rds-db:connect" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert "Access denied" in done.stderr, done.stderr  # MySQL's own 1045, as RDS answers
    assert len(proxy.refused) > refused and "signature" in proxy.refused[-1]


def test_a_token_is_never_sent_in_clear(rds: tuple[World, RdsIamMysqlProxy, set[str]]) -> None:
    """Without TLS options in the URL the auditor requires TLS for an IAM login (PyMySQL alone
    would only prefer it): a server offering none gets no token."""
    world, proxy, _ = rds
    seen = len(proxy.accepted) + len(proxy.refused)
    done = run(world, proxy, "scan", "--no-state", AUDITOR_STORE_URL=store_url(world, proxy, tls=True))
    assert done.returncode == 3, done.stderr[-2000:]
    assert "SSL is required" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert len(proxy.accepted) + len(proxy.refused) == seen  # no token reached the front


def test_the_front_follows_the_backends_auth_switch(rds: tuple[World, RdsIamMysqlProxy, set[str]]) -> None:
    """A backend user on another plugin than the one the front names first: MariaDB asks for a
    switch and the front answers it (here MariaDB switches an unknown plugin to the user's own)."""
    world, proxy, _ = rds
    session = boto3.Session(aws_access_key_id=AKID, aws_secret_access_key=SECRET, region_name=REGION)
    token = session.client("rds").generate_db_auth_token(
        DBHostname="127.0.0.1", Port=proxy.port, DBUsername=USER, Region=REGION
    )
    proxy.backend_plugin = b"client_ed25519"
    engine = create_engine(store_url(world, proxy), connect_args={"password": token})
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT DATABASE()")).scalar() == database(world)
    finally:
        engine.dispose()
        proxy.backend_plugin = NATIVE
    assert proxy.backend_switches[-1:] == ["mysql_native_password"]
