"""A federation on the real servers: two GMS-like writers, each with its own database (PostgreSQL
and MariaDB), producing to one topic that one MAE-like consumer indexes into one set of indices.

Everything here is this module's own: databases fed_<id>_a / fed_<id>_b, topics, group, indices.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from auditor.api import ScanOptions, scan
from auditor.core.model import Report, Verdict
from auditor.settings import Settings, load_settings
from sandbox.consumer import MaeConsumer
from sandbox.database import make_engine
from sandbox.endpoints import Endpoints
from sandbox.generator import CatalogEntity
from sandbox.generator import seed as seed_catalog
from sandbox.naming import ASPECT_TABLE, entity_doc_id, entity_index
from sandbox.search import SearchStore, connect
from sandbox.topics import admin_client
from sandbox.writer import GmsWriter

pytestmark = pytest.mark.integration

PASSWORD = "datahub"  # the sandbox's; the tests check it never reaches an output


def _server_url(url: str, database: str) -> str:
    return make_url(url).set(database=database).render_as_string(hide_password=False)


@dataclass
class Store:
    """One store of the federation: its own database, its own GMS-like writer."""

    name: str
    url: str
    engine: Engine
    writer: GmsWriter
    entities: list[CatalogEntity] = field(default_factory=list)


class Federation:
    """Two stores feeding one index through one topic and one consumer."""

    def __init__(self, tmp: Path) -> None:
        self.endpoints = Endpoints.from_env()
        self.id = uuid.uuid4().hex[:8]
        self.prefix = f"f{self.id}"
        self.topic = f"fed_{self.id}_MetadataChangeLog_Versioned_v1"
        self.timeseries = f"fed_{self.id}_MetadataChangeLog_Timeseries_v1"
        self.group = f"fed_{self.id}_mae"
        self.state_file = tmp / "state.sqlite"
        self.databases: list[tuple[str, str]] = []  # (server, database) to drop
        self.stores = [self._store("a", self.endpoints.pg_url), self._store("b", self.endpoints.mysql_url)]
        self.search: SearchStore = connect("opensearch", self.endpoints)
        self.consumer = MaeConsumer(
            "opensearch",
            self.endpoints,
            group_id=self.group,
            topics=(self.topic, self.timeseries),
            index_prefix=self.prefix,
        )
        self.consumer.start()
        for i, store in enumerate(self.stores):
            store.entities = seed_catalog(
                store.writer, 25, seed=100 + i, prefix=f"{self.prefix}-{store.name}-"
            )
        assert self.consumer.drain(120), "the consumer did not index the two seed catalogs"
        self.refresh()

    def _store(self, name: str, server: str) -> Store:
        database = f"fed_{self.id}_{name}"
        admin = server.rsplit("/", 1)[0] + ("/postgres" if server.startswith("postgresql") else "/")
        with create_engine(admin, isolation_level="AUTOCOMMIT").connect() as conn:
            conn.execute(text(f"CREATE DATABASE {database}"))
        self.databases.append((admin, database))
        url = _server_url(server, database)
        engine = make_engine(url)
        writer = GmsWriter(
            engine, self.endpoints, versioned_topic=self.topic, timeseries_topic=self.timeseries
        )
        return Store(name, url, engine, writer)

    def close(self) -> None:
        self.consumer.stop()
        for store in self.stores:
            store.writer.close()
            store.engine.dispose()
        for index in self.search.list_indices(f"{self.prefix}_*"):
            self.search.delete_index(index)
        for admin, database in self.databases:
            with create_engine(admin, isolation_level="AUTOCOMMIT").connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS {database}"))
        admin = admin_client(self.endpoints.kafka)
        for future in admin.delete_topics([self.topic, self.timeseries]).values():
            future.result(timeout=30)
        for future in admin.delete_consumer_groups([self.group]).values():
            future.result(timeout=30)

    def store(self, name: str) -> Store:
        return next(s for s in self.stores if s.name == name)

    def refresh(self) -> None:
        for index in self.search.list_indices(f"{self.prefix}_*"):
            self.search.refresh(index)

    def flags(self, **over: object) -> dict[str, object]:
        e = self.endpoints
        return {
            "stores": [f"{s.name}={s.url}" for s in self.stores],
            "search_url": e.opensearch,
            "kafka_bootstrap": e.kafka,
            "schema_registry_url": e.registry,
            "index_prefix": self.prefix,
            "state_file": str(self.state_file),
            "mcl_versioned_topic": self.topic,
            "mcl_timeseries_topic": self.timeseries,
            "mae_consumer_group": self.group,
            **over,
        }

    def settings(self, **over: object) -> Settings:
        return load_settings(env={}, **self.flags(**over))

    def scan(self) -> Report:
        time.sleep(0.5)
        self.refresh()
        return scan(self.settings(), options=ScanOptions(grace=300.0, settle=0.5, sample_window=2.0))

    def env(self) -> dict[str, str]:
        """The environment of a command run against the federation (the stores given as flags)."""
        e = self.endpoints
        env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
        env.update(
            AUDITOR_SEARCH_URL=e.opensearch,
            AUDITOR_KAFKA_BOOTSTRAP=e.kafka,
            AUDITOR_SCHEMA_REGISTRY_URL=e.registry,
            AUDITOR_INDEX_PREFIX=self.prefix,
            AUDITOR_STATE_FILE=str(self.state_file),
            AUDITOR_MCL_VERSIONED_TOPIC=self.topic,
            AUDITOR_MCL_TIMESERIES_TOPIC=self.timeseries,
            AUDITOR_MAE_CONSUMER_GROUP=self.group,
        )
        return env

    def command(self, *args: str, stores: list[str] | None = None) -> subprocess.CompletedProcess[str]:
        """`auditor ARGS --store a=URL --store b=URL`."""
        given = stores if stores is not None else [f"{s.name}={s.url}" for s in self.stores]
        flags = [x for s in given for x in ("--store", s)]
        return subprocess.run(
            [sys.executable, "-m", "auditor.cli", *args, *flags],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    def cli(self, *args: str, stores: list[str] | None = None) -> subprocess.CompletedProcess[str]:
        """`auditor scan` of the federation."""
        return self.command("scan", "--settle", "0.5", "--sample-window", "2", *args, stores=stores)


def _entities_in(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(
            conn.execute(text(f"SELECT COUNT(DISTINCT urn) FROM {ASPECT_TABLE} WHERE version = 0")).scalar()
            or 0
        )


@pytest.fixture(scope="module")
def federation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Federation]:
    fed = Federation(tmp_path_factory.mktemp("federation"))
    try:
        yield fed
    finally:
        fed.close()


class Writes:
    """Both writers rewriting their own datasets' tags, a few a second each, until stopped."""

    def __init__(self, fed: Federation) -> None:
        self.fed = fed
        self.count = {s.name: 0 for s in fed.stores}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(s,), daemon=True) for s in fed.stores]

    def _run(self, store: Store) -> None:
        rng = random.Random(store.name)
        datasets = [e.urn for e in store.entities if e.entity_type == "dataset" and not e.removed]
        tags = [e.urn for e in store.entities if e.entity_type == "tag"]
        writer = GmsWriter(
            store.engine,
            self.fed.endpoints,
            create_topics=False,
            ensure_schema=False,
            versioned_topic=self.fed.topic,
            timeseries_topic=self.fed.timeseries,
        )
        try:
            while not self._stop.is_set():
                picked = rng.sample(tags, k=min(len(tags), rng.randint(0, 2)))
                try:
                    writer.write(rng.choice(datasets), "globalTags", {"tags": [{"tag": t} for t in picked]})
                    self.count[store.name] += 1
                except Exception as exc:  # noqa: BLE001 - counted: the test asserts the load ran clean
                    self.errors.append(repr(exc))
                self._stop.wait(0.2)
        finally:
            writer.close()

    def __enter__(self) -> Writes:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(30)


