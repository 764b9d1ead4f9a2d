"""Least privilege on a search cluster with its own security on (Elasticsearch's x-pack security:
native users and roles, HTTPS with a certificate verified against a CA bundle).

The grants docs/reliability.md gives are the ones these users hold, nothing more: the scan runs
with the read-only role and finds exactly what is wrong, and that user cannot write; a reindex
with the read-only role is refused by the cluster (exit 3, one `error:` line, nothing written)
and `--resume` with the repair role repairs; a wrong password is exit 3."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faults import drop_mcl
from pydantic import SecretStr
from secure_search import SecureElasticsearch
from test_rebuild import ROOT, rebuild_cli
from world import World, json_error

from auditor.api import ScanOptions, scan
from auditor.backends.search import SearchIndex
from auditor.core.model import Selection, Verdict
from sandbox.endpoints import Endpoints

pytestmark = pytest.mark.integration

OPTIONS = ScanOptions(grace=300.0, settle=0.5, sample_window=1.0)
# DataHub's indices under any prefix, as docs/reliability.md names them
DATAHUB_INDICES = ["*index_v2", "*system_metadata_service_v1", "*graph_service_v1"]
SCAN_PRIVILEGES = ["read", "view_index_metadata"]
# a reindex (not --full) writes and deletes documents and refreshes before verifying
REINDEX_PRIVILEGES = [*SCAN_PRIVILEGES, "write", "delete", "maintenance"]
ROLES = {
    "auditor_scan": (DATAHUB_INDICES, SCAN_PRIVILEGES, []),
    "auditor_reindex": (DATAHUB_INDICES, REINDEX_PRIVILEGES, []),
}
USERS = {"scanner": "auditor_scan", "repairer": "auditor_reindex"}


@pytest.fixture(scope="module")
def secured(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[World, SecureElasticsearch, set[str]]]:
    tmp = tmp_path_factory.mktemp("roles")
    with SecureElasticsearch(ROLES, USERS) as es:
        user, password = es.admin
        admin_url = es.url.replace("https://", f"https://{user}:{password}@")
        endpoints = dataclasses.replace(Endpoints.from_env(), elasticsearch=admin_url)
        world = World("postgres", "elasticsearch", tmp, n=20, endpoints=endpoints)
        try:
            yield world, es, drop_mcl(world)
        finally:
            world.close()


def as_user(world: World, es: SecureElasticsearch, name: str, password: str) -> Any:
    return world.settings().model_copy(
        update={
            "search_url": es.url,
            "search_username": name,
            "search_password": SecretStr(password),
            "search_ca_certs": es.ca,
        }
    )


def cli_reindex(
    world: World, es: SecureElasticsearch, tmp: Path, urn: str, name: str, password: str, *more: str
) -> Any:
    args, env = rebuild_cli(world, tmp, "reindex", "--urn", urn, *more)
    args[args.index("--search-url") + 1] = es.url
    env |= {
        "AUDITOR_SEARCH_USERNAME": name,
        "AUDITOR_SEARCH_PASSWORD": password,
        "AUDITOR_SEARCH_CA_CERTS": es.ca,
        "AUDITOR_SEARCH_RETRIES": "1",
    }
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_scan_needs_only_read_and_view_index_metadata(secured) -> None:
    world, es, targets = secured
    name = "scanner"
    password = es.passwords[name]
    report = scan(as_user(world, es, name, password), Selection(), OPTIONS)
    assert report.complete, report.warnings
    assert report.sources["search"] == es.url
    assert {c.finding.urn for c in report.findings if c.verdict == Verdict.DIVERGED} == targets
    # it read every entity document there is (as the super user counts them)
    assert len(report.documents) >= 5
    for index, read in report.documents.items():
        assert es.request("GET", f"/{index}/_count")[1]["count"] == read, index
    # `GET /` (the kind's detection) needs the `monitor` cluster privilege on a real Elasticsearch
    # (the stack's `GET /` module is not authorized): Elasticsearch's refusal is recognised
    refused = SearchIndex._detect(f"{es.url}/_cluster/state", (name, password), True, es.ca)
    assert refused == "elasticsearch"
    # ... and so is the version, which the report shows: the kind alone then
    refusing = SearchIndex(
        f"{es.url}/_cluster/state", "elasticsearch", username=name, password=password, ca_certs=es.ca
    )
    assert refusing.version().startswith("elasticsearch (version not readable")
    # and that user cannot write
    index = next(i for i in report.documents if i.endswith("datasetindex_v2"))
    status, body = es.request("POST", f"/{index}/_doc", {"urn": "x"}, auth=(name, password))
    assert status == 403, (status, body)


def test_a_reindex_is_refused_without_write_and_repairs_with_the_repair_role(secured, tmp_path: Path) -> None:
    world, es, targets = secured
    urn = sorted(targets)[0]
    reader = "scanner"
    ro_password = es.passwords[reader]
    refused = cli_reindex(world, es, tmp_path, urn, reader, ro_password)
    assert refused.returncode == 3, refused.stdout[-1500:] + refused.stderr[-1500:]
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in refused.stderr, refused.stderr[-2000:]
    assert "search cluster" in errors[0] and ("403" in errors[0] or "unauthorized" in errors[0]), errors[0]
    assert ro_password not in refused.stdout + refused.stderr
    # the first bulk was refused: no batch confirmed, so no checkpoint moved past anything
    for kept in tmp_path.glob("rebuild-*.json"):
        assert json.loads(kept.read_text())["last_urn"] is None, kept.read_text()
    for index in world.search.list_indices(f"{world.prefix}_*"):
        world.search.refresh(index)
    still = scan(as_user(world, es, "repairer", es.passwords["repairer"]), Selection(urns=(urn,)), OPTIONS)
    assert urn in {c.finding.urn for c in still.findings if c.verdict == Verdict.DIVERGED}, "it wrote"

    writer = "repairer"
    rw_password = es.passwords[writer]
    repaired = cli_reindex(world, es, tmp_path, urn, writer, rw_password, "--resume")
    assert repaired.returncode == 0, repaired.stdout[-1500:] + repaired.stderr[-1500:]
    assert json.loads(repaired.stdout)["still_wrong"] == []
    assert rw_password not in repaired.stdout + repaired.stderr


def test_a_wrong_password_is_exit_3_and_never_printed(secured) -> None:
    world, es, _ = secured
    wrong = "not-the-password-7f3a"
    env = world.cli_env(
        AUDITOR_SEARCH_URL=es.url,
        AUDITOR_SEARCH_USERNAME="admin",
        AUDITOR_SEARCH_PASSWORD=wrong,
        AUDITOR_SEARCH_CA_CERTS=es.ca,
        AUDITOR_SEARCH_RETRIES="0",
    )
    failed = subprocess.run(
        [sys.executable, "-m", "auditor.cli", "scan", "--format", "json", "--no-state"],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert failed.returncode == 3, failed.stderr[-2000:]
    said = json_error(failed.stdout, 3)  # asked for JSON: the error there, not a report
    assert "401" in said["error"] and "401" in failed.stderr and "Traceback" not in failed.stderr
    assert wrong not in failed.stderr + failed.stdout
