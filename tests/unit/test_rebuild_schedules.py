"""deploy/: the sharded repair (Kubernetes Indexed Job + merge, Airflow DAG) calls the auditor as it
really is (each `auditor ...` checked against the command tree, as tests/unit/test_schedules.py
does for the scans), and its shards, plan, outcomes and merge agree with each other."""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path
from typing import Any

import yaml
from test_schedules import DEPLOY, check, containers, k8s_docs, k8s_invocations, shell_invocations
from test_schedules import dag_namespace as scan_dag_namespace

JOB = DEPLOY / "kubernetes" / "sharded-rebuild-job.yaml"
DAG = DEPLOY / "airflow" / "auditor_rebuild_dag.py"


def dag_namespace() -> dict[str, Any]:
    """The repair DAG's constants and *_command functions (as the scan DAG's are read)."""
    return scan_dag_namespace(DAG)


def value(argv: list[str], *names: str) -> str:
    for name in names:
        if name in argv:
            return argv[argv.index(name) + 1]
    raise AssertionError(f"none of {names} in {argv}")


def test_every_rebuild_invocation_is_a_real_command_line() -> None:
    found = [(JOB.name, argv) for argv, _c, _s in k8s_invocations(JOB)]
    ns = dag_namespace()
    found += [(DAG.name, argv) for argv in shell_invocations(ns["plan_command"]())]
    for i in range(ns["SHARDS"]):
        found += [(f"{DAG.name} shard {i}", argv) for argv in shell_invocations(ns["rebuild_command"](i))]
    found += [(DAG.name, argv) for argv in shell_invocations(ns["merge_command"]())]
    names = {(where.split()[0], check(argv, where).name) for where, argv in found}
    assert names == {
        (JOB.name, "scan"),
        (JOB.name, "reindex"),
        (JOB.name, "merge"),
        (DAG.name, "scan"),
        (DAG.name, "reindex"),
        (DAG.name, "merge"),
    }


def test_the_indexed_rebuild_job_agrees_with_itself() -> None:
    jobs = [d for d in k8s_docs(JOB) if d["kind"] == "Job"]
    (indexed,) = [j for j in jobs if j["spec"].get("completionMode") == "Indexed"]
    n = indexed["spec"]["completions"]
    assert indexed["spec"]["podReplacementPolicy"] == "Failed"  # one pod per shard at a time
    calls = [argv for argv, _c, _s in k8s_invocations(JOB)]
    (plan,) = [a for a in calls if a[1] == "scan"]
    (shard,) = [a for a in calls if a[1] == "rebuild" and a[2] != "merge"]
    (merge,) = [a for a in calls if a[1:3] == ["rebuild", "merge"]]
    assert int(value(plan, "--plan-shards")) == n
    assert value(shard, "--shard") == f"$(JOB_COMPLETION_INDEX)/{n}"
    assert {"--apply", "--resume", "--break-stale-lock", "--json"} <= set(shard)  # a retry resumes
    (init,) = [c for _w, _s, c in containers(JOB) if c["name"] == "shard-plan"]
    assert f"ln {value(plan, '-o')} {value(shard, '--shard-plan')}" in init["args"][0]
    out = value(shard, "-o", "--output")
    assert Path(out.replace("$(JOB_COMPLETION_INDEX)", "*")) == Path(merge[3])
    assert int(value(merge, "--shards")) == n
    (wait,) = [c for _w, _s, c in containers(JOB) if c["name"].startswith("wait")]
    loop = re.search(r"for i in ([\d ]+); do", wait["args"][0])
    assert loop and [int(i) for i in loop.group(1).split()] == list(range(n))
    assert out.replace("$(JOB_COMPLETION_INDEX)", "$i") in wait["args"][0]
    # the checkpoints live on the shared volume, where a retried pod finds them
    (rebuild,) = [c for _w, _s, c in containers(JOB) if c["name"] == "rebuild"]
    state = next(e["value"] for e in rebuild["env"] if e["name"] == "AUDITOR_STATE_FILE")
    assert any(
        state.startswith(m["mountPath"] + "/") for m in rebuild["volumeMounts"] if m["name"] == "repairs"
    )
    codes = indexed["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]
    assert codes["containerName"] == "rebuild" and codes["values"] == [2, 6]
    assert yaml.safe_dump(indexed)  # plain data


def test_the_rebuild_dag_runs_every_shard_on_one_plan_then_the_merge() -> None:
    ns = dag_namespace()
    n = ns["SHARDS"]
    shards = [next(shell_invocations(ns["rebuild_command"](i))) for i in range(n)]
    assert [value(a, "--shard") for a in shards] == [f"{i}/{n}" for i in range(n)]
    assert {value(a, "--shard-plan") for a in shards} == {ns["PLAN"]}
    outputs = [value(a, "--output") for a in shards]
    merge = next(shell_invocations(ns["merge_command"]()))
    assert len(set(outputs)) == n and all(fnmatch.fnmatchcase(o, merge[3]) for o in outputs)
    assert int(value(merge, "--shards")) == n
    (plan,) = [a for a in shell_invocations(ns["plan_command"]()) if a[:2] == ["auditor", "scan"]]
    assert int(value(plan, "--plan-shards")) == n
    assert f"mv {value(plan, '--output')} {ns['PLAN']}" in ns["plan_command"]()
    source = ast.unparse(ast.parse(DAG.read_text()))
    assert "for i in range(SHARDS)" in source and "rebuild_command(i)" in source
    assert "plan >> shards" in source and "shards >> merge" in source
