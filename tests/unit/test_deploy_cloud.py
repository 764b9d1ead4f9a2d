"""deploy/kubernetes/eks-irsa.yaml and deploy/aws/auditor-policy.json: the EKS deployment with IRSA
is what the auditor reads (its TOML loads and turns every AWS path on), its pod runs as the
annotated service account with no secret, its invocation parses against the real command tree,
and the IAM policy grants every action docs/cloud.md says the scan and the repairs need."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from test_schedules import check

from auditor.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "kubernetes" / "eks-irsa.yaml"
POLICY = ROOT / "deploy" / "aws" / "auditor-policy.json"
CLOUD_DOC = ROOT / "docs" / "cloud.md"


def documents() -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all(MANIFEST.read_text()) if d}


def test_the_irsa_cronjob_runs_as_the_annotated_account_with_aws_everywhere(tmp_path: Path) -> None:
    docs = documents()
    account = docs["ServiceAccount"]
    assert re.fullmatch(
        r"arn:aws:iam::\d{12}:role/[\w+=,.@-]+",
        account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"],
    )
    pod = docs["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    container = pod["containers"][0]
    assert "env" not in container or not any("secretKeyRef" in str(e) for e in container["env"])  # no secret
    check(["auditor", *container["args"]], str(MANIFEST))
    config = tmp_path / "auditor.toml"
    config.write_text(docs["ConfigMap"]["data"]["auditor.toml"])
    s = load_settings(config, env={})
    assert s.store_aws_iam and s.search_aws_iam and s.kafka_sasl_mechanism == "AWS_MSK_IAM"
    assert s.schema_registry_type == "aws_glue" and s.aws_region == "eu-west-1"
    assert (
        s.store_url is not None and ":" not in s.store_url.get_secret_value().split("//", 1)[1].split("@")[0]
    )


def test_the_policy_grants_what_the_docs_say_is_needed() -> None:
    policy = json.loads(POLICY.read_text())
    granted = {
        a for statement in policy["Statement"] for a in statement["Action"] if statement["Effect"] == "Allow"
    }
    doc = CLOUD_DOC.read_text()
    needed = set(re.findall(r"`((?:es|kafka-cluster|glue|rds-db):[A-Za-z]+)`", doc))
    assert needed and needed <= granted, needed - granted
