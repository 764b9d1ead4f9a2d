"""Elasticsearch 9.2 with its security on, authenticating the auditor the ways other than basic
auth, each over HTTPS and through the CLI:
- an API key whose role descriptor only reads DataHub's indices scans and triages (as the encoded
  key and as `id:key`); its reindex is refused by the cluster (exit 3, nothing written, the key's
  id named and never the key), a key allowed to write repairs, and the re-scan is clean;
- a bearer token of the token service scans and triages; an invalidated one, or one the cluster
  never issued, is exit 3 naming the bearer token;
- a client certificate alone (no password; the PKI realm maps its subject to the read role) scans
  and triages; one from a CA the node does not trust is exit 3 naming the certificate, and one
  whose subject no role mapping names is exit 3 (403) saying to check the mapping.
No output ever holds a key, a token or a password. The world has topics and a MAE group of its
own: a run beside other test runs on the shared broker sees only its own events.

(The Elastic Cloud id is not run against this node: its URL is `https://<es-uuid>.<host>:<port>`
and no `*.localhost` name resolves on the test machines.)"""

from __future__ import annotations

import base64
import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from secure_elasticsearch import SecuredElasticsearch
from world import World

from auditor.backends.search import SearchIndex
from auditor.backends.search_auth import SearchAuth
from sandbox.endpoints import Endpoints

pytestmark = pytest.mark.integration

# DataHub's indices under any prefix, as docs/reliability.md names them
DATAHUB_INDICES = ["*index_v2", "*system_metadata_service_v1", "*graph_service_v1"]
SCAN = ["read", "view_index_metadata"]
REPAIR = [*SCAN, "write", "delete", "maintenance"]
ROLES = {"auditor_scan": (DATAHUB_INDICES, SCAN, [])}
USERS = {"reader": "auditor_scan"}
PKI_SCANNER = "auditor-pki-scanner"
PKI = {PKI_SCANNER: "auditor_scan"}
SCAN_ARGS = ("scan", "--no-state", "-f", "json", "--settle", "0.5")