def test_a_clean_federation_is_clean_while_both_writers_keep_writing(federation: Federation) -> None:
    with Writes(federation) as writes:
        time.sleep(1.0)
        report = federation.scan()
    assert writes.count["a"] >= 3 and writes.count["b"] >= 3 and not writes.errors, (
        writes.count,
        writes.errors,
    )
    assert report.exit_code == 0, [
        (c.verdict, c.subkind, c.finding.urn, c.evidence.reason) for c in report.findings
    ]
    assert report.total(Verdict.DIVERGED) == 0
    for store in federation.stores:
        counts = report.stores[store.name]
        assert counts["entities"] == _entities_in(store) > 0, (store.name, counts)
        assert counts["conflicts"] == 0 and counts["diverged"] == 0
    assert sum(report.entities.values()) == sum(_entities_in(s) for s in federation.stores)
    assert "store.a" in report.sources and "store.b" in report.sources


@pytest.fixture(scope="module")
def faults(federation: Federation) -> dict[str, str]:
    """A dataset of store b whose doc the consumer skipped, and a urn written in both stores."""
    missing = f"urn:li:dataset:(urn:li:dataPlatform:hive,{federation.prefix}.b_missing,PROD)"
    both = f"urn:li:dataset:(urn:li:dataPlatform:hive,{federation.prefix}.in_both,PROD)"
    federation.consumer.skip_index_write({missing})
    federation.store("b").writer.write(
        missing, "datasetProperties", {"name": "b_missing", "customProperties": {}}
    )
    assert federation.consumer.drain(60)
    federation.consumer.skip_index_write(None)
    federation.store("a").writer.write(
        both, "datasetProperties", {"name": "in_both_a", "customProperties": {}}
    )
    federation.store("b").writer.write(
        both, "datasetProperties", {"name": "in_both_b", "customProperties": {}}
    )
    assert federation.consumer.drain(60)
    return {"missing": missing, "both": both}


