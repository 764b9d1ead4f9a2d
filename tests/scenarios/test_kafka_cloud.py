"""Kafka the way managed clusters are reached: SASL/PLAIN over TLS (Confluent Cloud's API key and
secret), SASL/OAUTHBEARER with a token provider that
librdkafka calls at every refresh (MSK IAM's path; here a token file a sidecar keeps fresh,
checked by Kafka's own validator), and mTLS (a client certificate the broker's CA signed, the
principal its subject). Through each, on a private broker with ACLs: the scan reads the offsets
and the change log, triage explains one urn, a replay repairs it and the re-scan is clean; over
OAUTHBEARER the watch times MCLs and the probe's canary is produced and timed to search. An
expired token and a missing client certificate each end the scan with exit 3 and one line,
never showing the token or the key."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from confluent_kafka.admin import AclOperation
from faults import drop_mcl
from secure_kafka import PLAIN_USER, SecureKafka
from test_kafka_security import GROUP, PREFIXED, REPLAY_ACLS, one_error_line
from world import World

from sandbox.endpoints import Endpoints

pytestmark = pytest.mark.integration
FAST = ("--settle", "0.5", "--sample-window", "1")


def unsecured_jws(subject: str, lifetime: float) -> str:
    """What Kafka's unsecured validator accepts: `alg: none`, `sub`, `exp`, no signature."""

    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    now = time.time()
    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'iat': now, 'exp': now + lifetime})}."


@dataclass
class Managed:
    broker: SecureKafka
    world: World
    tmp: Path

    def run(self, env_over: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        env = self.world.cli_env(AUDITOR_KAFKA_SSL_CA_LOCATION=str(self.broker.ca), **env_over)
        done = subprocess.run([sys.executable, "-m", "auditor.cli", *args], env=env, capture_output=True,
                              text=True, timeout=180, cwd=self.tmp)  # fmt: skip
        for secret in (*self.secrets(),):
            assert secret not in done.stdout + done.stderr, (args, "a secret was shown")
        return done

    def secrets(self) -> list[str]:
        return (
            [self.broker.plain_password]
            + [p.read_text().strip() for p in self.tmp.glob("*.token")]
            + [p.read_text() for p in self.broker.tmp.glob("auditor-mtls.key")]
        )


@pytest.fixture(scope="module")
def managed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Managed]:
    tmp = tmp_path_factory.mktemp("kafka-managed")
    with SecureKafka(tmp) as broker:  # fails the module (never skips) if it does not start
        endpoints = replace(Endpoints.from_env(), kafka=broker.plaintext)
        # a database of its own too: a World another test session starts on the shared one empties
        # its aspect table, and a replay of the rows left would rightly fail its verification
        # (DataHub's own topic and group names on a broker of its own: the ACLs name them)
        world = World(
            "postgres", "opensearch", tmp, n=20, endpoints=endpoints, release="1.7.0", own_database=True,
            own_topics=False,
        )  # fmt: skip
        try:
            broker.grant("oauth-scanner", REPLAY_ACLS)
            broker.grant("CN=auditor-mtls", REPLAY_ACLS)
            broker.grant(PLAIN_USER, REPLAY_ACLS)
            yield Managed(broker, world, tmp)
        finally:
            world.close()


def scan_repair_rescan(m: Managed, env: dict[str, str], targets: set[str]) -> None:
    scanned = m.run(env, "scan", "--no-state", "-f", "json", *FAST)
    assert scanned.returncode == 1, scanned.stderr[-2000:]
    report = json.loads(scanned.stdout)
    assert report["kafka_available"] and not report["warnings"], report["warnings"]
    found = {f["urn"]: f for f in report["findings"] if f["verdict"] == "diverged"}
    assert targets <= set(found)
    assert all(found[u]["subkind"] == "event_never_published" for u in targets)  # read on the topic
    urn = next(iter(targets))
    triaged = m.run(env, "triage", urn, "-f", "json", "--settle", "0.5")
    assert triaged.returncode == 1 and urn in triaged.stdout, triaged.stderr[-2000:]
    for target in targets:
        replayed = m.run(env, "rebuild", "replay", "--urn", target, "--apply", "--wait", "60", "--json")
        assert replayed.returncode == 0, replayed.stdout[-1500:] + replayed.stderr[-1500:]


