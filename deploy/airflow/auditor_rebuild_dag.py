"""Airflow DAG: a repair in SHARDS shards at once, then one merge (docs/scheduling.md).

Triggered by hand (no schedule), e.g. after restoring the search cluster: a fresh shard plan,
then `auditor rebuild MODE --all --apply --shard i/SHARDS --shard-plan PLAN` per shard (each
pages only its urn range, with its own checkpoint and lock), then `auditor rebuild merge`.
Copy this file into the DAGs folder; the workers run the `auditor` console script, read CONFIG
and take passwords from the environment, as deploy/airflow/auditor_scan_dag.py does. REPAIRS
must be a folder every worker sees, and the state file's folder (checkpoints, locks) too when a
retry may land on another worker.

Exit codes and Airflow. A shard task succeeds when its repair wrote its outcome (rebuild exit 0
or 1: the merge judges) and fails on 2 (configuration), 6 (the target locked by another repair)
or 3 (could not complete). A retry runs with --resume: it continues after the last confirmed
batch. The merge task fails the run on 1 (still wrong after verification) or 3 (a shard
incomplete or missing).

The commands are plain functions of this module (plan_command, rebuild_command, merge_command),
so tests read this file with `ast` and check every `auditor` invocation against the real
command line, without Airflow installed.
"""

from __future__ import annotations

import importlib.util
from datetime import datetime, timedelta

SHARDS = 4
MODE = "reindex"  # or "replay": RESTATE MCLs through DataHub's own consumer
CONFIG = "/etc/auditor/auditor.toml"
# one folder per run: {{ts_nodash}} is Airflow's template for the run's logical time
REPAIRS = "/var/lib/auditor/repairs/{{ts_nodash}}"
PLAN = f"{REPAIRS}/shards.json"


def plan_command() -> str:
    """A fresh plan for this run (urn ranges of about equal rows), written whole by a rename."""
    return (
        f"mkdir -p {REPAIRS} && "
        f"auditor scan --config {CONFIG} --plan-shards {SHARDS} --output {PLAN}.tmp && mv {PLAN}.tmp {PLAN}"
    )


def rebuild_command(shard: int) -> str:
    """Shard `shard` of SHARDS, resumed after a retry; exit 0 when its outcome is written."""
    return (
        f"auditor rebuild {MODE} --config {CONFIG} --all --apply --shard {shard}/{SHARDS} "
        f"--shard-plan {PLAN} --resume --break-stale-lock --json --output {REPAIRS}/outcome-{shard}.json; "
        "rc=$?; case $rc in 0|1) exit 0 ;; *) exit $rc ;; esac"
    )


def merge_command() -> str:
    """One outcome from the shards'; its exit code is the run's verdict."""
    return (
        f"auditor rebuild merge {REPAIRS}/outcome-*.json --shards {SHARDS} --json "
        f"--output {REPAIRS}/merged.json"
    )


def build_dag() -> object:
    from airflow import DAG

    try:  # Airflow 3: the standard provider
        from airflow.providers.standard.operators.bash import BashOperator
    except ImportError:  # Airflow 2
        from airflow.operators.bash import BashOperator

    with DAG(
        dag_id="datahub_auditor_rebuild",
        description="DataHub repair in shards: rebuild the search indices from the aspect table",
        schedule=None,  # by hand, after a restore
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,  # one repair of the target at a time (the shards' locks say so too)
        dagrun_timeout=timedelta(hours=8),
        default_args={"retries": 3, "retry_delay": timedelta(minutes=2)},
        tags=["datahub", "auditor"],
    ) as dag:
        shards = [
            BashOperator(
                task_id=f"rebuild_shard_{i}",
                bash_command=rebuild_command(i),
                execution_timeout=timedelta(hours=6),
            )
            for i in range(SHARDS)
        ]
        plan = BashOperator(task_id="shard_plan", bash_command=plan_command())
        merge = BashOperator(task_id="merge", bash_command=merge_command(), retries=0)
        plan >> shards  # every shard reads the same plan
        shards >> merge
    return dag


# outside Airflow (the tests read this file) there is no DAG to build; inside, errors show
dag = build_dag() if importlib.util.find_spec("airflow") is not None else None
