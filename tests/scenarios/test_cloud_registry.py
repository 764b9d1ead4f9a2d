"""Schema registries as DataHub runs them in the cloud.

AWS Glue (`SCHEMA_REGISTRY_TYPE=AWS_GLUE`): the sandbox's GMS writes Glue-framed MCLs (byte 3, a
schema version UUID, zlib-compressed bodies), a stand-in serves Glue's API with SigV4 checked
(sandbox/glue.py). The scan decodes every MCL through Glue (the values compared, not matched by
time), a replay produces in Glue's framing under the topic's newest schema version, the sandbox's
consumer applies it and the re-scan is clean. Glue unreachable: the scan still decodes with the
wheel's schema and says so; a replay refuses (nothing produced).

A Confluent-compatible registry behind basic auth over TLS (Confluent Cloud's way): decoded with
`schema_registry.user_info` and the CA; a wrong secret is said, never shown."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from faults import drop_mcl
from http_faults import FaultyProxy
from test_search_tls import certificate
from world import World

from sandbox.aws_sigv4 import Key, Verifier
from sandbox.glue import GlueFraming, GlueRegistry

pytestmark = pytest.mark.integration

REGION, REGISTRY = "eu-central-1", "datahub"
AKID, SECRET = "AKIAAUDITORGLUETEST1", f"glue-{uuid.uuid4().hex}"
FAST = ("--settle", "0.5", "--sample-window", "1")


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "auditor.cli", *args], env=env, capture_output=True,
                          text=True, timeout=180)  # fmt: skip
    assert SECRET not in done.stdout + done.stderr
    return done


class GlueWorld:
    def __init__(self, world: World, glue: GlueRegistry, targets: set[str]) -> None:
        self.world, self.glue, self.targets = world, glue, targets

    def env(self, **over: str) -> dict[str, str]:
        base = self.world.cli_env(
            SCHEMA_REGISTRY_TYPE="AWS_GLUE",  # DataHub's own variables
            AWS_GLUE_SCHEMA_REGISTRY_REGION=REGION,
            AWS_GLUE_SCHEMA_REGISTRY_NAME=REGISTRY,
            AUDITOR_SCHEMA_REGISTRY_URL="",
            AWS_ACCESS_KEY_ID=AKID,
            AWS_SECRET_ACCESS_KEY=SECRET,
            AWS_ENDPOINT_URL_GLUE=self.glue.url,  # boto3's own endpoint override
            AWS_CONFIG_FILE="/nonexistent",
            AWS_SHARED_CREDENTIALS_FILE="/nonexistent",
            AWS_EC2_METADATA_DISABLED="true",
            AUDITOR_MCL_VERSIONED_TOPIC=self.world.topics[0],
            AUDITOR_MCL_TIMESERIES_TOPIC=self.world.topics[1],
            AUDITOR_MAE_CONSUMER_GROUP=self.world.group,
        )
        base.pop("AWS_SESSION_TOKEN", None)
        return {k: v for k, v in {**base, **over}.items() if v != ""}


@pytest.fixture(scope="module")
def glue_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GlueWorld]:
    tmp = tmp_path_factory.mktemp("glue")
    verifier = Verifier(REGION, "glue")
    verifier.add(Key(AKID, SECRET))
    with GlueRegistry(verifier) as glue:
        framing = GlueFraming(compression=5)
        world = World("postgres", "opensearch", tmp, n=20, release="1.7.0", own_topics=True, glue=framing)
        try:
            # DataHub names each topic's schema after the topic; the writer's version is the newest
            glue.register(REGISTRY, world.topics[0], version=framing.version)
            glue.register(REGISTRY, world.topics[1])  # a version of its own (the writer uses the first)
            yield GlueWorld(world, glue, drop_mcl(world, 0) | drop_mcl(world, 1))
        finally:
            world.close()


def test_glue_framed_mcls_are_decoded_replayed_in_glue_framing_and_the_rescan_is_clean(
    glue_world: GlueWorld,
) -> None:
    g = glue_world
    scanned = run(g.env(), "scan", "--no-state", "-f", "json", *FAST)
    assert scanned.returncode == 1, scanned.stderr[-2000:]
    report = json.loads(scanned.stdout)
    assert not report["warnings"], report["warnings"]  # every MCL of interest decoded through Glue
    assert "AWS Glue registry datahub in eu-central-1" in report["sources"]["schema_registry"]
    diverged = {f["urn"]: f for f in report["findings"] if f["verdict"] == "diverged"}
    assert set(diverged) == g.targets and {f["subkind"] for f in diverged.values()} == {
        "event_never_published"
    }
    assert "GetSchemaVersion" in g.glue.calls and AKID in g.glue.verifier.seen

    # Glue unreachable: decoded with the wheel's schema, said; a replay refuses to guess the version
    away = g.env(AWS_ENDPOINT_URL_GLUE="http://127.0.0.1:9")
    blind = run(away, "scan", "--no-state", "-f", "json", *FAST)
    assert blind.returncode == 1, blind.stderr[-2000:]
    warned = json.loads(blind.stdout)["warnings"]
    assert any("wheel's MetadataChangeLog schema" in w for w in warned), warned
    urn = sorted(g.targets)[0]
    refused = run(away, "rebuild", "replay", "--urn", urn, "--apply", "--wait", "30")
    assert refused.returncode == 3 and "refusing to replay" in refused.stderr, refused.stderr[-2000:]

    triaged = run(g.env(), "triage", urn, "-f", "json", "--settle", "0.5")
    assert triaged.returncode == 1 and urn in triaged.stdout, triaged.stderr[-2000:]
    for target in sorted(g.targets):
        replayed = run(g.env(), "rebuild", "replay", "--urn", target, "--apply", "--wait", "60", "--json")
        assert replayed.returncode == 0, replayed.stdout[-1500:] + replayed.stderr[-1500:]
    assert g.world.consumer.stats.errors == 0, g.world.consumer.stats.last_error  # it decoded the replay
    again = run(g.env(), "scan", "--no-state", "-f", "json", *FAST)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-1500:]


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, FaultyProxy, str, set[str]]]:
    tmp = tmp_path_factory.mktemp("registry-auth")
    world = World("postgres", "opensearch", tmp, n=20, release="1.7.0", own_topics=True)
    cert, key = certificate(tmp)
    try:
        targets = drop_mcl(world, 0)
        with FaultyProxy(world.endpoints.registry, tls=(cert, key), auth=f"registry-key:{SECRET}") as proxy:
            yield world, proxy, cert, targets
    finally:
        world.close()


def test_a_confluent_registry_behind_basic_auth_and_tls(
    guarded: tuple[World, FaultyProxy, str, set[str]],
) -> None:
    world, proxy, cert, targets = guarded
    path = urlsplit(world.endpoints.registry).path  # Apicurio's Confluent-compatible API
    env = world.cli_env(
        AUDITOR_SCHEMA_REGISTRY_URL=proxy.url + path,
        AUDITOR_SCHEMA_REGISTRY_USER_INFO=f"registry-key:{SECRET}",
        AUDITOR_SCHEMA_REGISTRY_CA=cert,
        AUDITOR_MCL_VERSIONED_TOPIC=world.topics[0],
        AUDITOR_MCL_TIMESERIES_TOPIC=world.topics[1],
        AUDITOR_MAE_CONSUMER_GROUP=world.group,
    )
    scanned = run(env, "scan", "--no-state", "-f", "json", *FAST)
    assert scanned.returncode == 1, scanned.stderr[-2000:]
    report = json.loads(scanned.stdout)
    assert not report["warnings"], report["warnings"]
    assert {f["urn"] for f in report["findings"] if f["verdict"] == "diverged"} == targets
    bad = {**env, "AUDITOR_SCHEMA_REGISTRY_USER_INFO": "registry-key:not-it"}
    wrong = run(bad, "scan", "--no-state", "-f", "json", *FAST)
    assert wrong.returncode == 1
    assert any("could not be decoded" in w and "401" in w for w in json.loads(wrong.stdout)["warnings"])
    urn = next(iter(targets))
    refused = run(bad, "rebuild", "replay", "--urn", urn, "--apply", "--wait", "30")
    assert refused.returncode == 3 and "refusing to replay" in refused.stderr, refused.stderr[-2000:]
    replayed = run(env, "rebuild", "replay", "--urn", urn, "--apply", "--wait", "60")
    assert replayed.returncode == 0, replayed.stderr[-2000:]
    again = run(env, "scan", "--no-state", "-f", "json", *FAST)
    assert again.returncode == 0, again.stdout[-2000:]
