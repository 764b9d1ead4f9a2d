"""Airflow DAG: the drift scan in SHARDS shards at once, then one merge (docs/scheduling.md).

Copy this file into the DAGs folder. The workers run the `auditor` console script (installed
with `pip install datahub-auditor`, or use the image of deploy/container/Containerfile with the
KubernetesPodOperator: the commands stay the same), read the configuration CONFIG (written
with `auditor config init`) and take the password from the environment
(EBEAN_DATASOURCE_PASSWORD, e.g. from an Airflow connection or the worker's secrets). REPORTS must
be a folder every worker sees (one worker queue, or a shared volume), since the merge reads the
shards' reports.

Exit codes and Airflow. A shard task succeeds when its scan wrote a report (scan exit 0, 1, 4, 5, 8
or 9: the verdict is the merge's business) and fails on 2 (configuration) or 3 (a backend down,
worth the retries). The merge task (`auditor report merge`, the scan's exit codes) then fails
the run on 1 (persistent divergence), 3 (a shard incomplete), 4 (the MAE consumer stalled), 5
(documents an older release wrote), 8 (the store far smaller than the index) or 9 (the store
behind the index): a red run, and on_failure_callback / email_on_failure tell
you. It is not retried: a merge of the same reports gives the same verdict. Metrics go to
node_exporter's textfile collector of the worker that merged (METRICS), or push them as
deploy/kubernetes does.

The heal (docs/heal.md), off unless the operator sets the Airflow Variable
`auditor_heal_policy` to the path of a heal policy (`airflow variables set auditor_heal_policy
/etc/auditor/heal.toml`): without it the `heal` task is skipped. It runs after the merge, whatever
the merge said (a divergence is what it heals), `auditor heal` on the configuration's own state
file (its scans' history decides what is persistent: the shards keep theirs apart). It succeeds
on 0 (healed and verified, or nothing to heal) and on 1, 5, 9 (something left for a person, said
by the merge's red run and the heal's metrics, as the systemd unit does); it fails, and alerts
as any failed task, on 11 (a guard refused the heal: nothing written, a person must look), on 2,
6 and 8, and on 3. It is not retried: a refusal stays a refusal, and the next run heals again.

The commands are plain functions of this module (plan_command, scan_command, merge_command,
heal_command), so tests read this file with `ast` and check every `auditor` invocation against
the real command line, without Airflow installed.
"""

from __future__ import annotations

import importlib.util
from datetime import datetime, timedelta

SHARDS = 4
CONFIG = "/etc/auditor/auditor.toml"
# one folder per run: {{ts_nodash}} is Airflow's template for the run's logical time
REPORTS = "/var/lib/auditor/reports/{{ts_nodash}}"
METRICS = "/var/lib/node_exporter/textfile_collector/datahub_auditor.prom"
# the shard plan (urn ranges of about equal rows): kept across runs, made again once a week. An
# old plan is still right (its ranges cover every urn), only less even; each shard reads its range
PLAN = "/var/lib/auditor/shards.json"
# the heal policy's path, or "" (no heal): an Airflow Variable the operator sets (Jinja, rendered per run)
HEAL_POLICY = "{{ var.value.get('auditor_heal_policy', '') }}"
HEAL_REPORT = f"{REPORTS}/heal.json"
HEAL_METRICS = "/var/lib/node_exporter/textfile_collector/datahub_auditor_heal.prom"
SKIPPED = 99  # BashOperator's skip_on_exit_code: the task shows as skipped, not failed


def plan_command() -> str:
    """The shard plan, unless the one there is less than 7 days old (written whole, by a rename)."""
    return (
        f'if [ -z "$(find {PLAN} -mtime -7 2>/dev/null)" ]; then '
        f"auditor scan --config {CONFIG} --plan-shards {SHARDS} --output {PLAN}.tmp && mv {PLAN}.tmp {PLAN}; fi"
    )


def scan_command(shard: int) -> str:
    """Shard `shard` of SHARDS; exit 0 when its report is written, whatever it found."""
    return (
        f"mkdir -p {REPORTS} && "
        f"auditor scan --config {CONFIG} --shard {shard}/{SHARDS} --shard-plan {PLAN} --format json "
        f"--output {REPORTS}/shard-{shard}.json; "
        "rc=$?; case $rc in 0|1|4|5|8|9) exit 0 ;; *) exit $rc ;; esac"
    )


def merge_command() -> str:
    """One report from the shards'; its exit code is the run's verdict."""
    return (
        f"auditor report merge {REPORTS}/shard-*.json --format json --output {REPORTS}/merged.json "
        f"--metrics-file {METRICS}"
    )


def heal_command() -> str:
    """`auditor heal` under the operator's policy; skipped without one; 11 (a guard refused) fails."""
    return (
        f'policy="{HEAL_POLICY}"; '
        f'if [ -z "$policy" ]; then echo "no heal policy (Variable auditor_heal_policy): not healing"; '
        f"exit {SKIPPED}; fi; "
        f"mkdir -p {REPORTS} && "
        f'auditor heal --config {CONFIG} --policy "$policy" --json --output {HEAL_REPORT} '
        f"--metrics-file {HEAL_METRICS}; "
        "rc=$?; case $rc in 0|1|5|9) exit 0 ;; *) exit $rc ;; esac"
    )


def build_dag() -> object:
    from airflow import DAG

    try:  # Airflow 3: the standard provider
        from airflow.providers.standard.operators.bash import BashOperator
    except ImportError:  # Airflow 2
        from airflow.operators.bash import BashOperator

    with DAG(
        dag_id="datahub_auditor_scan",
        description="DataHub drift scan: search indices and the MAE consumer against the aspect table",
        schedule="0 */2 * * *",
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,  # never two runs on the same state files
        dagrun_timeout=timedelta(hours=3),
        default_args={"retries": 2, "retry_delay": timedelta(minutes=5)},
        tags=["datahub", "auditor"],
    ) as dag:
        shards = [
            BashOperator(
                task_id=f"scan_shard_{i}", bash_command=scan_command(i), execution_timeout=timedelta(hours=2)
            )
            for i in range(SHARDS)
        ]
        plan = BashOperator(task_id="shard_plan", bash_command=plan_command())
        merge = BashOperator(task_id="merge", bash_command=merge_command(), retries=0)
        heal = BashOperator(
            task_id="heal",
            bash_command=heal_command(),
            skip_on_exit_code=SKIPPED,
            trigger_rule="all_done",  # after the merge, red or green: a divergence is what it heals
            retries=0,
            execution_timeout=timedelta(minutes=45),
        )
        plan >> shards  # every shard reads the same plan
        shards >> merge  # every shard succeeded (trigger_rule all_success), then the merge
        merge >> heal  # never beside the scans (the same cluster, the same consumer)
    return dag


# outside Airflow (the tests read this file) there is no DAG to build; inside, errors show
dag = build_dag() if importlib.util.find_spec("airflow") is not None else None
