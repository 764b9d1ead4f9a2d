"""`auditor config init` on a DataHub deployed on AWS with IAM everywhere the machine can stand in
for: RDS IAM tokens (sandbox/rds_iam.py), Amazon OpenSearch Service with SigV4 over HTTPS
(sandbox/aws_sigv4.py), the Glue schema registry (sandbox/glue.py), every signature checked with
botocore. DataHub's own variables (as its Helm chart sets them) make the file; with only AWS
credentials in the environment, the scan finds the faults, a replay (Glue-framed) and a
reindex (rows read with tokens, documents written signed) repair them, the re-scan is clean.
MSK IAM is the one part left out: Apache Kafka cannot accept MSK's token (test_cloud_auth.py
checks the token itself)."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from faults import drop_mcl, skip_index_write
from test_cloud_store import database
from test_config_init_scan import auditor, base_env
from test_search_tls import certificate
from world import World

from sandbox.aws_sigv4 import Key, SearchProxy, Verifier
from sandbox.endpoints import stack_home
from sandbox.glue import GlueFraming, GlueRegistry
from sandbox.rds_iam import RdsIamProxy

pytestmark = pytest.mark.integration

REGION = "ap-southeast-2"
AKID, SECRET = "AKIAAUDITORCONFIGINI", f"init-{uuid.uuid4().hex}"
SOCKET = stack_home() / "run" / "postgres" / ".s.PGSQL.15432"


def test_config_init_on_aws_then_scan_repair_and_rescan(tmp_path: Path) -> None:
    key = Key(AKID, SECRET, arn="arn:aws:sts::123456789012:assumed-role/datahub-auditor/irsa")
    verifiers = {service: Verifier(REGION, service) for service in ("es", "rds-db", "glue")}
    for verifier in verifiers.values():
        verifier.add(key)
    framing = GlueFraming(compression=5)
    cert, cert_key = certificate(tmp_path)
    with GlueRegistry(verifiers["glue"]) as glue, RdsIamProxy(str(SOCKET), verifiers["rds-db"]) as rds:
        world = World(
            "postgres", "opensearch", tmp_path, n=20, release="1.7.0", own_topics=True, glue=framing
        )
        try:
            glue.register("datahub", world.topics[0], version=framing.version)
            glue.register("datahub", world.topics[1])
            dropped, skipped = drop_mcl(world, 0), skip_index_write(world)
            world.consumer.reset_faults()
            world.refresh()
            search = SearchProxy(
                world.endpoints.search_url("opensearch"), verifiers["es"], tls=(cert, cert_key)
            )
            with search:
                port = search.url.rsplit(":", 1)[1]
                datahub = {  # as GMS and datahub-upgrade are given them on AWS
                    "EBEAN_DATASOURCE_URL": f"jdbc:postgresql://127.0.0.1:{rds.port}/{database(world)}?sslmode=disable",
                    "EBEAN_DATASOURCE_USERNAME": "datahub",
                    "EBEAN_USE_IAM_AUTH": "true",
                    "EBEAN_CLOUD_PROVIDER": "aws",
                    "ELASTICSEARCH_HOST": "127.0.0.1",
                    "ELASTICSEARCH_PORT": port,
                    "ELASTICSEARCH_USE_SSL": "true",
                    "OPENSEARCH_USE_AWS_IAM_AUTH": "true",
                    "AWS_REGION": REGION,
                    "KAFKA_BOOTSTRAP_SERVER": world.endpoints.kafka,
                    "SCHEMA_REGISTRY_TYPE": "AWS_GLUE",
                    "AWS_GLUE_SCHEMA_REGISTRY_NAME": "datahub",
                    "AWS_GLUE_SCHEMA_REGISTRY_REGION": REGION,
                    "INDEX_PREFIX": world.prefix,
                    "METADATA_CHANGE_LOG_VERSIONED_TOPIC_NAME": world.topics[0],
                    "METADATA_CHANGE_LOG_TIMESERIES_TOPIC_NAME": world.topics[1],
                    "METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID": world.group,
                }
                config = tmp_path / "auditor.toml"
                command = [*auditor(), "config", "init", "-o", str(config)]
                init = subprocess.run(command, env={**base_env(), **datahub}, capture_output=True, text=True)
                assert init.returncode == 0, init.stderr
                run_time = {  # IRSA's credentials, the stand-ins' endpoints, the test CA
                    **base_env(),
                    "AWS_ACCESS_KEY_ID": AKID,
                    "AWS_SECRET_ACCESS_KEY": SECRET,
                    "AWS_CONFIG_FILE": "/nonexistent",
                    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
                    "AWS_EC2_METADATA_DISABLED": "true",
                    "AWS_ENDPOINT_URL_GLUE": glue.url,
                    "AUDITOR_SEARCH_CA_CERTS": cert,
                    "AUDITOR_STATE_FILE": str(tmp_path / "state.sqlite"),
                }

                def run(*args: str) -> subprocess.CompletedProcess[str]:
                    done = subprocess.run([*auditor(), *args, "--config", str(config)], env=run_time,
                                          capture_output=True, text=True, timeout=180)  # fmt: skip
                    assert SECRET not in done.stdout + done.stderr
                    return done

                scanned = run("scan", "--no-state", "-f", "json", "--settle", "0.5")
                assert scanned.returncode == 1, scanned.stderr[-2000:]
                report = json.loads(scanned.stdout)
                assert not report["warnings"], report["warnings"]
                diverged = {f["urn"] for f in report["findings"] if f["verdict"] == "diverged"}
                assert diverged == dropped | skipped
                (tmp_path / "report.json").write_text(scanned.stdout)
                for urn in dropped:
                    replayed = run("rebuild", "replay", "--urn", urn, "--apply", "--wait", "60")
                    assert replayed.returncode == 0, replayed.stderr[-2000:]
                for urn in skipped:
                    reindexed = run("rebuild", "reindex", "--urn", urn, "--apply")
                    assert reindexed.returncode == 0, reindexed.stderr[-2000:]
                again = run("scan", "--no-state", "-f", "json", "--settle", "0.5")
                assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-1500:]
                assert rds.accepted and glue.calls and search.verifier.seen
        finally:
            world.close()
