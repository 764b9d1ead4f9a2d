"""The database over TLS (PostgreSQL and MariaDB with the certificate `sandbox/stack` signs with
its own CA): a user the server admits only over TLS scans with the certificate verified against
that CA (and the host name checked); the same user without TLS, or with a CA that did not sign
the server's certificate, ends the scan with exit 3 and one `error:` line naming the database,
never a traceback or the password."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from faults import drop_mcl
from pydantic import SecretStr
from sqlalchemy.engine import make_url
from test_search_tls import certificate
from test_security import drop_user, read_only_user
from world import World, json_error

from auditor.api import ScanOptions, scan
from auditor.core.model import Selection, Verdict

pytestmark = pytest.mark.integration

OPTIONS = ScanOptions(grace=300.0, settle=0.5, sample_window=1.0)

# how each driver is told to verify the server against a CA file (host name included), and to
# use no TLS at all (both drivers otherwise try TLS unverified first: libpq's and PyMySQL 2's
# "prefer")
VERIFY = {
    "postgres": lambda ca: {"sslmode": "verify-full", "sslrootcert": ca},
    "mariadb": lambda ca: {"ssl_ca": ca},
}
NO_TLS = {"postgres": {"sslmode": "disable"}, "mariadb": {"ssl_disabled": "true"}}


@pytest.fixture(scope="module", params=["postgres", "mariadb"])
def tls_world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[World, set[str], str, str, str]]:
    store = request.param
    world = World(store, "opensearch", tmp_path_factory.mktemp(f"tls-{store}"), n=20)
    name = ""
    try:
        targets = drop_mcl(world)
        url, name, password = read_only_user(world, tls_only=True)
        assert Path(world.endpoints.tls_ca).is_file(), "sandbox/stack made no CA (run/tls/ca.pem)"
        yield world, targets, url, name, password
    finally:
        if name:
            drop_user(world, name)
        world.close()


def with_query(url: str, query: dict[str, str]) -> str:
    return make_url(url).update_query_dict(query).render_as_string(hide_password=False)


def cli_scan(world: World, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "auditor.cli", "scan", "--format", "json", "--no-state"],
        env=world.cli_env(AUDITOR_STORE_URL=url),
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_a_tls_only_user_scans_with_the_certificate_verified(tls_world) -> None:
    world, targets, url, _, _ = tls_world
    verified = with_query(url, VERIFY[world.store_name](world.endpoints.tls_ca))
    settings = world.settings().model_copy(update={"store_url": SecretStr(verified)})
    report = scan(settings, Selection(), OPTIONS)
    assert report.complete, report.warnings
    assert {c.finding.urn for c in report.findings if c.verdict == Verdict.DIVERGED} == targets
    assert sum(report.entities.values()) >= 20


@pytest.mark.parametrize("case", ["no TLS", "a CA that did not sign the server"])
def test_without_tls_or_with_the_wrong_ca_the_scan_fails_clearly(
    tls_world, case: str, tmp_path: Path
) -> None:
    world, _, url, name, password = tls_world
    if case == "no TLS":
        bad = with_query(url, NO_TLS[world.store_name])
        says = ("no encryption", "rejects connection") if world.store_name == "postgres" else ("denied",)
    else:
        other_ca, _ = certificate(tmp_path)  # self-signed: not the CA that signed the server
        bad = with_query(url, VERIFY[world.store_name](other_ca))
        says = ("certificate verify failed",)
    done = cli_scan(world, bad)
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    said = json_error(done.stdout, 3)  # the error, not a report
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "database" in lines[0] or "store" in lines[0], lines[0]
    assert any(s in lines[0] for s in says), lines[0]
    assert "Traceback" not in done.stderr and password not in done.stdout + done.stderr
    assert name in lines[0] or "127.0.0.1" in lines[0], lines[0]
    assert " ".join(said["error"].split()) in " ".join(lines[0].split())  # the same error on both
