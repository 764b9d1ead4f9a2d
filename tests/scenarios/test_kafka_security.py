"""Kafka with SASL/SCRAM over TLS and ACLs: a private KRaft broker (StandardAuthorizer, a CA and a
certificate made by the test) next to the shared one. The scan, as a user with only the grants it
needs (Read on both change-log topics, Describe on the MAE group and on the `auditor-probe-`
groups), reads the consumer's offsets and the change log and finds exactly the dropped MCL;
without any one of those grants it loses Kafka evidence. A replay as that user is
refused by the broker and fails clearly (exit 3, one line, nothing produced); with Write on the
versioned topic added (no IdempotentWrite) it repairs and the re-scan is clean. A wrong password
or a missing CA ends the scan with exit 3 naming the refusal. No output shows a password."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from confluent_kafka.admin import AclOperation, ResourcePatternType, ResourceType
from faults import drop_mcl
from pydantic import SecretStr
from secure_kafka import MECHANISM, Acl, SecureKafka
from world import World

from auditor.api import ScanOptions, scan
from auditor.core.model import Report, Selection, Verdict
from auditor.reports import RENDERERS
from auditor.settings import Settings
from sandbox.endpoints import Endpoints
from sandbox.naming import MAE_CONSUMER_GROUP, MCL_TIMESERIES_TOPIC, MCL_TOPICS, MCL_VERSIONED_TOPIC
from sandbox.topics import end_offsets

pytestmark = pytest.mark.integration

OPTIONS = ScanOptions(grace=300.0, settle=0.5, sample_window=1.0)
FAST = ("--settle", "0.5", "--sample-window", "1")
WRONG = f"not-it-{uuid.uuid4().hex}"
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
LITERAL, PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED

# What the scan needs, and no more (Read implies Describe; the scan never joins or commits)
SCAN_ACLS: dict[str, Acl] = {
    "Read on the versioned topic": (TOPIC, MCL_VERSIONED_TOPIC, LITERAL, AclOperation.READ),
    "Read on the timeseries topic": (TOPIC, MCL_TIMESERIES_TOPIC, LITERAL, AclOperation.READ),
    "Describe on the MAE group": (GROUP, MAE_CONSUMER_GROUP, LITERAL, AclOperation.DESCRIBE),
    "Describe on auditor-probe-*": (GROUP, "auditor-probe-", PREFIXED, AclOperation.DESCRIBE),
}
# A replay adds Write on the versioned topic: the idempotent producer's id comes with it
REPLAY_ACLS = [*SCAN_ACLS.values(), (TOPIC, MCL_VERSIONED_TOPIC, LITERAL, AclOperation.WRITE)]


@dataclass
class Secured:
    broker: SecureKafka
    world: World
    targets: set[str]
    passwords: dict[str, str]
    tmp: Path

    def user(self, name: str, acls: list[Acl]) -> str:
        """A SCRAM user with these ACLs; its password. The ACLs go first: the broker takes the
        user's credential after them from the metadata log, so once it accepts the login they hold."""
        self.broker.grant(name, acls)
        self.passwords[name] = f"pw-{uuid.uuid4().hex}"
        self.broker.add_user(name, self.passwords[name])
        return self.passwords[name]

    def settings(self, user: str) -> Settings:
        return self.world.settings().model_copy(
            update={
                "kafka_bootstrap": self.broker.sasl_ssl,
                "kafka_security_protocol": "SASL_SSL",
                "kafka_sasl_mechanism": MECHANISM,
                "kafka_sasl_username": user,
                "kafka_sasl_password": SecretStr(self.passwords[user]),
                "kafka_ssl_ca_location": str(self.broker.ca),
            }
        )

    def scan(self, user: str) -> Report:
        for index in self.world.search.list_indices(f"{self.world.prefix}_*"):
            self.world.search.refresh(index)
        return scan(self.settings(user), Selection(), OPTIONS)

    def cli(self, user: str, *args: str, **over: str) -> subprocess.CompletedProcess[str]:
        """`python -m auditor.cli ARGS` as `user`, settings from the environment."""
        kafka = {
            "AUDITOR_KAFKA_BOOTSTRAP": self.broker.sasl_ssl,
            "AUDITOR_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "AUDITOR_KAFKA_SASL_MECHANISM": MECHANISM,
            "AUDITOR_KAFKA_SASL_USERNAME": user,
            "AUDITOR_KAFKA_SASL_PASSWORD": self.passwords[user],
            "AUDITOR_KAFKA_SSL_CA_LOCATION": str(self.broker.ca),
        }
        env = self.world.cli_env(**{**kafka, **over})
        env = {k: v for k, v in env.items() if v}  # an empty value: the setting left out
        done = subprocess.run(
            [sys.executable, "-m", "auditor.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.tmp,
        )
        for password in (*self.passwords.values(), WRONG):
            assert password not in done.stdout + done.stderr, (args, "a password was shown")
        return done


def diverged(report: Report) -> set[str]:
    return {c.finding.urn for c in report.findings if c.verdict == Verdict.DIVERGED}


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The error line of a failed run that shows nothing else (a hint line may follow)."""
    lines = done.stderr.splitlines()
    assert done.stdout == "" and lines and lines[0].startswith("error: "), done.stderr[-2000:]
    assert all(line.startswith("hint: ") for line in lines[1:]), done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "rdkafka" not in done.stderr, done.stderr[-2000:]
    return lines[0]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    tmp = tmp_path_factory.mktemp("kafka-sasl")
    with SecureKafka(tmp) as broker:  # fails the module (never skips) if it does not start
        endpoints = replace(Endpoints.from_env(), kafka=broker.plaintext)
        # a DataHub 1.7.0 deployment: its upgrade rows name the release (no warning that it is unknown)
        # DataHub's own topic and group names: the ACLs below name them
        world = World(
            "postgres", "opensearch", tmp, n=20, endpoints=endpoints, release="1.7.0", own_topics=False
        )
        try:
            s = Secured(broker, world, drop_mcl(world), {}, tmp)
            s.user("scanner", list(SCAN_ACLS.values()))
            s.user("repairer", REPLAY_ACLS)
            yield s
        finally:
            world.close()


def test_the_scan_reads_offsets_and_the_change_log_with_only_its_grants(secured: Secured) -> None:
    report = secured.scan("scanner")
    assert report.complete and report.kafka_available, report.warnings
    assert report.sources["kafka"].startswith(secured.broker.sasl_ssl) and not report.warnings
    assert diverged(report) == secured.targets and report.exit_code == 1
    findings = [c for c in report.findings if c.verdict == Verdict.DIVERGED]
    assert {c.subkind for c in findings} == {"event_never_published"}  # looked for on the topic: not there
    assert all(c.evidence.kafka and c.evidence.mcl_found is False for c in findings), findings
    # the consumer's committed offsets and the log ends of every partition of both topics
    partitions = {(p.topic, p.partition): p for p in report.partitions}
    ends = end_offsets(secured.broker.plaintext, MCL_TOPICS)
    assert set(partitions) == set(ends)
    assert all(p.end == ends[key] for key, p in partitions.items())
    assert all(p.committed == p.end for p in partitions.values() if p.end > 0)  # the consumer caught up
    assert sum(p.end for p in partitions.values()) > 0 and partitions[(MCL_VERSIONED_TOPIC, 0)].members == 1
    assert secured.passwords["scanner"] not in RENDERERS["json"](report)


@pytest.mark.parametrize("missing", list(SCAN_ACLS))
def test_each_grant_is_needed(secured: Secured, missing: str) -> None:
    """Without any one grant the scan loses Kafka evidence: all of it, saying why, and running on
    time and history only; or, without Read on the timeseries topic, that topic's partitions
    (silently: Kafka hides a topic one may not describe)."""
    name = f"less-{uuid.uuid4().hex[:6]}"
    secured.user(name, [acl for what, acl in SCAN_ACLS.items() if what != missing])
    report = secured.scan(name)
    assert report.complete
    if missing == "Read on the timeseries topic":
        assert report.kafka_available and {p.topic for p in report.partitions} == {MCL_VERSIONED_TOPIC}
        assert diverged(report) == secured.targets
        return
    assert not report.kafka_available and not report.partitions
    assert any("authorization failed" in w.lower() and "weaker" in w for w in report.warnings), (
        report.warnings
    )
    assert not diverged(report)  # within the grace, a change without Kafka evidence is in flight


def test_a_replay_without_write_is_refused_and_produces_nothing(secured: Secured) -> None:
    (urn,) = secured.targets
    before = end_offsets(secured.broker.plaintext, MCL_TOPICS)
    done = secured.cli("scanner", "rebuild", "replay", "--urn", urn, "--apply", "--wait", "30")
    assert done.returncode == 3, done.stderr[-2000:]
    error = one_error_line(done)
    assert "Kafka" in error and "authorization failed" in error.lower(), error
    assert f"Write on the topic {MCL_VERSIONED_TOPIC}" in done.stderr  # the hint
    assert end_offsets(secured.broker.plaintext, MCL_TOPICS) == before


def test_with_write_on_the_versioned_topic_the_replay_repairs_and_the_rescan_is_clean(
    secured: Secured,
) -> None:
    (urn,) = secured.targets
    before = end_offsets(secured.broker.plaintext, MCL_TOPICS)
    done = secured.cli("repairer", "rebuild", "replay", "--urn", urn, "--apply", "--wait", "60", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stdout)
    assert outcome["consumer_caught_up"] and not outcome["failed"] and not outcome["still_wrong"]
    after = end_offsets(secured.broker.plaintext, MCL_TOPICS)
    produced = sum(after[k] - before[k] for k in before)
    assert produced == outcome["counts"]["produced"] > 0
    rescan = secured.scan("scanner")
    assert rescan.complete and rescan.kafka_available and not diverged(rescan) and rescan.exit_code == 0


@pytest.mark.parametrize(
    ("case", "over", "says"),
    [
        ("wrong password", {"AUDITOR_KAFKA_SASL_PASSWORD": WRONG}, "SASL authentication error"),
        ("no CA", {"AUDITOR_KAFKA_SSL_CA_LOCATION": ""}, "certificate verify failed"),
    ],
)
def test_a_refused_login_or_certificate_ends_the_scan_with_exit_3(
    secured: Secured, case: str, over: dict[str, str], says: str
) -> None:
    done = secured.cli("scanner", "scan", "--no-state", *FAST, **over)
    assert done.returncode == 3, (case, done.returncode, done.stderr[-2000:])
    error = one_error_line(done)
    assert error.startswith(f"error: Kafka {secured.broker.sasl_ssl}") and says in error, (case, error)