def test_a_missing_document_is_attributed_to_its_store_and_a_urn_in_both_is_a_conflict(
    federation: Federation, faults: dict[str, str]
) -> None:
    report = federation.scan()
    by_urn = {}
    for c in report.findings:
        by_urn.setdefault(c.finding.urn, []).append(c)
    (missing,) = [c for c in by_urn[faults["missing"]] if c.finding.kind.value == "missing_document"]
    assert missing.verdict == Verdict.DIVERGED and missing.finding.stores == ("b",)
    (conflict,) = [c for c in by_urn[faults["both"]] if c.subkind == "store_conflict"]
    assert conflict.verdict == Verdict.DIVERGED and conflict.finding.stores == ("a", "b")
    assert set(conflict.finding.details["stores"]) == {"a", "b"}
    assert "a (" in conflict.evidence.reason and "b (" in conflict.evidence.reason
    assert conflict.evidence.observed is not None  # re-read from both stores in causal order
    assert report.stores["a"]["conflicts"] == report.stores["b"]["conflicts"] == 1
    assert report.stores["b"]["diverged"] >= 2 and report.stores["a"]["diverged"] >= 1
    assert all(c.finding.stores for c in report.findings if c.finding.kind.value != "orphan_document")
    assert report.exit_code == 1


def test_the_cli_reports_both_in_json_markdown_and_metrics_without_passwords(
    federation: Federation, faults: dict[str, str], tmp_path: Path
) -> None:
    metrics = tmp_path / "auditor.prom"
    done = federation.cli("-f", "json", "--metrics-file", str(metrics))
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    found = {(f["urn"], f["subkind"]): f for f in data["findings"]}
    assert found[(faults["missing"], "missing_document")]["store"] == "b"
    conflict = found[(faults["both"], "store_conflict")]
    assert conflict["store"] == "a,b" and set(conflict["details"]["stores"]) == {"a", "b"}
    assert set(data["stores"]) == {"a", "b"}
    prom = metrics.read_text()
    assert 'auditor_store_conflicts{store="a"} 1' in prom and 'auditor_store_conflicts{store="b"} 1' in prom
    markdown = federation.cli("-f", "markdown")
    assert markdown.returncode == 1 and "## Per store" in markdown.stdout and "store=a,b" in markdown.stdout
    for out in (done, markdown):
        assert f":{PASSWORD}@" not in out.stdout + out.stderr


def test_an_unreachable_store_makes_the_scan_incomplete_naming_it(federation: Federation) -> None:
    a = federation.store("a")
    gone = f"b=mysql+pymysql://datahub:{PASSWORD}@127.0.0.1:1/fed_{federation.id}_b"
    done = federation.cli("-f", "json", stores=[f"a={a.url}", gone])
    assert done.returncode == 3, done.stdout + done.stderr
    assert "store 'b'" in done.stderr and f":{PASSWORD}@" not in done.stderr + done.stdout


def test_a_bad_store_name_is_a_usage_error(federation: Federation) -> None:
    done = federation.cli(stores=["team a=postgresql+psycopg://x@127.0.0.1:1/x"])
    assert done.returncode == 2 and "not a simple identifier" in done.stderr


