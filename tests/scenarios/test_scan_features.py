"""The scan's features end to end: CLI, exit codes, filters, shards + merge, registry skew,
--since, --confirm, metrics, and that credentials never reach the output."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from faults import drop_mcl, hard_delete
from sqlalchemy import text
from world import World

from auditor.core.model import Selection
from sandbox.naming import ASPECT_TABLE

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, set[str]]]:
    world = World("mariadb", "opensearch", tmp_path_factory.mktemp("broken"))
    try:
        targets = drop_mcl(world) | hard_delete(world, which=1)
        world.consumer.stop()  # one consumer per group at a time: other tests start their own
        yield world, targets
    finally:
        world.close()


def cli(world: World, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = world.cli_env(**(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "auditor.cli", *args],
        env=base,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_cli_json_exit_code_and_no_credentials(broken: tuple[World, set[str]], tmp_path: Path) -> None:
    world, targets = broken
    metrics = tmp_path / "auditor.prom"
    done = cli(
        world, "scan", "-f", "json", "--settle", "0.5", "--sample-window", "1", "--metrics-file", str(metrics)
    )
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert {f["urn"] for f in report["findings"]} == targets
    assert report["sources"]["store"].startswith("mysql+pymysql://datahub:***@")
    for text_out in (done.stdout, done.stderr, metrics.read_text()):
        assert "datahub:datahub@" not in text_out
    assert 'entity_type="dataset",verdict="diverged",subkind="event_never_published"}' in metrics.read_text()
    md = cli(world, "scan", "-f", "markdown", "--settle", "0.5", "--sample-window", "1")
    assert md.returncode == 1 and "## To repair" in md.stdout and "RestoreIndices" in md.stdout


def test_entity_type_filter(broken: tuple[World, set[str]]) -> None:
    world, _ = broken
    report = world.scan(selection=Selection(entity_types=("tag",)))
    assert set(report.entities) == {"tag"}
    assert not report.findings  # the broken entities are datasets
    assert report.exit_code == 0


def test_shards_merge_to_the_full_scan(broken: tuple[World, set[str]], tmp_path: Path) -> None:
    world, _ = broken
    full = world.scan()
    paths = []
    for i in range(3):
        out = tmp_path / f"shard{i}.json"
        done = cli(
            world,
            "scan",
            "--shard",
            f"{i}/3",
            "-f",
            "json",
            "-o",
            str(out),
            "--settle",
            "0.5",
            "--sample-window",
            "0",
        )
        assert done.returncode in (0, 1), done.stderr
        paths.append(str(out))
    merged = cli(world, "report", "merge", *paths, "-f", "json")
    assert merged.returncode == 1, merged.stderr
    data = json.loads(merged.stdout)
    assert sum(data["entities"].values()) == sum(full.entities.values())
    counts = {(c["entity_type"], c["verdict"], c["subkind"]): c["count"] for c in data["counts"]}
    assert counts == full.counts
    partial = cli(world, "report", "merge", *paths[:2], "-f", "json")
    assert partial.returncode == 3  # a shard is missing: the merge says it is incomplete


def test_registry_skew_is_counted_not_fatal(tmp_path: Path) -> None:
    world = World("postgres", "opensearch", tmp_path, n=20)
    try:
        urn = world.of_type("dataset")[0].urn
        with world.engine.begin() as conn:
            for u, aspect in ((urn, "aspectFromTheFuture"), ("urn:li:entityFromTheFuture:x", "thing")):
                conn.execute(
                    text(
                        f"INSERT INTO {ASPECT_TABLE} (urn, aspect, version, metadata, createdon, createdby) "
                        "VALUES (:u, :a, 0, '{}', CURRENT_TIMESTAMP, 'urn:li:corpuser:datahub')"
                    ),
                    {"u": u, "a": aspect},
                )
        report = world.scan()
    finally:
        world.close()
    assert report.unknown == {"dataset.aspectFromTheFuture": 1, "entityFromTheFuture": 1}
    assert report.exit_code == 0 and not report.findings


def test_since_and_confirm(tmp_path: Path) -> None:
    world = World("postgres", "elasticsearch", tmp_path, n=30)
    try:
        time.sleep(1.5)
        since = time.time()
        urns = [e.urn for e in world.of_type("dataset")[:3]]
        world.consumer.pause()
        for round_ in range(4):  # each urn's last value 9-11 s after the resume: after the join
            for urn in urns:
                world.writer.write(urn, "globalTags", {"tags": [{"tag": f"urn:li:tag:late{round_}"}]})
        world.consumer.rate(1.0)  # moving every second: in flight, not stalled
        world.consumer.resume()
        from datetime import UTC, datetime

        selection = Selection(since=datetime.fromtimestamp(since - 0.5, UTC))
        report = world.scan(selection=selection, confirm=20.0)
    finally:
        world.close()
    assert sum(report.entities.values()) == len(urns)
    assert set(report.converged) and all(k.split("|")[2] in urns for k in report.converged)
    assert report.exit_code == 0


def test_unreachable_backend_and_bad_usage_exit_codes(broken: tuple[World, set[str]]) -> None:
    world, _ = broken
    down = cli(world, "scan", env={"AUDITOR_STORE_URL": "mysql+pymysql://datahub:secretpw@127.0.0.1:1/x"})
    assert down.returncode == 3
    assert "unreachable" in down.stderr and "secretpw" not in down.stderr + down.stdout
    assert "Traceback" not in down.stderr
    usage = cli(world, "scan", "--shard", "5/2")
    assert usage.returncode == 2 and "--shard" in usage.stderr
    unknown = cli(world, "scan", "--entity-type", "nosuchtype")
    assert unknown.returncode == 2 and "nosuchtype" in unknown.stderr


def test_scroll_reads_what_point_in_time_reads(broken: tuple[World, set[str]]) -> None:
    """Clusters without point-in-time are read with a sorted scroll: same docs, same order."""
    from auditor.backends.connect import open_search

    world, _ = broken
    client = open_search(world.settings())
    indices = sorted(client.indices(f"{world.prefix}_*index_v2"))
    with_pit = [d for i in indices for d in client.stream(i, ["urn"], page=7)]
    client._pit_ok = False  # as on a cluster that refuses PIT
    with_scroll = [d for i in indices for d in client.stream(i, ["urn"], page=7)]
    assert len(with_pit) >= 50
    assert with_pit == with_scroll
    assert [d[1]["urn"] for d in with_pit if "dataset" in d[1]["urn"]] == sorted(
        d[1]["urn"] for d in with_pit if "dataset" in d[1]["urn"]
    )


def test_a_read_of_a_few_urns_is_what_the_point_in_time_reads(broken: tuple[World, set[str]]) -> None:
    """A triage's read (`few`: one plain search an index) finds the same docs in the same order
    as the point in time, when they fit in a page and when they do not (then it goes on to it)."""
    from auditor.backends.connect import open_search
    from auditor.backends.search import urn_filter
    from auditor.core.model import Selection

    world, _ = broken
    client = open_search(world.settings())
    index = f"{world.prefix}_datasetindex_v2"
    urns = sorted(d[1]["urn"] for d in client.stream(index, ["urn"]))[:5]
    query = urn_filter("urn", Selection(urns=tuple(urns)))
    with_pit = list(client.stream(index, ["urn"], query=query))
    assert [d[1]["urn"] for d in with_pit] == urns
    for page in (2000, 5, 2):  # fits; exactly a page (goes on); over a page (goes on)
        read_before = client.docs_read
        few = list(client.stream(index, ["urn"], query=query, page=page, few=True))
        assert few == with_pit, page
        assert client.docs_read - read_before == len(urns)  # a full first page is not counted twice
