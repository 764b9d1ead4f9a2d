"""OpenSearch with its Security plugin (what Amazon OpenSearch Service's fine-grained access control
is): internal users over HTTPS. The scan runs as a user whose role only reads DataHub's indices
and finds what is wrong; that user's reindex is refused by the cluster (exit 3, nothing written,
the user named); the repair as a user allowed to write repairs it, and the re-scan is clean. A
wrong password is exit 3 naming the user and what to check, never the password."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from faults import skip_index_write
from secure_opensearch import SecureOpenSearch
from world import World

from sandbox.endpoints import Endpoints

pytestmark = pytest.mark.integration

READ = ["read", "indices:admin/aliases/get", "indices:admin/mappings/get", "indices:admin/get",
        "indices:monitor/settings/get", "indices:data/read/point_in_time/create",
        "indices:data/read/point_in_time/delete"]  # fmt: skip
WRITE = [*READ, "write", "delete", "indices:admin/refresh*", "indices:data/write/bulk*"]


class Secured:
    def __init__(self, node: SecureOpenSearch, world: World, targets: set[str]) -> None:
        self.node, self.world, self.targets = node, world, targets
        self.passwords: dict[str, str] = {}

    def run(
        self, user: str, *args: str, password: str | None = None, state: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = self.world.cli_env(
            AUDITOR_SEARCH_URL=self.node.url,
            AUDITOR_SEARCH_USERNAME=user,
            AUDITOR_SEARCH_PASSWORD=password or self.passwords[user],
            AUDITOR_SEARCH_CA_CERTS=self.node.ca,
            **({"AUDITOR_STATE_FILE": str(state)} if state else {}),
        )
        done = subprocess.run([sys.executable, "-m", "auditor.cli", *args], env=env, capture_output=True,
                              text=True, timeout=180)  # fmt: skip
        for secret in (*self.passwords.values(), self.node.admin[1]):
            assert secret not in done.stdout + done.stderr
        return done


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    tmp = tmp_path_factory.mktemp("os-security")
    with SecureOpenSearch() as node:
        user, password = node.admin
        admin_url = node.url.replace("https://", f"https://{user}:{password}@")
        endpoints = dataclasses.replace(Endpoints.from_env(), opensearch=admin_url)
        world = World("postgres", "opensearch", tmp, n=20, endpoints=endpoints, release="1.7.0")
        try:
            s = Secured(node, world, skip_index_write(world))
            world.consumer.reset_faults()
            world.refresh()
            patterns = [f"{world.prefix}*"]
            s.passwords["scanner"] = node.add_user(
                "scanner", patterns, READ, ["cluster:monitor/main", "cluster_composite_ops_ro"]
            )
            s.passwords["repairer"] = node.add_user(
                "repairer", patterns, WRITE, ["cluster:monitor/main", "cluster_composite_ops"]
            )
            yield s
        finally:
            world.close()


def test_read_only_scan_refused_write_then_repair_and_clean_rescan(secured: Secured, tmp_path: Path) -> None:
    scanned = secured.run("scanner", "scan", "--no-state", "-f", "json", "--settle", "0.5")
    assert scanned.returncode == 1, scanned.stderr[-2000:]
    report = json.loads(scanned.stdout)
    assert {f["urn"] for f in report["findings"] if f["verdict"] == "diverged"} == secured.targets
    assert report["sources"]["search"].startswith("https://")
    urn = next(iter(secured.targets))
    triaged = secured.run("scanner", "triage", urn, "-f", "json", "--settle", "0.5")
    assert triaged.returncode == 1 and urn in triaged.stdout, triaged.stderr[-2000:]
    (tmp_path / "report.json").write_text(scanned.stdout)
    repair = ("rebuild", "reindex", "--from-report", str(tmp_path / "report.json"), "--apply", "--json")
    refused = secured.run("scanner", *repair, state=tmp_path / "s1.sqlite")
    assert refused.returncode == 3, refused.stdout[-1500:] + refused.stderr[-1500:]
    assert "user scanner" in refused.stderr and "403" in refused.stderr, refused.stderr
    repaired = secured.run("repairer", *repair, state=tmp_path / "s2.sqlite")
    assert repaired.returncode == 0, repaired.stdout[-1500:] + repaired.stderr[-1500:]
    again = secured.run("scanner", "scan", "--no-state", "-f", "json", "--settle", "0.5")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-1500:]


def test_a_wrong_password_names_the_user_and_what_to_check(secured: Secured) -> None:
    done = secured.run("scanner", "scan", "--no-state", password="Not-It-1!")
    assert done.returncode == 3 and done.stderr.startswith("error: "), done.stderr[-2000:]
    assert "401" in done.stderr and "user scanner" in done.stderr and "username and password" in done.stderr