def test_a_store_that_goes_away_mid_run_stops_the_scan_naming_it(
    federation: Federation, faults: dict[str, str]
) -> None:
    """Store a (PostgreSQL) refuses connections once the join is done: the re-observation of the
    candidates cannot read its rows, and the scan fails naming it (exit 3), never judging a union
    without it."""
    from auditor.errors import BackendUnavailable

    database = f"fed_{federation.id}_a"
    admin = federation.endpoints.pg_url.rsplit("/", 1)[0] + "/postgres"
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")

    def go_away(_message: str) -> None:
        with engine.connect() as conn:
            conn.execute(text(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false"))
            conn.execute(
                text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :d"),
                {"d": database},
            )

    options = ScanOptions(grace=300.0, settle=0.5, sample_window=2.0, use_state=False)
    try:
        with pytest.raises(BackendUnavailable, match="store 'a'") as raised:
            scan(federation.settings(), options=options, log=go_away)
        assert raised.value.exit_code == 3 and f":{PASSWORD}@" not in str(raised.value)
    finally:
        with engine.connect() as conn:
            conn.execute(text(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true"))
        engine.dispose()


def test_a_federated_report_is_repaired_store_by_store_and_the_conflict_left(tmp_path: Path) -> None:
    """Replay, then reindex, a federated report: each store's findings from its own rows, the
    orphan (no store holds it) deleted, the urn in both stores left for a person; a re-scan then
    finds the conflict only. A report of a federation needs its stores configured."""
    fed = Federation(tmp_path)
    try:
        a, b = fed.store("a"), fed.store("b")
        datasets = [e.urn for e in a.entities if dict(e.aspects).get("datasetProperties")]
        stale, orphan = datasets[0], datasets[1]
        missing = f"urn:li:dataset:(urn:li:dataPlatform:hive,{fed.prefix}.b_missing,PROD)"
        both = f"urn:li:dataset:(urn:li:dataPlatform:hive,{fed.prefix}.in_both,PROD)"
        fed.consumer.skip_index_write({missing})
        b.writer.write(missing, "datasetProperties", {"name": "b_missing", "customProperties": {}})
        assert fed.consumer.drain(60)
        fed.consumer.skip_index_write(None)
        a.writer.write(both, "datasetProperties", {"name": "in_both_a", "customProperties": {}})
        b.writer.write(both, "datasetProperties", {"name": "in_both_b", "customProperties": {}})
        assert fed.consumer.drain(60)
        index = entity_index("dataset", fed.prefix)
        fed.search.upsert(index, entity_doc_id(stale), {"name": "renamed behind DataHub's back"})
        assert a.writer.hard_delete_rows(orphan) > 0
        time.sleep(1.0)  # older than the scan's settle: the changes are not in flight
        fed.refresh()
        report = tmp_path / "fed.json"
        scanned = fed.cli("-f", "json", "-o", str(report))
        assert scanned.returncode == 1, scanned.stderr
        found = {(f["urn"], f["subkind"]): f["store"] for f in json.loads(report.read_text())["findings"]}
        assert found[(stale, "stale_fields")] == "a" and found[(missing, "missing_document")] == "b"
        assert found[(orphan, "orphan_document")] is None and found[(both, "store_conflict")] == "a,b"

        for urn, stores, said in ((missing, ["b"], "in store b"), (both, ["a", "b"], "also held by a")):
            traced = fed.command("triage", urn, "-f", "json", "--settle", "1")  # names the store
            rows_seen = json.loads(traced.stdout)["boundaries"][0]
            assert rows_seen["facts"]["stores"] == stores and said in rows_seen["detail"], traced.stdout

        alone = subprocess.run(  # the report's stores are not configured: a usage error
            [sys.executable, "-m", "auditor.cli", "rebuild", "replay", "--from-report", str(report)],
            env=fed.env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert alone.returncode == 2 and "federation (stores a, b)" in alone.stderr, alone.stderr
        repair = ("--from-report", str(report), "--apply", "--json")
        replay = fed.command("rebuild", "replay", *repair, "--wait", "60")
        assert replay.returncode == 0, replay.stdout[-2000:] + replay.stderr[-2000:]
        replayed = json.loads(replay.stdout)
        assert replayed["counts"]["produced"] >= 2 and replayed["still_wrong"] == []
        assert replayed["elsewhere"].get("fix_row") == 1  # the conflict, not written
        assert any(n.startswith("store a: ") for n in replayed["notes"])
        assert any(n.startswith("store b: ") for n in replayed["notes"])
        reindex = fed.command("rebuild", "reindex", *repair)
        assert reindex.returncode == 0, reindex.stdout[-2000:] + reindex.stderr[-2000:]
        reindexed = json.loads(reindex.stdout)
        assert reindexed["counts"].get("deleted", 0) >= 1 and reindexed["still_wrong"] == []
        after = fed.scan()
    finally:
        fed.close()
    left = {(c.finding.urn, c.subkind) for c in after.findings if c.verdict == Verdict.DIVERGED}
    assert {u for u, _ in left} == {both} and (both, "store_conflict") in left, left
