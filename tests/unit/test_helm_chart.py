"""deploy/helm/datahub-auditor: the chart lints, and what `helm template` renders (helm itself,
built by scripts/helm) is checked as the plain manifests are (tests/unit/test_schedules.py):
every `auditor` call parses against the real command tree, the TOML loads with the settings
loader, the sharded Jobs agree with their N whatever N is, every pod runs as the chart's service
account, and the EKS values put IRSA's role on it with no secret anywhere."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_schedules import check, containers, k8s_invocations, shard_of

from auditor.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "datahub-auditor"
EVERYTHING = ["shardedScan.enabled=true", "shardedRepair.enabled=true", "console.enabled=true"]


@cache
def helm() -> str:
    """The helm binary (built once by scripts/helm; a failed build fails the tests, never skips)."""
    done = subprocess.run([str(ROOT / "scripts" / "helm")], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def render(tmp_path: Path, *sets: str, values: Path | None = None) -> Path:
    args = [helm(), "template", "auditor", str(CHART)]
    for s in sets:
        args += ["--set", s]
    if values is not None:
        args += ["-f", str(values)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = tmp_path / f"rendered-{abs(hash(sets))}.yaml"
    out.write_text(done.stdout)
    return out


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def pods(path: Path) -> list[dict[str, Any]]:
    out = []
    for d in docs(path):
        spec = d.get("spec", {})
        if d["kind"] == "CronJob":
            out.append(spec["jobTemplate"]["spec"]["template"]["spec"])
        elif d["kind"] in ("Job", "Deployment"):
            out.append(spec["template"]["spec"])
    return out


def test_the_chart_lints() -> None:
    done = subprocess.run([helm(), "lint", "--strict", str(CHART), "--set", ",".join(EVERYTHING)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_default_is_the_scheduled_scan_and_its_config_loads(tmp_path: Path) -> None:
    rendered = render(tmp_path)
    kinds = sorted(d["kind"] for d in docs(rendered))
    assert kinds == ["ConfigMap", "CronJob", "PersistentVolumeClaim", "ServiceAccount"]
    calls = k8s_invocations(rendered)
    assert [argv[1] for argv, _c, _s in calls] == ["scan"]
    for argv, _c, _s in calls:
        check(argv, "chart")
    (config,) = [d for d in docs(rendered) if d["kind"] == "ConfigMap"]
    path = tmp_path / "auditor.toml"
    path.write_text(config["data"]["auditor.toml"])
    assert load_settings(path, env={}).store_url is not None
    cronjob = next(d for d in docs(rendered) if d["kind"] == "CronJob")
    assert cronjob["spec"]["jobTemplate"]["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"][
        "values"
    ] == [1, 2, 4, 5, 8, 9]


@pytest.mark.parametrize("n", [3, 6])
def test_every_part_renders_and_the_sharded_jobs_agree_with_their_n(tmp_path: Path, n: int) -> None:
    rendered = render(tmp_path, *EVERYTHING, f"shardedScan.shards={n}", f"shardedRepair.shards={n}",
                      "shardedRepair.mode=replay")  # fmt: skip
    calls = [argv for argv, _c, _s in k8s_invocations(rendered)]
    console = [c for spec in pods(rendered) for c in spec["containers"] if c["name"] == "console"]
    assert len(console) == 1
    calls.append(["auditor", *console[0]["args"]])
    for argv in calls:
        check(argv, "chart")
    wanted = {("scan", "--config"), ("report", "merge"), ("rebuild", "replay"), ("rebuild", "merge")}
    assert {tuple(a[1:3]) for a in calls} >= wanted | {("serve", "--config")}
    jobs = [d for d in docs(rendered) if d["kind"] == "Job" and d["spec"].get("completionMode") == "Indexed"]
    assert [j["spec"]["completions"] for j in jobs] == [n, n]
    for argv in calls:
        if argv[1] == "scan" and "--shard" in argv or argv[1:3] == ["rebuild", "replay"]:
            assert shard_of(argv) == ("$(JOB_COMPLETION_INDEX)", n)
        if "--plan-shards" in argv:
            assert int(argv[argv.index("--plan-shards") + 1]) == n
        if argv[1:3] == ["rebuild", "merge"]:
            assert int(argv[argv.index("--shards") + 1]) == n
    waits = [c for _w, _s, c in containers(rendered) if c["name"] == "wait-for-shards"]
    assert len(waits) == 2
    for wait in waits:
        loop = re.search(r"for i in ([\d ]+); do", wait["args"][0])
        assert loop and [int(i) for i in loop.group(1).split()] == list(range(n))


def test_eks_values_run_every_pod_as_the_irsa_account_with_no_secret(tmp_path: Path) -> None:
    rendered = render(tmp_path, "shardedScan.enabled=true", values=CHART / "values-eks-irsa.yaml")
    (account,) = [d for d in docs(rendered) if d["kind"] == "ServiceAccount"]
    assert account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].startswith("arn:aws:iam::")
    specs = pods(rendered)
    assert len(specs) >= 4 and all(s["serviceAccountName"] == account["metadata"]["name"] for s in specs)
    every = [c for spec in specs for c in (*spec.get("initContainers", ()), *spec["containers"])]
    assert len(every) >= 6 and not any("secretKeyRef" in str(c.get("env")) for c in every)  # no secret at all
    (config,) = [d for d in docs(rendered) if d["kind"] == "ConfigMap"]
    path = tmp_path / "auditor.toml"
    path.write_text(config["data"]["auditor.toml"])
    s = load_settings(path, env={})
    assert s.store_aws_iam and s.search_aws_iam and s.kafka_sasl_mechanism == "AWS_MSK_IAM"
    assert s.schema_registry_type == "aws_glue"


def test_a_wrong_repair_mode_is_refused_at_render() -> None:
    sets = ["--set", "shardedRepair.enabled=true", "--set", "shardedRepair.mode=delete"]
    done = subprocess.run(
        [helm(), "template", "x", str(CHART), *sets], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and "reindex or replay" in done.stderr


def test_the_heal_cronjob_is_off_by_default_and_runs_the_policy_it_mounts(tmp_path: Path) -> None:
    from auditor.heal.policy import parse_policy

    assert not [d for d in docs(render(tmp_path)) if d["metadata"]["name"].endswith("-heal")]
    rendered = render(tmp_path, "heal.enabled=true")
    calls = [argv for argv, _c, _s in k8s_invocations(rendered)]
    (heal,) = [argv for argv in calls if argv[1] == "heal"]
    check(heal, "chart")
    assert heal[heal.index("--policy") + 1] == "/etc/auditor-heal/heal.toml"
    (policy,) = [
        d for d in docs(rendered) if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("policy")
    ]
    assert parse_policy(policy["data"]["heal.toml"]).enabled
    cronjob = next(
        d for d in docs(rendered) if d["metadata"]["name"].endswith("-heal") and d["kind"] == "CronJob"
    )
    codes = cronjob["spec"]["jobTemplate"]["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"]
    assert 11 in codes and 3 not in codes
