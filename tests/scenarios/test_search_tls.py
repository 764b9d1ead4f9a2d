"""The search cluster behind TLS and basic authentication (a TLS-terminating, authenticating
proxy in front of the real node, with a certificate made for the test): the scan verifies the
certificate against the CA bundle it is given and authenticates; a wrong password, a missing CA
or plain HTTP fail clearly (exit 3, nothing else on the screen) and never show the password."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from faults import drop_mcl
from http_faults import FaultyProxy
from pydantic import SecretStr
from world import World

from auditor.api import ScanOptions, scan
from auditor.core.model import Selection, Verdict

pytestmark = pytest.mark.integration

OPTIONS = ScanOptions(grace=300.0, settle=0.5, sample_window=1.0)


def certificate(tmp: Path) -> tuple[str, str]:
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return str(cert), str(key)


@pytest.fixture(scope="module")
def secured(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[World, set[str], FaultyProxy, str, str]]:
    tmp = tmp_path_factory.mktemp("tls")
    world = World("postgres", "opensearch", tmp, n=30)
    password = f"pw-{uuid.uuid4().hex}"
    cert, key = certificate(tmp)
    try:
        targets = drop_mcl(world)
        with FaultyProxy(
            world.endpoints.search_url("opensearch"), tls=(cert, key), auth=f"auditor:{password}"
        ) as p:
            yield world, targets, p, cert, password
    finally:
        world.close()


def test_the_scan_verifies_the_certificate_and_authenticates(secured) -> None:
    world, targets, proxy, cert, password = secured
    settings = world.settings().model_copy(
        update={
            "search_url": proxy.url,
            "search_username": "auditor",
            "search_password": SecretStr(password),
            "search_ca_certs": cert,
        }
    )
    report = scan(settings, Selection(), OPTIONS)
    assert report.complete and report.sources["search"].startswith("https://")
    assert {c.finding.urn for c in report.findings if c.verdict == Verdict.DIVERGED} == targets


@pytest.mark.parametrize(
    ("case", "over", "says"),
    [
        ("wrong password", {"AUDITOR_SEARCH_PASSWORD": "not-it"}, "401"),
        ("no CA bundle", {"AUDITOR_SEARCH_CA_CERTS": ""}, "certificate verify failed"),
        ("plain http", {"scheme": "http"}, "search cluster"),
    ],
)
def test_misconfigured_tls_or_auth_fails_clearly(secured, case: str, over: dict[str, str], says: str) -> None:
    world, _, proxy, cert, password = secured
    over = dict(over)  # the parameter is shared between runs
    url = proxy.url.replace("https://", "http://") if over.pop("scheme", None) else proxy.url
    env = world.cli_env(
        AUDITOR_SEARCH_URL=url,
        AUDITOR_SEARCH_USERNAME="auditor",
        AUDITOR_SEARCH_PASSWORD=password,
        AUDITOR_SEARCH_CA_CERTS=cert,
    )
    env.update(over)
    if not env["AUDITOR_SEARCH_CA_CERTS"]:
        del env["AUDITOR_SEARCH_CA_CERTS"]
    refused = proxy.refused
    done = subprocess.run(
        [sys.executable, "-m", "auditor.cli", "scan", "--no-state"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, (case, done.returncode, done.stderr[-1500:])
    assert done.stderr.startswith("error: ") and says in done.stderr, (case, done.stderr)
    assert done.stdout == "" and "Traceback" not in done.stderr and "Warning" not in done.stderr
    assert password not in done.stdout + done.stderr
    if case == "wrong password":  # refused by the authentication, not by anything else
        assert proxy.refused > refused