def test_oauthbearer_and_mtls_scan_triage_replay_to_a_clean_rescan(managed: Managed) -> None:
    m = managed
    oauth_targets, mtls_targets = drop_mcl(m.world, 0), drop_mcl(m.world, 1)
    token = m.tmp / "scanner.token"
    token.write_text(unsecured_jws("oauth-scanner", 3600))
    oauth = {
        "AUDITOR_KAFKA_BOOTSTRAP": m.broker.sasl_ssl,
        "AUDITOR_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "AUDITOR_KAFKA_SASL_MECHANISM": "OAUTHBEARER",
        "AUDITOR_KAFKA_OAUTHBEARER_TOKEN_FILE": str(token),
    }
    cert, key = m.broker.client_certificate("auditor-mtls")
    mtls = {
        "AUDITOR_KAFKA_BOOTSTRAP": m.broker.mtls,
        "AUDITOR_KAFKA_SECURITY_PROTOCOL": "SSL",
        "AUDITOR_KAFKA_SSL_CERTIFICATE_LOCATION": str(cert),
        "AUDITOR_KAFKA_SSL_KEY_LOCATION": str(key),
    }

    # refusals first: an expired token, no client certificate
    expired = m.tmp / "expired.token"
    expired.write_text(unsecured_jws("oauth-scanner", -600))
    done = m.run({**oauth, "AUDITOR_KAFKA_OAUTHBEARER_TOKEN_FILE": str(expired)}, "scan", "--no-state", *FAST)
    assert done.returncode == 3, done.stderr[-2000:]
    assert "Kafka" in one_error_line(done) and "token expired at" in done.stderr, done.stderr
    bare = {k: v for k, v in mtls.items() if "CERTIFICATE" not in k and "KEY" not in k}
    done = m.run(bare, "scan", "--no-state", *FAST)
    assert done.returncode == 3, done.stderr[-2000:]
    assert "Kafka" in one_error_line(done) and "client certificate" in done.stderr, done.stderr

    scan_repair_rescan(m, oauth, oauth_targets)
    scan_repair_rescan(m, mtls, mtls_targets)
    plain = {  # Confluent Cloud's way: SASL_SSL + PLAIN, the API key and secret
        "AUDITOR_KAFKA_BOOTSTRAP": m.broker.sasl_ssl,
        "AUDITOR_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "AUDITOR_KAFKA_SASL_MECHANISM": "PLAIN",
        "AUDITOR_KAFKA_SASL_USERNAME": PLAIN_USER,
        "AUDITOR_KAFKA_SASL_PASSWORD": m.broker.plain_password,
    }
    scan_repair_rescan(m, plain, drop_mcl(m.world, 2))
    m.world.consumer.drain(60)
    for env in (oauth, mtls, plain):
        again = m.run(env, "scan", "--no-state", "-f", "json", *FAST)
        assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-1500:]
    # the watch tails the change log in a group of its own through the same token provider
    m.broker.grant("oauth-scanner", [(GROUP, "auditor-watch", PREFIXED, AclOperation.READ)])
    stop = threading.Event()

    def write_some() -> None:  # once the watch has its partitions: a few writes to distinct urns
        time.sleep(3)
        for entity in m.world.of_type("dataset")[-6:]:
            if stop.is_set():
                return
            m.world.writer.write(
                entity.urn, "globalTags", {"tags": [{"tag": f"urn:li:tag:w-{time.time_ns()}"}]}
            )
            time.sleep(0.3)

    writer = threading.Thread(target=write_some, daemon=True)
    writer.start()
    try:
        watched = m.run(oauth, "watch", "--group", "auditor-watch-oauth", "--duration", "12", "--every", "2",
                        "--slo", "30", "--json")  # fmt: skip
    finally:
        stop.set()
        writer.join(10)
    assert watched.returncode in (0, 1), watched.stderr[-2000:]
    last = json.loads(watched.stdout.strip().splitlines()[-1])
    # MCLs came in through the token provider and were timed until search showed them
    assert last["schema"] == "watch/1" and last["events"]["good"] >= 1, last
    assert last["consumer"] and all(p["status"] == "ok" for p in last["consumer"]), last["consumer"]
    # the probe writes its canary, produces the MCL through the token provider and times it to search
    probed = m.run(oauth, "probe", "--apply", "--via-store", "--slo", "30", "--interval", "0.2", "--json")
    assert probed.returncode == 0, probed.stderr[-2000:]
    result = json.loads(probed.stdout)
    assert result["within_slo"] and result["publish_seconds"] is not None, result
    removed = m.run(oauth, "probe", "--apply", "--via-store", "--remove")
    assert removed.returncode == 0, removed.stderr[-2000:]
