"""Regenerate docs/guides/*.md: each guide's commands run for real against the sandbox, and their
output is pasted in as printed (only the tool's own lines; paths shortened).

Run by `scripts/guides` (stack up first). Each guide gets its own index prefix and the MariaDB
table to itself for the time it runs: do not run it beside the test suite or the demo.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from sqlalchemy import make_url, text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "scenarios"))

from sandbox.consumer import MaeConsumer  # noqa: E402
from sandbox.database import engine_for  # noqa: E402
from sandbox.ddl import create_schema  # noqa: E402
from sandbox.endpoints import Endpoints  # noqa: E402
from sandbox.faults import restore_index, snapshot_index  # noqa: E402
from sandbox.generator import seed  # noqa: E402
from sandbox.naming import ASPECT_TABLE  # noqa: E402
from sandbox.search import connect  # noqa: E402
from sandbox.writer import GmsWriter  # noqa: E402

GUIDES = ROOT / "docs" / "guides"
STORE, SEARCH = "mariadb", "opensearch"


def tags(*names: str) -> dict:
    return {"tags": [{"tag": f"urn:li:tag:{n}"} for n in names]}


class Sandbox:
    """A fresh catalog under its own prefix, the MAE-like consumer, and a way to run the CLI."""

    def __init__(self, prefix: str, n: int) -> None:
        from world import move_group_to_end

        self.prefix = prefix
        self.endpoints = Endpoints.from_env()
        self.engine = engine_for(STORE, self.endpoints)
        create_schema(self.engine)
        with self.engine.begin() as conn:
            conn.execute(text(f"DELETE FROM {ASPECT_TABLE}"))
        self.search = connect(SEARCH, self.endpoints)
        for index in self.search.list_indices(f"{prefix}_*"):
            self.search.delete_index(index)
        move_group_to_end(self.endpoints.kafka)
        self.writer = GmsWriter(self.engine, self.endpoints)
        self.consumer = MaeConsumer(SEARCH, self.endpoints, index_prefix=prefix).start()
        self.catalog = [e for e in seed(self.writer, n, seed=11, prefix=f"{prefix}-") if not e.removed]
        assert self.consumer.drain(300), "the consumer did not index the seed catalog"
        self.tmp = Path(tempfile.mkdtemp(prefix=f"guide-{prefix}-"))
        self.env = {
            **os.environ,
            "AUDITOR_STORE_URL": self.endpoints.store_url(STORE),
            "AUDITOR_SEARCH_URL": self.endpoints.search_url(SEARCH),
            "AUDITOR_KAFKA_BOOTSTRAP": self.endpoints.kafka,
            "AUDITOR_SCHEMA_REGISTRY_URL": self.endpoints.registry,
            "AUDITOR_INDEX_PREFIX": prefix,
            "AUDITOR_STATE_FILE": str(self.tmp / "state.sqlite"),
            "COLUMNS": "110",
            "TERM": "dumb",
        }

    def of_type(self, entity_type: str) -> list[str]:
        return [e.urn for e in self.catalog if e.entity_type == entity_type]

    def refresh(self) -> None:
        for index in self.search.list_indices(f"{self.prefix}_*"):
            self.search.refresh(index)

    def run(self, shown: str, *, env: dict[str, str] | None = None) -> tuple[int, str]:
        """Run `auditor ...` as shown (run from the guide's working directory); (exit code, output)."""
        args = shlex.split(shown)
        assert args[0] == "auditor", shown
        done = subprocess.run(
            [sys.executable, "-m", "auditor.cli", *args[1:]],
            env={**self.env, **(env or {})},
            cwd=self.tmp,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        out = (done.stdout + done.stderr).rstrip()
        out = out.replace(str(self.tmp) + "/", "").replace(str(self.tmp), ".")
        out = re.sub(r"\x1b\[[0-9;]*m", "", out)
        out = "\n".join(line.rstrip() for line in out.splitlines())
        return done.returncode, out

    def close(self) -> None:
        self.consumer.stop()
        self.writer.close()
        self.engine.dispose()


class Guide:
    """Markdown with the real output of each command."""

    def __init__(self, box: Sandbox) -> None:
        self.box, self.lines = box, []

    def say(self, *paragraphs: str) -> None:
        for p in paragraphs:
            self.lines += [p, ""]

    def show(self, shown: str, *, env: dict[str, str] | None = None, keep: int = 80) -> tuple[int, str]:
        code, out = self.box.run(shown, env=env)
        body = out.splitlines()
        if len(body) > keep:
            body = body[:keep] + [f"... ({len(out.splitlines()) - keep} more lines)"]
        fence = "````" if "```" in out else "```"
        self.lines += [fence, f"$ {shown}", *body, "$ echo $?   # the exit code", str(code), fence, ""]
        return code, out

    def file(self, path: Path, title: str, keep: int = 40) -> None:
        text_ = path.read_text(encoding="utf-8").replace(str(self.box.tmp) + "/", "")
        body = text_.splitlines()
        if len(body) > keep:
            body = body[:keep] + ["..."]
        self.lines += [f"`{title}`:", "", "```", *body, "```", ""]

    def write(self, name: str, title: str) -> None:
        stamp = time.strftime("%Y-%m-%d", time.gmtime())
        head = [
            f"# {title}",
            "",
            f"<!-- generated by scripts/guides on {stamp} from real runs against the sandbox; "
            "edit scripts/guides.py, not this file -->",
            "",
        ]
        (GUIDES / name).write_text("\n".join(head + self.lines).rstrip() + "\n", encoding="utf-8")
        print(f"wrote {(GUIDES / name).relative_to(ROOT)}")


def scheduled_scan() -> None:
    box = Sandbox("gsched", 120)
    g = Guide(box)
    try:
        datasets = box.of_type("dataset")
        db = make_url(box.endpoints.store_url(STORE))
        search = urlsplit(box.endpoints.search_url(SEARCH))
        datahub_env = {  # as the DataHub containers get them
            "EBEAN_DATASOURCE_URL": f"jdbc:mysql://{db.host}:{db.port}/{db.database}?useSSL=false",
            "EBEAN_DATASOURCE_USERNAME": db.username or "",
            "EBEAN_DATASOURCE_PASSWORD": db.password or "",
            "ELASTICSEARCH_HOST": search.hostname or "",
            "ELASTICSEARCH_PORT": str(search.port),
            "ELASTICSEARCH_USE_SSL": "false",
            "KAFKA_BOOTSTRAP_SERVER": box.endpoints.kafka,
            "KAFKA_SCHEMAREGISTRY_URL": box.endpoints.registry,
            "INDEX_PREFIX": box.prefix,
        }
        clean = {k: v for k, v in box.env.items() if not k.startswith("AUDITOR_")}
        box.env = {**clean, **datahub_env, "AUDITOR_STATE_FILE": "state.sqlite"}  # beside the config
        g.say(
            "A drift scan on a schedule: every hour (or every few minutes on a busy catalog), keeping "
            "a state file between runs so a difference seen twice is known to be persistent, writing "
            "a report for people and a Prometheus textfile for alerts. Scheduling it with a "
            "Kubernetes CronJob, an indexed Job, Airflow or systemd: `docs/scheduling.md`.",
            "## 1. A configuration from DataHub's own environment",
            "Run this where GMS's environment variables are set (the same `EBEAN_DATASOURCE_*`, "
            "`ELASTICSEARCH_*`, `KAFKA_*` and `INDEX_PREFIX` the DataHub containers get). The "
            "password stays in the environment: the file only names the variable.",
        )
        g.show("auditor config init -o auditor.toml")
        g.file(box.tmp / "auditor.toml", "auditor.toml")
        g.say(
            "## 2. The scan",
            "Read-only: it never writes to the database, the indices or Kafka. Here the catalog has "
            "one change whose MCL was never published (GMS wrote the row, Kafka never got the event) "
            "and a consumer working through a backlog of 20 updates.",
        )
        box.writer.write(datasets[0], "globalTags", tags("pii"), drop_mcl=True)
        assert box.consumer.drain(60)
        time.sleep(10.5)  # older than the MCL settle time: its MCL would have been produced by now
        box.consumer.pause()
        for i, urn in enumerate(datasets[1:21]):
            box.writer.write(urn, "globalTags", tags(f"backlog-{i}"))
        box.consumer.rate(2.0)
        box.consumer.resume()
        time.sleep(2)
        box.refresh()
        g.show("auditor scan --config auditor.toml --metrics-file auditor.prom -f markdown -o drift.md")
        g.file(box.tmp / "drift.md", "drift.md (paste it into the ticket)", keep=60)
        g.file(box.tmp / "auditor.prom", "auditor.prom (for node_exporter's textfile collector)", keep=30)
        g.say(
            "Exit codes, for the scheduler: 0 nothing persistent (in-flight changes allowed), "
            "1 persistent divergence or unreadable rows, 2 usage or configuration error, 3 the scan "
            "could not complete, 4 the MAE consumer is stalled. The alert rules in "
            "`deploy/prometheus/auditor-alerts.yml` read the textfile, not the exit code.",
            "## 3. The next run",
            "The backlog drained by itself (it was a delay, and the first scan said so with an ETA); "
            "the lost MCL is still missing (a divergence, and the scan says what to run). The state "
            "file holds the history: the HTML report draws the trend.",
        )
        box.consumer.rate(None)
        assert box.consumer.drain(120)
        box.refresh()
        g.show(
            "auditor scan --config auditor.toml --metrics-file auditor.prom -f html -o drift.html"
        )
        g.show("auditor scan --config auditor.toml")
        g.write("scheduled-scan.md", "Guide: a scheduled drift scan")
    finally:
        box.close()


def after_restore() -> None:
    box = Sandbox("grestore", 120)
    g = Guide(box)
    try:
        datasets = box.of_type("dataset")
        box.refresh()  # a snapshot of every index, as a cluster snapshot takes them
        indices = box.search.list_indices(f"{box.prefix}_*")
        snapshots = {index: snapshot_index(box.search, index) for index in indices}
        time.sleep(1.1)  # the snapshot predates every change below, to the database's precision
        for i, urn in enumerate(datasets[:12]):
            box.writer.write(urn, "globalTags", tags(f"after-snapshot-{i}"))
        assert box.consumer.drain(60)
        for index, snapshot in snapshots.items():
            restore_index(box.search, index, snapshot)
        time.sleep(10.5)  # the restore is found some time later: those MCLs were long produced
        box.refresh()
        g.say(
            "The search cluster was restored from a snapshot (a lost node, a bad upgrade, a migration). "
            "Everything written to the database after the snapshot was taken is missing from search, "
            "and DataHub's consumer will not send it again: its offsets are past those changes. Here "
            "the indices were restored from a snapshot taken before 12 datasets were retagged.",
            "## 1. What is behind",
            "The scan finds the documents that are older than their rows, and tells a restore from "
            "other causes: the MCLs were consumed, the document holds an older value, the index's "
            "newest system-metadata is older than the table's newest write.",
        )
        g.show("auditor scan --settle 1 -t dataset")
        g.say(
            "## 2. The repair, first without writing",
            "`rebuild after-restore` takes the window from the scan, replays the rows written in it "
            "through DataHub's own consumer (or, with `--mode reindex`, writes the documents straight "
            "from the rows), waits for the consumer, scans again and keeps the evidence. Without "
            "`--apply` it only says what it would do.",
        )
        g.show("auditor rebuild after-restore")
        g.show("auditor rebuild after-restore --apply --wait 120 --evidence restore-evidence")
        g.file(box.tmp / "restore-evidence.md", "restore-evidence.md (attach it to the incident)", keep=50)
        g.say("## 3. Check", "A final scan of everything:")
        box.refresh()
        g.show("auditor scan --settle 1")
        g.write("after-restore.md", "Guide: after restoring the search cluster")
    finally:
        box.close()


def on_call_triage() -> None:
    box = Sandbox("gtriage", 120)
    g = Guide(box)
    try:
        datasets = box.of_type("dataset")
        missing, slow = datasets[0], datasets[1]
        box.consumer.skip_index_write({missing})
        box.writer.write(missing, "globalTags", tags("finance"))
        assert box.consumer.drain(60)
        box.consumer.skip_index_write(None)
        time.sleep(10.5)  # someone notices later: the change is older than the MCL settle time
        box.refresh()
        g.say(
            '"I can\'t find my dataset" (or: its new tag does not show up in search). `auditor '
            "triage` walks one entity from its rows in the database, through the MCL of each aspect's "
            "latest change and the MAE consumer's position, to its search document field by field, "
            "its system-metadata documents and its edges, and names the first boundary that breaks.",
            "## 1. A change the index never got",
            "The consumer read the MCL (its offsets are past it) but the document does not have the "
            "new tag. Paste the urn as you have it: quoted, URL-encoded or a DataHub URL all work.",
        )
        g.show(f"auditor triage {shlex.quote(missing)}")
        g.say(
            "The command it names repairs this one entity and re-checks it:",
        )
        g.show(f"auditor rebuild replay --urn {shlex.quote(missing)}")
        g.show(f"auditor rebuild replay --urn {shlex.quote(missing)} --apply --wait 60")
        g.show(f"auditor triage {shlex.quote(missing)}", keep=4)
        g.say(
            "## 2. A change still on its way",
            "Here the consumer has a backlog (paused, then catching up at 2 messages a second): "
            "nothing is wrong yet, and triage says when it should show up.",
        )
        box.consumer.pause()
        for i, urn in enumerate(datasets[2:12]):
            box.writer.write(urn, "globalTags", tags(f"queued-{i}"))
        box.writer.write(slow, "globalTags", tags("queued-last"))
        box.consumer.rate(2.0)
        box.consumer.resume()
        time.sleep(1.5)
        g.show(f"auditor triage {shlex.quote(slow)} --settle 1")
        box.consumer.rate(None)
        assert box.consumer.drain(60)
        g.say(
            "## 3. A urn that is not quite right",
            "A typo in the case or the platform: triage looks for near matches in the table and "
            "the index and offers them (exit code 2).",
        )
        name = missing.split(",")[1]
        g.show(f"auditor triage {shlex.quote(missing.replace(name, name.upper()))}")
        g.say("`--format json` gives the same walk for a bot or a ticket (schema in `docs/triage.md`).")
        g.write("on-call-triage.md", 'Guide: on-call triage of "I can\'t find my dataset"')
    finally:
        box.close()


GUIDE_FUNCTIONS: dict[str, Callable[[], None]] = {
    "scheduled-scan": scheduled_scan,
    "after-restore": after_restore,
    "on-call-triage": on_call_triage,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("guides", nargs="*", choices=[*GUIDE_FUNCTIONS, []], help="default: all")
    args = parser.parse_args()
    GUIDES.mkdir(parents=True, exist_ok=True)
    for name in args.guides or GUIDE_FUNCTIONS:
        GUIDE_FUNCTIONS[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
