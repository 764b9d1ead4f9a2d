"""Amazon OpenSearch Service with IAM: every request the auditor sends is signed with SigV4 from the
standard AWS credential chain. A stand-in for the service's front (sandbox/aws_sigv4.py: HTTPS,
each signature recomputed with botocore's own signer and compared, then forwarded to the stack's
OpenSearch node) refuses what AWS refuses. Through it: the scan, triage and a reindex that
writes, then a clean re-scan; a wrong secret, a wrong region, an expired session and a missing
permission each fail with exit 3, the identity used and what to check, nothing written, and no
secret on the screen."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faults import skip_index_write
from test_search_tls import certificate
from world import World

from sandbox.aws_sigv4 import Key, SearchProxy, Verifier
from sandbox.aws_sts import WebIdentitySts

pytestmark = pytest.mark.integration

REGION = "eu-west-1"
AKID = "ASIAAUDITORTEST00001"  # temporary credentials: a session token goes with them
SECRET = f"secret-{uuid.uuid4().hex}"
TOKEN = f"session-{uuid.uuid4().hex}"


class Cloud:
    def __init__(self, world: World, proxy: SearchProxy, cert: str, targets: set[str]) -> None:
        self.world, self.proxy, self.cert, self.targets = world, proxy, cert, targets

    def env(self, **over: str) -> dict[str, str]:
        aws = {
            "AUDITOR_SEARCH_URL": self.proxy.url,
            "AUDITOR_SEARCH_CA_CERTS": self.cert,
            "AUDITOR_SEARCH_AWS_IAM": "true",  # what DataHub's OPENSEARCH_USE_AWS_IAM_AUTH also sets
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": AKID,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_SESSION_TOKEN": TOKEN,
            "AWS_CONFIG_FILE": "/nonexistent",
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
            "AWS_EC2_METADATA_DISABLED": "true",
        }
        return self.world.cli_env(**{**aws, **over})

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "auditor.cli", *args], env=env or self.env(),
                              capture_output=True, text=True, timeout=300)  # fmt: skip


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    tmp = tmp_path_factory.mktemp("sigv4")
    world = World("postgres", "opensearch", tmp, n=30, release="1.7.0")
    try:
        targets = skip_index_write(world)
        world.consumer.reset_faults()
        world.refresh()
        verifier = Verifier(REGION, "es")
        verifier.add(Key(AKID, SECRET, token=TOKEN, arn="arn:aws:sts::123456789012:assumed-role/auditor/ci"))
        cert, key = certificate(tmp)
        with SearchProxy(world.endpoints.search_url("opensearch"), verifier, tls=(cert, key)) as proxy:
            yield Cloud(world, proxy, cert, targets)
    finally:
        world.close()


def test_scan_triage_and_reindex_are_signed_end_to_end(cloud: Cloud, tmp_path: Path) -> None:
    before = len(cloud.proxy.verifier.seen)
    scanned = cloud.run("scan", "--no-state", "-f", "json", "--settle", "0.5")
    assert scanned.returncode == 1, scanned.stderr[-2000:]
    report = json.loads(scanned.stdout)
    diverged = {f["urn"] for f in report["findings"] if f["verdict"] == "diverged"}
    assert diverged == cloud.targets
    assert "AWS SigV4" in report["sources"]["search"]
    urn = next(iter(cloud.targets))
    triaged = cloud.run("triage", urn, "-f", "json", "--settle", "0.5")
    assert triaged.returncode == 1 and urn in triaged.stdout, triaged.stderr[-2000:]
    (tmp_path / "report.json").write_text(scanned.stdout)
    state = str(tmp_path / "state.sqlite")
    report_file = str(tmp_path / "report.json")
    repaired = cloud.run("rebuild", "reindex", "--from-report", report_file, "--apply", "--json",
                         env=cloud.env(AUDITOR_STATE_FILE=state))  # fmt: skip
    assert repaired.returncode == 0, repaired.stderr[-2000:]
    again = cloud.run("scan", "--no-state", "-f", "json", "--settle", "0.5")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    # a --full rebuild: a fresh index made, loaded, verified and swapped in by an alias change
    full = cloud.run("rebuild", "reindex", "--full", "--entity-type", "tag", "--apply", "--json",
                     "--replace-concrete-index", env=cloud.env(AUDITOR_STATE_FILE=state))  # fmt: skip
    assert full.returncode == 0, full.stdout[-2000:] + full.stderr[-2000:]
    assert "_aliases" in " ".join(cloud.proxy.paths), "the swap went through the signed client"
    after = cloud.run("scan", "--no-state", "-f", "json", "--settle", "0.5")
    assert after.returncode == 0, after.stdout[-2000:] + after.stderr[-2000:]
    assert len(cloud.proxy.verifier.seen) > before + 10  # every request went through the check
    for done in (scanned, triaged, repaired, again):
        assert SECRET not in done.stdout + done.stderr and TOKEN not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("case", "over", "says", "hint"),
    [
        (
            "wrong secret",
            {"AWS_SECRET_ACCESS_KEY": "not-the-secret"},
            "signature we calculated",
            "secret key",
        ),
        ("wrong region", {"AWS_REGION": "us-east-2"}, "valid region", "region"),
        ("expired session", {"AWS_ACCESS_KEY_ID": "ASIAEXPIREDSESSION01"}, "expired", "expired"),
        (
            "missing permission",
            {"AWS_ACCESS_KEY_ID": "AKIANOPOSTPERMISSION"},
            "es:ESHttpPost",
            "grant es:ESHttpPost",
        ),
    ],
)
def test_a_refused_signature_names_the_identity_and_what_to_check(
    cloud: Cloud, case: str, over: dict[str, str], says: str, hint: str
) -> None:
    verifier = cloud.proxy.verifier
    verifier.add(Key("ASIAEXPIREDSESSION01", SECRET, token=TOKEN, expired=True))
    verifier.add(Key("AKIANOPOSTPERMISSION", SECRET, arn="arn:aws:iam::123456789012:user/readonly",
                     denied=frozenset({"es:ESHttpPost"})))  # fmt: skip
    env = cloud.env(**over)
    if over.get("AWS_ACCESS_KEY_ID", "").startswith("AKIA"):
        del env["AWS_SESSION_TOKEN"]  # long-term keys carry no session token
    refused = len(cloud.proxy.refused)
    done = cloud.run("scan", "--no-state", env=env)
    assert done.returncode == 3, (case, done.returncode, done.stderr[-1500:])
    assert done.stderr.startswith("error: ") and says in done.stderr, (case, done.stderr)
    assert hint in done.stderr and "AWS access key ..." in done.stderr, (case, done.stderr)
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert SECRET not in done.stderr and TOKEN not in done.stderr
    assert len(cloud.proxy.refused) > refused  # refused by the signature check, not by anything else


def test_credentials_from_a_profile_and_from_irsa_web_identity(cloud: Cloud, tmp_path: Path) -> None:
    """The chain's other sources, as boto3 resolves them: a named profile in a shared credentials
    file, and EKS's IRSA (AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE exchanged at STS, here
    sandbox/aws_sts.py, for temporary credentials the service's front accepts). A role STS refuses
    is exit 3 naming the role and the trust policy to check, not a traceback."""
    verifier = cloud.proxy.verifier
    profile_key = verifier.add(Key("AKIAAUDITORPROFILE01", f"profile-{uuid.uuid4().hex}"))
    credentials = tmp_path / "credentials"
    credentials.write_text(
        f"[auditor]\naws_access_key_id = {profile_key.access_key}\n"
        f"aws_secret_access_key = {profile_key.secret_key}\n"
    )
    no_keys = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")

    def scan(env: dict[str, str]) -> dict[str, Any]:
        env = {k: v for k, v in env.items() if k not in no_keys}
        done = cloud.run("scan", "--no-state", "-f", "json", "--settle", "0.5", env=env)
        assert done.returncode in (0, 1), done.stderr[-2000:]
        assert profile_key.secret_key not in done.stdout + done.stderr
        return dict(json.loads(done.stdout))

    report = scan(cloud.env(AWS_SHARED_CREDENTIALS_FILE=str(credentials), AWS_PROFILE="auditor"))
    assert "AWS SigV4" in report["sources"]["search"]
    assert verifier.seen[-1] == profile_key.access_key

    role = "arn:aws:iam::123456789012:role/datahub-auditor"
    token = tmp_path / "token"
    token.write_text(f"eyJhbGciOiJSUzI1NiJ9.{uuid.uuid4().hex}.sig")  # the projected service-account token
    with WebIdentitySts(role, token.read_text(), [verifier]) as sts:
        irsa = cloud.env(
            AWS_ROLE_ARN=role, AWS_WEB_IDENTITY_TOKEN_FILE=str(token), AWS_ENDPOINT_URL_STS=sts.url
        )
        report = scan(irsa)
        assert sts.issued and verifier.seen[-1] == sts.issued[-1]
        assert "AWS SigV4" in report["sources"]["search"]
        other = {k: v for k, v in irsa.items() if k not in no_keys} | {"AWS_ROLE_ARN": role + "-other"}
        wrong = cloud.run("scan", "--no-state", env=other)
        assert wrong.returncode == 3 and "AccessDenied" in sts.refused, wrong.stderr[-1500:]
        assert "Traceback" not in wrong.stderr and token.read_text() not in wrong.stderr
        assert f"web identity (IRSA) for role {role}-other" in wrong.stderr, wrong.stderr
        assert "AccessDenied" in wrong.stderr and "sts:AssumeRoleWithWebIdentity" in wrong.stderr