class Secured:
    """The node, the world on it, the urns broken in it now, and every secret handed out."""

    def __init__(self, es: SecuredElasticsearch, world: World) -> None:
        self.es, self.world = es, world
        self.targets: set[str] = set()
        self.secrets: set[str] = {es.admin[1], *es.passwords.values()}
        self.broken = 0

    def break_one(self) -> str:
        """A dataset whose index document misses its last change (DataHub's log-and-skip):
        a fresh one each time, so a repaired urn is never broken again."""
        urn = [e.urn for e in self.world.of_type("dataset")][self.broken]
        self.broken += 1
        self.world.consumer.skip_index_write({urn})
        tag = {"tags": [{"tag": f"urn:li:tag:skipped-{self.broken}"}]}
        self.world.writer.write(urn, "globalTags", tag)
        assert self.world.consumer.drain(60)
        self.world.consumer.reset_faults()
        self.world.refresh()
        self.targets.add(urn)
        return urn

    def api_key(self, name: str, privileges: list[str]) -> tuple[str, str]:
        key_id, encoded = self.es.api_key(name, DATAHUB_INDICES, privileges)
        self.secrets |= {encoded, base64.b64decode(encoded).decode().split(":", 1)[1]}
        return key_id, encoded

    def run(
        self, auth: dict[str, str], *args: str, state: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`python -m auditor.cli *args` on this node with these AUDITOR_SEARCH_* settings."""
        env = self.world.cli_env(
            **{
                "AUDITOR_SEARCH_URL": self.es.url,
                "AUDITOR_SEARCH_CA_CERTS": self.es.ca,
                "AUDITOR_MCL_VERSIONED_TOPIC": self.world.topics[0],
                "AUDITOR_MCL_TIMESERIES_TOPIC": self.world.topics[1],
                "AUDITOR_MAE_CONSUMER_GROUP": self.world.group,
                **auth,
                **({"AUDITOR_STATE_FILE": str(state)} if state else {}),
            }
        )
        done = subprocess.run([sys.executable, "-m", "auditor.cli", *args], env=env, capture_output=True,
                              text=True, timeout=180)  # fmt: skip
        for secret in self.secrets:
            assert secret not in done.stdout + done.stderr
        return done

    def scan_finds_the_targets(self, auth: dict[str, str]) -> str:
        """A scan as `auth` finds exactly the broken urns (exit 1); its report."""
        scanned = self.run(auth, *SCAN_ARGS)
        assert scanned.returncode == 1, scanned.stdout[-1500:] + scanned.stderr[-1500:]
        report = json.loads(scanned.stdout)
        assert {f["urn"] for f in report["findings"] if f["verdict"] == "diverged"} == self.targets
        assert report["sources"]["search"].startswith(self.es.url)
        assert report["sources"]["versioned_topic"] == self.world.topics[0]
        return scanned.stdout

    def triage_finds(self, auth: dict[str, str]) -> None:
        urn = sorted(self.targets)[0]
        triaged = self.run(auth, "triage", urn, "-f", "json", "--settle", "0.5")
        assert triaged.returncode == 1 and urn in triaged.stdout, (
            triaged.stdout[-1500:] + triaged.stderr[-1500:]
        )


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    tmp = tmp_path_factory.mktemp("es-security")
    with SecuredElasticsearch(ROLES, USERS, PKI) as es:
        user, password = es.admin
        admin_url = es.url.replace("https://", f"https://{user}:{password}@")
        endpoints = dataclasses.replace(Endpoints.from_env(), elasticsearch=admin_url)
        world = World(
            "postgres", "elasticsearch", tmp, n=20, endpoints=endpoints, release="1.7.0", own_topics=True
        )
        try:
            s = Secured(es, world)
            s.break_one()
            yield s
        finally:
            world.close()


def test_a_read_only_api_key_scans_is_refused_a_repair_a_write_key_repairs(
    secured: Secured, tmp_path: Path
) -> None:
    read_id, read_key = secured.api_key("auditor-scan", SCAN)
    reader = {"AUDITOR_SEARCH_API_KEY": read_key}
    report = secured.scan_finds_the_targets(reader)
    # a key without the cluster's `monitor` privilege is refused `GET /` on a real Elasticsearch
    # (this node's `GET /` module asks for none: another cluster API stands for it), in words
    # of its own ("is unauthorized for API key id [..] of user [..]"): still Elasticsearch
    refusing = f"{secured.es.url}/_cluster/state"
    assert SearchIndex._detect(refusing, SearchAuth(api_key=read_key), True, secured.es.ca) == "elasticsearch"
    key_id, secret = base64.b64decode(read_key).decode().split(":", 1)
    secured.triage_finds({"AUDITOR_SEARCH_API_KEY": f"{key_id}:{secret}"})  # the key as `id:key`
    (tmp_path / "report.json").write_text(report)
    repair = ("rebuild", "reindex", "--from-report", str(tmp_path / "report.json"), "--apply", "--json")
    refused = secured.run(reader, *repair, state=tmp_path / "s1.sqlite")
    assert refused.returncode == 3, refused.stdout[-1500:] + refused.stderr[-1500:]
    assert f"API key {read_id}" in refused.stderr and "403" in refused.stderr, refused.stderr
    assert "role descriptors" in refused.stderr, refused.stderr  # the hint: what to check
    secured.scan_finds_the_targets(reader)  # nothing was written
    _, write_key = secured.api_key("auditor-repair", REPAIR)
    repaired = secured.run({"AUDITOR_SEARCH_API_KEY": write_key}, *repair, state=tmp_path / "s2.sqlite")
    assert repaired.returncode == 0, repaired.stdout[-1500:] + repaired.stderr[-1500:]
    again = secured.run(reader, *SCAN_ARGS)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-1500:]
    secured.targets.clear()
    secured.break_one()  # for the tests after this one


def test_a_bearer_token_scans_and_an_invalidated_one_is_refused(secured: Secured) -> None:
    token = secured.es.bearer_token("reader")
    secured.secrets.add(token)
    bearer = {"AUDITOR_SEARCH_BEARER_TOKEN": token}
    secured.scan_finds_the_targets(bearer)
    secured.triage_finds(bearer)
    secured.es.invalidate_token(token)
    invented = base64.b64encode(b"not-a-token-of-this-cluster").decode()
    secured.secrets.add(invented)
    for refused in (token, invented):
        done = secured.run({"AUDITOR_SEARCH_BEARER_TOKEN": refused}, "scan", "--no-state")
        assert done.returncode == 3 and done.stderr.startswith("error: "), done.stderr[-2000:]
        assert "401" in done.stderr and "for a bearer token" in done.stderr, done.stderr
        assert "check the bearer token is valid and not expired" in done.stderr, done.stderr


def test_a_client_certificate_alone_scans_and_an_untrusted_one_is_refused(secured: Secured) -> None:
    cert, key = secured.es.client_certificate(PKI_SCANNER)
    pki = {"AUDITOR_SEARCH_CLIENT_CERT": str(cert), "AUDITOR_SEARCH_CLIENT_KEY": str(key)}
    report = json.loads(secured.scan_finds_the_targets(pki))
    assert report["sources"]["search"].endswith("(client certificate)")
    secured.triage_finds(pki)
    # the same subject from a CA the node does not trust: the TLS handshake refuses it
    other_cert, other_key = secured.es.untrusted_certificate(PKI_SCANNER)
    untrusted = {"AUDITOR_SEARCH_CLIENT_CERT": str(other_cert), "AUDITOR_SEARCH_CLIENT_KEY": str(other_key)}
    # the engine probed first (`GET /`), then told (no probe: the clients' own first request)
    for kind in ({}, {"AUDITOR_SEARCH_KIND": "elasticsearch"}):
        done = secured.run({**untrusted, **kind}, "scan", "--no-state")
        assert done.returncode == 3 and done.stderr.startswith("error: "), done.stderr[-2000:]
        assert f"client certificate {other_cert}" in done.stderr and "CA" in done.stderr, done.stderr
        assert "TLS handshake refused" in done.stderr and "Traceback" not in done.stderr, done.stderr
    # a certificate the node trusts whose subject no role mapping names: authenticated, no roles
    unmapped_cert, unmapped_key = secured.es.client_certificate("auditor-pki-unmapped")
    unmapped = {
        "AUDITOR_SEARCH_CLIENT_CERT": str(unmapped_cert),
        "AUDITOR_SEARCH_CLIENT_KEY": str(unmapped_key),
    }
    done = secured.run(unmapped, "scan", "--no-state")
    assert done.returncode == 3 and done.stderr.startswith("error: "), done.stderr[-2000:]
    assert f"client certificate {unmapped_cert}" in done.stderr and "403" in done.stderr, done.stderr
    assert "role mapping" in done.stderr, done.stderr


def test_an_elastic_cloud_id_stands_for_the_url(secured: Secured) -> None:
    """Elastic Cloud's id (`name:base64(host:port$es-uuid$kibana-uuid)`) names the cluster as
    `https://<es-uuid>.<host>:<port>`: here `127.0` + `0.1` is the node's own address (no DNS for a
    made-up domain on this machine), its certificate's; the scan reaches it through the id alone."""
    port = secured.es.url.rsplit(":", 1)[1]
    cloud_id = "auditor-test:" + base64.b64encode(f"0.1:{port}$127.0$".encode()).decode()
    token = secured.es.bearer_token("reader")
    secured.secrets.add(token)
    auth = {
        "AUDITOR_SEARCH_CLOUD_ID": cloud_id,
        "AUDITOR_SEARCH_URL": "",
        "AUDITOR_SEARCH_BEARER_TOKEN": token,
    }
    scanned = secured.run(auth, *SCAN_ARGS)
    assert scanned.returncode == 1, scanned.stdout[-1500:] + scanned.stderr[-1500:]
    report = json.loads(scanned.stdout)
    assert report["sources"]["search"] == "Elastic Cloud auditor-test (bearer token)"
    assert {f["urn"] for f in report["findings"] if f["verdict"] == "diverged"} == secured.targets
