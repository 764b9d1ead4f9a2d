"""Repairs against the real stack: scan, rebuild what the plan picks, re-scan clean."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from faults import _datasets, _tags, hard_delete, restore_snapshot, stale_field
from rich.console import Console
from sqlalchemy import text
from world import World, json_error

from auditor.api import rebuild
from auditor.core.model import RepairKind, Report, Selection, Verdict
from auditor.errors import ConsumerNotRunning
from auditor.rebuild.request import RebuildRequest
from auditor.reports.rebuild_report import render_console
from sandbox.naming import ASPECT_TABLE, entity_index
from sandbox.topics import end_offsets

ROOT = Path(__file__).resolve().parents[2]


def diverged(report: Report) -> Counter[str]:
    return Counter(c.subkind for c in report.findings if c.verdict == Verdict.DIVERGED)


def consumer_faults(world: World) -> set[str]:
    """A dropped MCL, a skipped index write, a lost soft delete: what a replay can repair."""
    dropped, skipped, soft = _datasets(world, 3)
    world.consumer.skip_index_write({skipped, soft})
    world.writer.write(dropped, "globalTags", _tags("dropped"), drop_mcl=True)
    world.writer.write(skipped, "globalTags", _tags("skipped"))
    world.writer.soft_delete(soft)
    assert world.consumer.drain(60)
    world.consumer.reset_faults()  # the cause is fixed; what it left behind is not
    return {dropped, skipped, soft}


def lose_index_writes(world: World, k: int) -> set[str]:
    """k datasets written while the consumer drops every index write; then the cause is fixed."""
    world.consumer.skip_index_write(lambda urn, aspect: True)
    urns = _datasets(world, k)
    for i, urn in enumerate(urns):
        world.writer.write(urn, "globalTags", _tags(f"lost-{i}"))
    assert world.consumer.drain(60)
    world.consumer.reset_faults()
    return set(urns)


def rebuild_cli(world: World, tmp: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """`auditor rebuild ARGS --apply --json` against the world, as a process, and its environment."""
    e = world.endpoints
    command = [
        sys.executable, "-m", "auditor.cli", "rebuild", *args, "--apply", "--json",
        "--store-url", e.store_url(world.store_name), "--search-url", e.search_url(world.search_name),
        "--kafka", e.kafka, "--schema-registry", e.registry,
    ]  # fmt: skip
    env = {**os.environ, "INDEX_PREFIX": world.prefix, "AUDITOR_STATE_FILE": str(tmp / "state.sqlite")}
    env.update(world.kafka_env())  # the world's own topics and group
    return command, env


def request(mode: str, report: Report, tmp: Path, **more: object) -> RebuildRequest:
    more = {"wait_seconds": 60, **more}
    return RebuildRequest(mode, findings=report.findings, apply=True, state_dir=tmp, **more)


@pytest.mark.integration
@pytest.mark.parametrize("pair", ["postgres/opensearch", "mariadb/elasticsearch"])
def test_a_replay_repairs_what_the_consumer_missed(pair: str, tmp_path: Path) -> None:
    world = World(*pair.split("/"), tmp_path)
    try:
        broken = consumer_faults(world)
        before = world.scan()
        assert {"event_never_published", "stale_fields", "soft_delete_mismatch"} <= set(diverged(before))
        dry = rebuild(
            world.settings(), RebuildRequest("replay", findings=before.findings, state_dir=tmp_path)
        )
        assert not dry.applied and dry.rows and not dry.counts  # a dry run writes nothing
        outcome = rebuild(world.settings(), request("replay", before, tmp_path))
        after = world.scan()
    finally:
        world.close()
    assert outcome.consumer_caught_up and not outcome.failed
    assert outcome.counts["produced"] >= len(broken) and not outcome.still_wrong, outcome.still_wrong
    assert outcome.exit_code == 0 and outcome.checkpoint is None
    assert not diverged(after) and after.exit_code == 0, [str(c) for c in after.findings][:5]


@pytest.mark.integration
def test_a_replay_into_a_group_with_no_member_is_refused_and_never_called_consistent(tmp_path: Path) -> None:
    world = World("postgres", "opensearch", tmp_path, n=30)
    try:
        lost = lose_index_writes(world, 2)
        before = world.scan()
        world.consumer.stall()  # a member, polling, committing nothing of a backlog
        world.writer.write(_datasets(world, 3)[2], "globalTags", _tags("behind the stall"))
        with pytest.raises(ConsumerNotRunning) as stalled:
            rebuild(world.settings(), request("replay", before, tmp_path))
        world.consumer.stop()  # the MAE group has no running member left
        ends = end_offsets(world.endpoints.kafka, world.topics)
        began = time.monotonic()
        with pytest.raises(ConsumerNotRunning) as refused:
            rebuild(world.settings(), request("replay", before, tmp_path))
        took = time.monotonic() - began
        produced = end_offsets(world.endpoints.kafka, world.topics)
        # told it will start soon: produced, waited, and still never "consistent"
        forced = rebuild(
            world.settings(), request("replay", before, tmp_path, wait_seconds=2, allow_stopped_consumer=True)
        )
    finally:
        world.close()
    assert "does not move" in str(stalled.value) and stalled.value.exit_code == 4, stalled.value
    said = f"{refused.value} {refused.value.hint}"
    assert refused.value.exit_code == 4 and "no running member" in said and "rebuild reindex" in said, said
    assert produced == ends and took < 30, (ends, produced, took)  # nothing produced, no long wait
    assert {c.finding.urn for c in before.findings if c.verdict == Verdict.DIVERGED} == lost
    assert forced.consumer_caught_up is False and forced.exit_code == 4
    assert {c.finding.urn for c in forced.waiting} == lost and not forced.still_wrong, forced.waiting
    console = Console(record=True, width=200)
    render_console(forced, console)
    shown = console.export_text()
    assert "entities consistent" not in shown and f"{len(lost)} of the" in shown, shown


@pytest.mark.integration
@pytest.mark.parametrize("pair", ["mariadb/opensearch", "postgres/elasticsearch"])
def test_a_reindex_repairs_every_divergence_the_scan_reports(pair: str, tmp_path: Path) -> None:
    world = World(*pair.split("/"), tmp_path, n=80)
    try:
        restored = restore_snapshot(world) if pair.endswith("opensearch") else set()
        broken = consumer_faults(world) | hard_delete(world, 5) | stale_field(world)
        left = next(
            e
            for e in world.of_type("dataset")
            if (dict(e.aspects).get("datasetProperties") or {}).get("qualifiedName")
            and e.urn not in broken | restored
        )
        props = dict(dict(left.aspects)["datasetProperties"])
        del props["qualifiedName"]
        world.writer.write(left.urn, "datasetProperties", props)
        assert world.consumer.drain(60)
        before = world.scan()
        kinds = set(diverged(before))
        wanted = {
            "event_never_published",
            "stale_fields",
            "soft_delete_mismatch",
            "orphan_document",
            "field_left_behind",
        }
        if restored:  # the dataset index's stale docs changed since the restore point are its
            wanted = wanted - {"stale_fields", "soft_delete_mismatch"} | {"index_behind_restore"}
            # said once for the index, counted over every finding, with its one repair
            (line,) = before.sections["restores"]
            behind = len(restored - broken)  # a restored entity hard-deleted since is an orphan
            assert line["index"] == f"{world.prefix}_datasetindex_v2" and line["behind"] >= behind
            assert line["entity_type"] == "dataset" and "after-restore" in line["repair"]
        assert wanted <= kinds, kinds
        replay = rebuild(
            world.settings(), RebuildRequest("replay", findings=before.findings, state_dir=tmp_path)
        )
        assert replay.elsewhere.get(RepairKind.DELETE_DOCUMENT.value) and replay.elsewhere.get(
            RepairKind.REWRITE_DOCUMENT.value
        ), "the plan must send orphans and leftovers to reindex"
        outcome = rebuild(world.settings(), request("reindex", before, tmp_path))
        after = world.scan()
    finally:
        world.close()
    assert not outcome.failed and not outcome.still_wrong, [str(c) for c in outcome.still_wrong][:5]
    assert outcome.counts.get("deleted", 0) >= 1 and outcome.exit_code == 0
    assert not diverged(after) and after.exit_code == 0, [str(c) for c in after.findings][:5]


@pytest.mark.integration
def test_a_replay_killed_mid_run_resumes_with_no_gap(tmp_path: Path) -> None:
    world = World("mariadb", "opensearch", tmp_path, n=120)
    try:
        lose_index_writes(world, 30)
        before = world.scan()
        assert sum(diverged(before).values()) >= 30  # stale fields (or, 30 in one index, behind a restore)
        args, env = rebuild_cli(
            world, tmp_path, "replay", "--all", "--rate", "40", "--batch-size", "20", "--wait", "60"
        )
        first = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_for_checkpoint(tmp_path, lambda ck: ck["counts"].get("produced", 0) >= 20, run=first)
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        checkpoints = list(tmp_path.glob("rebuild-*.json"))
        assert checkpoints, "a killed replay leaves its checkpoint"
        killed = json.loads(checkpoints[0].read_text())
        assert killed["last_urn"] and not killed["done"] and killed["counts"]["produced"] >= 20
        refused = subprocess.run([*args, "--resume"], cwd=ROOT, env=env, capture_output=True, text=True)
        assert refused.returncode == 6 and "stale" in refused.stderr, refused.stderr  # the lock
        outcome, after = resumed_clean(world, args, env)
    finally:
        world.close()
    # resumed after the last confirmed batch: every row produced once (plus what the guard redid)
    assert outcome["counts"]["produced"] == outcome["rows"] + outcome["counts"].get("produced_again", 0)
    assert not diverged(after) and after.exit_code == 0, [str(c) for c in after.findings][:5]


@pytest.mark.integration
def test_a_reindex_killed_mid_run_resumes_with_no_gap(tmp_path: Path) -> None:
    """Killed while a batch is built, the one before it is written and the next one read: the
    resumed run starts after the last batch whose bulk returned, and rebuilds each urn once."""
    world = World("postgres", "elasticsearch", tmp_path, n=120)
    try:
        with world.engine.connect() as conn:
            total = conn.execute(
                text(f"SELECT COUNT(DISTINCT urn) FROM {ASPECT_TABLE} WHERE version = 0")
            ).scalar()
        lose_index_writes(world, 30)
        assert sum(diverged(world.scan()).values()) >= 30
        args, env = rebuild_cli(world, tmp_path, "reindex", "--all", "--rate", "20", "--batch-size", "20")
        first = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_for_checkpoint(tmp_path, lambda ck: ck["counts"].get("entities", 0) >= 20, run=first)
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        killed = json.loads(next(tmp_path.glob("rebuild-*.json")).read_text())  # as the kill left it
        assert killed["last_urn"] and not killed["done"] and killed["counts"]["entities"] < total
        outcome, after = resumed_clean(world, args, env)
    finally:
        world.close()
    # the counts carry over from the checkpoint: every urn rebuilt once over both runs, none skipped
    assert outcome["counts"]["entities"] == total, (outcome["counts"], total, killed["counts"])
    assert not diverged(after) and after.exit_code == 0, [str(c) for c in after.findings][:5]


def resumed_clean(world: World, args: list[str], env: dict[str, str]) -> tuple[dict[str, Any], Report]:
    """A killed repair resumed (its stale lock broken): its outcome, clean and verified, and a scan."""
    resume = [*args, "--resume", "--break-stale-lock"]
    second = subprocess.run(resume, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    outcome = json.loads(second.stdout)
    assert outcome["still_wrong"] == [] and outcome["exit_code"] == 0
    return outcome, world.scan()


def wait_for_checkpoint(
    tmp: Path,
    ready: Callable[[dict[str, Any]], bool],
    run: subprocess.Popen[Any],
    timeout: float = 120,
) -> None:
    """Until `ready` holds for the running repair's checkpoint, and it is not done: the moment to
    kill something mid-run (a fixed sleep is too short on a loaded machine, where the process
    takes seconds to import and plan before its first batch)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if run.poll() is not None:
            raise AssertionError(f"the repair ended (exit {run.returncode}) before the checkpoint got there")
        for path in tmp.glob("rebuild-*.json"):
            try:
                ck = json.loads(path.read_text())
            except ValueError:  # replaced as we read it
                continue
            if ready(ck) and not ck.get("done"):
                return
        time.sleep(0.1)
    raise AssertionError(f"no checkpoint got there within {timeout:.0f}s")


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["replay", "reindex"])
def test_after_a_restore_the_window_is_found_repaired_and_documented(mode: str, tmp_path: Path) -> None:
    from auditor.api import after_restore
    from auditor.reports.evidence import to_markdown

    world = World("postgres", "opensearch", tmp_path)
    try:
        behind = restore_snapshot(world)  # 12 datasets written after the snapshot the index returns to
        time.sleep(10.5)  # older than the scan's settle time: their MCLs were long produced
        evidence = after_restore(world.settings(), mode=mode, apply=True, wait_seconds=60)
    finally:
        world.close()
    index = f"{world.prefix}_datasetindex_v2"
    assert evidence.behind.get(index, 0) >= len(behind), evidence.behind
    assert evidence.since is not None and evidence.outcome is not None and evidence.outcome.applied
    assert not evidence.outcome.still_wrong and not evidence.outcome.failed
    assert evidence.final_exit_code == 0, evidence.final_counts
    assert "store_version" in evidence.sources and "search_version" in evidence.sources
    text = to_markdown(evidence)
    assert "entities behind the restore" in text and "exit code 0" in text


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["replay", "reindex"])
def test_writes_that_land_during_a_repair_are_not_undone(mode: str, tmp_path: Path) -> None:
    from load import LiveLoad

    world = World("mariadb", "opensearch", tmp_path, n=120)
    try:
        lose_index_writes(world, 20)
        with LiveLoad(world, rate=15) as load:  # GMS keeps writing the same entities meanwhile
            selection = Selection(entity_types=("dataset", "chart", "dashboard", "dataJob"))
            # throttled so the repair lasts a few seconds whatever its speed: the load overlaps it
            rate = 150.0 if mode == "replay" else 25.0
            request = RebuildRequest(
                mode,
                selection=selection,
                apply=True,
                batch=25,
                wait_seconds=60,
                state_dir=tmp_path,
                rate=rate,
            )
            outcome = rebuild(world.settings(), request)
        assert load.stats.writes > 20 and load.stats.errors == 0
        assert world.consumer.drain(180)  # the replay and the load together: minutes on a loaded machine
        after = world.scan()
    finally:
        world.close()
    assert not outcome.failed and not outcome.still_wrong, [str(c) for c in outcome.still_wrong][:5]
    # the newest value of every entity the load wrote is what the index holds
    assert not diverged(after) and after.exit_code == 0, [str(c) for c in after.findings][:5]


@pytest.mark.integration
@pytest.mark.parametrize("pair", ["mariadb/opensearch", "postgres/elasticsearch"])
def test_a_full_rebuild_swaps_in_a_verified_index_while_the_consumer_writes(
    pair: str, tmp_path: Path
) -> None:
    from load import LiveLoad

    from auditor.backends.connect import open_search
    from auditor.backends.index_writer import IndexWriter

    world = World(*pair.split("/"), tmp_path, n=100)
    live = f"{world.prefix}_datasetindex_v2"
    try:
        broken = stale_field(world)
        selection = Selection(entity_types=("dataset",))
        with LiveLoad(world, rate=10, exclude=broken) as load:
            concrete = RebuildRequest(
                "reindex", selection=selection, apply=True, full=True, state_dir=tmp_path
            )
            with pytest.raises(Exception, match="concrete index"):  # the first swap removes it: asked
                rebuild(world.settings(), concrete)
            first = rebuild(
                world.settings(),
                RebuildRequest(
                    "reindex",
                    selection=selection,
                    apply=True,
                    full=True,
                    replace_concrete=True,
                    state_dir=tmp_path,
                ),
            )
            writer = IndexWriter(open_search(world.settings()))
            (fresh,), is_alias = writer.concrete(live)
            assert is_alias and fresh.startswith(f"{live}_")
            second = rebuild(
                world.settings(),
                RebuildRequest("reindex", selection=selection, apply=True, full=True, state_dir=tmp_path),
            )
            (newer,), _ = writer.concrete(live)
            kept = writer.concrete(fresh)[0]
        assert load.stats.writes > 10 and load.stats.errors == 0
        assert world.consumer.drain(60)
        after = world.scan()
    finally:
        world.close()
    assert newer != fresh and kept == [fresh], "the old index is kept after an alias swap"
    assert any("is kept" in n for n in second.notes) and any("->" in n for n in first.notes)
    assert first.exit_code == 0 and second.exit_code == 0
    # the stale doc was rewritten, and nothing the live consumer wrote during the rebuild was lost
    assert not diverged(after) and after.exit_code == 0, [str(c) for c in after.findings][:5]


def _service_pid(name: str) -> int:
    status = subprocess.run([str(ROOT / "sandbox" / "stack"), "status"], capture_output=True, text=True)
    line = next(line for line in status.stdout.splitlines() if line.startswith(name))
    return int(line.split("pid")[1].split()[0])


def _kill_service(name: str) -> None:
    """SIGKILL a service of the stack and wait until it is gone: a `stack up` right after the
    signal found its port still held by the dying process and refused to start it."""
    pid = _service_pid(name)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"{name} (pid {pid}) still alive 60 s after SIGKILL")


@pytest.mark.integration
@pytest.mark.alone  # kills the OpenSearch node
def test_a_search_node_lost_mid_reindex_stops_it_cleanly_and_it_resumes(tmp_path: Path) -> None:
    world = World("mariadb", "opensearch", tmp_path, n=120)
    try:
        lose_index_writes(world, 30)
        args, env = rebuild_cli(
            world, tmp_path, "reindex", "--entity-type", "dataset", "--rate", "4", "--batch-size", "5"
        )
        run = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        wait_for_checkpoint(tmp_path, lambda ck: ck["counts"].get("entities", 0) >= 5, run=run)
        _kill_service("opensearch")  # the search node dies mid-run
        _, stderr = run.communicate(timeout=300)
        assert run.returncode == 3, stderr  # could not complete: not a report that looks done
        assert "search cluster" in stderr, stderr
        (checkpoint,) = tmp_path.glob("rebuild-*.json")
        kept = json.loads(checkpoint.read_text())
        assert kept["last_urn"] and not kept["done"]
        subprocess.run([str(ROOT / "sandbox" / "stack"), "up"], check=True, capture_output=True, timeout=300)
        world.search.refresh(f"{world.prefix}_datasetindex_v2")
        resumed = subprocess.run(
            [*args, "--resume"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
        after = world.scan()
    finally:
        if subprocess.run([str(ROOT / "sandbox" / "stack"), "status"], capture_output=True).returncode:
            subprocess.run([str(ROOT / "sandbox" / "stack"), "up"], capture_output=True, timeout=300)
        world.close()
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert json.loads(resumed.stdout)["still_wrong"] == []
    assert not diverged(after) and after.exit_code == 0, [str(c) for c in after.findings][:5]


@pytest.mark.integration
@pytest.mark.alone  # kills the broker
def test_a_broker_restarted_mid_replay_loses_no_message(tmp_path: Path) -> None:
    world = World("postgres", "opensearch", tmp_path, n=120)
    try:
        lose_index_writes(world, 30)
        replay = ("replay", "--entity-type", "dataset", "--rate", "60", "--batch-size", "20", "--wait", "120")
        args, env = rebuild_cli(world, tmp_path, *replay)
        run = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        wait_for_checkpoint(tmp_path, lambda ck: ck["counts"].get("produced", 0) >= 20, run=run)
        _kill_service("kafka")  # the broker dies mid-replay, then comes back
        up = subprocess.run(
            [str(ROOT / "sandbox" / "stack"), "up"], capture_output=True, text=True, timeout=300
        )
        assert up.returncode == 0, "the stack did not come back: " + up.stdout[-3000:] + up.stderr[-3000:]
        stdout, stderr = run.communicate(timeout=600)
        if run.returncode == 3:  # it could not complete: the checkpoint resumes it
            assert "Kafka" in stderr, stderr
            done = subprocess.run(
                [*args, "--resume"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
            )
            stdout, stderr, code = done.stdout, done.stderr, done.returncode
        else:
            code = run.returncode
        assert code == 0, stdout[-2000:] + stderr[-3000:]  # a failure says why (a crash: its stacks)
        assert world.consumer.drain(120)
        after = world.scan()
    finally:
        if subprocess.run([str(ROOT / "sandbox" / "stack"), "status"], capture_output=True).returncode:
            subprocess.run([str(ROOT / "sandbox" / "stack"), "up"], capture_output=True, timeout=300)
        world.close()
    outcome = json.loads(stdout)
    assert outcome["failed"] == [] and outcome["still_wrong"] == []  # nothing lost or unreported
    assert outcome["counts"]["produced"] >= outcome["rows"]
    assert not diverged(after) and after.exit_code == 0, [str(c) for c in after.findings][:5]


def block_writes(world: World, index: str, block: str, on: bool) -> None:
    """`index.blocks.<block>` set (the cluster then refuses every write: cluster_block_exception),
    or lifted."""
    settings = {"index": {f"blocks.{block}": True if on else None}}
    indices = world.search.client.indices
    if world.search.flavor == "opensearch":
        indices.put_settings(index=index, body=settings)
    else:
        indices.put_settings(index=index, settings=settings)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("pair", "block"),
    [("postgres/opensearch", "read_only"), ("mariadb/elasticsearch", "read_only_allow_delete")],
)
def test_writes_to_a_read_only_index_are_refused_once_with_the_reason_and_the_index(
    pair: str, block: str, tmp_path: Path
) -> None:
    world = World(*pair.split("/"), tmp_path, n=30)
    index = entity_index("dataset", world.prefix)
    try:
        block_writes(world, index, block, True)
        args, env = rebuild_cli(world, tmp_path, "reindex", "--entity-type", "dataset")
        began = time.monotonic()
        done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        took = time.monotonic() - began
    finally:
        block_writes(world, index, block, False)
        world.close()
    said = json_error(done.stdout, 3)
    assert "cluster_block_exception" in said["error"] and index in said["error"], said
    assert said["error"].count("cluster_block_exception") == 1 and "write failed" not in done.stdout, said
    assert "index.blocks" in said["hint"] and took < 120, (said, took)  # no retries of a 429 block


def reindex_urns(world: World, urns: list[str], tmp: Path) -> Any:
    """`rebuild reindex` of these urns, applied, through the API."""
    request = RebuildRequest("reindex", selection=Selection(urns=tuple(urns)), apply=True, state_dir=tmp)
    return rebuild(world.settings(), request)


@pytest.mark.integration
@pytest.mark.parametrize("pair", ["postgres/elasticsearch", "mariadb/opensearch"])
def test_a_reindex_deletes_what_the_rows_no_longer_imply_and_nothing_else(pair: str, tmp_path: Path) -> None:
    """Left behind by a consumer: an edge the rows no longer imply, the system-metadata doc of an
    aspect gone from the rows. A reindex of the entity and its batch neighbours deletes those two
    and keeps every doc the rows imply, and the edges of a type it does not compare."""
    from sandbox.naming import edge_doc_id, graph_index, system_metadata_doc_id, system_metadata_index

    world = World(*pair.split("/"), tmp_path)
    try:
        urns = _datasets(world, 4)
        target, other = urns[0], urns[1]
        graph, sysmeta = graph_index(world.prefix), system_metadata_index(world.prefix)
        held = {e.urn: dict(e.aspects) for e in world.of_type("dataset")}[target]
        aspect = next(
            a for a in ("institutionalMemory", "deprecation", "datasetDeprecation") if a not in held
        )

        def edge(kind: str) -> dict[str, Any]:
            return {
                "source": {"urn": target, "entityType": "dataset"},
                "destination": {"urn": other, "entityType": "dataset"},
                "relationshipType": kind,
            }

        stale_edge, foreign_edge = (
            edge_doc_id(target, "DownstreamOf", other),
            edge_doc_id(target, "Consumes", other),
        )
        stale_meta = system_metadata_doc_id(target, aspect)
        world.search.put(graph, stale_edge, edge("DownstreamOf"))
        world.search.put(graph, foreign_edge, edge("Consumes"))
        world.search.put(sysmeta, stale_meta, {"urn": target, "aspect": aspect, "runId": "left-behind"})

        def stored() -> tuple[set[str], set[str]]:
            edges = {i for i, _ in world.search.scan(graph, {"terms": {"source.urn": urns}})}
            return edges, {i for i, _ in world.search.scan(sysmeta, {"terms": {"urn": urns}})}

        edges_before, meta_before = stored()
        assert {stale_edge, foreign_edge} <= edges_before and stale_meta in meta_before
        assert len(meta_before) > len(urns)  # the neighbours' own docs are there to be kept
        outcome = reindex_urns(world, urns, tmp_path)
        edges_after, meta_after = stored()
    finally:
        world.close()
    assert not outcome.failed and not outcome.still_wrong and outcome.exit_code == 0
    assert stale_edge not in edges_after and stale_meta not in meta_after
    assert edges_after == edges_before - {stale_edge}, edges_before ^ edges_after
    assert meta_after == meta_before - {stale_meta}, meta_before ^ meta_after


@pytest.mark.integration
@pytest.mark.parametrize("pair", ["postgres/elasticsearch", "mariadb/opensearch"])
def test_a_doc_the_consumer_writes_while_a_reindex_holds_it_is_not_written_over(
    pair: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The consumer writes a dataset's doc (a newer profile's row count) after the reindex read it
    and before its bulk: the engine refuses the reindex's conditional write (409), the reindex reads
    the doc again and writes it with the consumer's value kept."""
    from auditor.backends.search import SearchIndex
    from sandbox.naming import entity_doc_id, entity_index

    world = World(*pair.split("/"), tmp_path)
    try:
        urns = _datasets(world, 3)
        target, index = urns[1], entity_index("dataset", world.prefix)
        read, wrote = SearchIndex.get_versioned, []

        def then_the_consumer_writes(self: SearchIndex, name: str, ids: Any) -> Any:
            found = read(self, name, ids)
            if not wrote and entity_doc_id(target) in ids:
                world.search.upsert(index, entity_doc_id(target), {"rowCount": 4242})
                wrote.append(target)
            return found

        monkeypatch.setattr(SearchIndex, "get_versioned", then_the_consumer_writes)
        outcome = reindex_urns(world, urns, tmp_path)
        doc = world.search.get(index, entity_doc_id(target))
    finally:
        world.close()
    assert wrote and doc is not None and doc.get("rowCount") == 4242, doc
    assert outcome.counts.get("changed_since_read") == 1, outcome.counts
    assert not outcome.failed and not outcome.still_wrong and outcome.exit_code == 0


@pytest.mark.integration
@pytest.mark.parametrize("pair", ["postgres/opensearch", "mariadb/elasticsearch"])
def test_a_plugins_field_survives_a_reindex_and_a_malformed_row_holds_no_full_rebuild(
    pair: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A custom model plugin's aspect (`acmeTeamInfo`, unknown to the registry) and the field its
    consumer indexed (`acmeTeam`), beside a stale name, and another dataset whose row is malformed.
    A targeted reindex fixes the name and keeps `acmeTeam` (named as kept unchecked); `--full`
    promotes despite the malformed row (reported invalid, exit 1), keeps `acmeTeam` and the
    malformed entity's document (left out when asked), and leaves no staged index behind,
    promoted or refused."""
    from faults import malformed_json

    from auditor.rebuild.datahub.documents import KEPT
    from auditor.rebuild.datahub.full import DataHubStage
    from auditor.rebuild.staged import NotPromoted
    from sandbox.naming import entity_doc_id, entity_index

    world = World(*pair.split("/"), tmp_path, n=30)
    index = entity_index("dataset", world.prefix)
    try:
        (bad,) = malformed_json(world)
        target = next(
            e.urn
            for e in world.of_type("dataset")
            if dict(e.aspects).get("datasetProperties") and e.urn != bad
        )
        world.writer.write(target, "acmeTeamInfo", {"team": "platform-infra"}, drop_mcl=True)
        world.search.upsert(index, entity_doc_id(target), {"acmeTeam": "platform-infra", "name": "stale"})
        before = world.scan()
        assert {(c.finding.urn, c.verdict) for c in before.findings} >= {
            (target, Verdict.DIVERGED),
            (bad, Verdict.INVALID),
        }
        targeted = reindex_urns(world, [target], tmp_path)
        world.refresh()
        doc = world.search.get(index, entity_doc_id(target))
        assert doc is not None and doc["acmeTeam"] == "platform-infra" and doc["name"] != "stale", doc
        assert targeted.counts.get(KEPT + "acmeTeam") == 1 and targeted.exit_code == 0, targeted
        assert any("acmeTeam (1 entity)" in n for n in targeted.notes), targeted.notes
        selection = Selection(entity_types=("dataset",))

        def full_rebuild(**more: Any) -> Any:
            request = RebuildRequest(
                "reindex", selection=selection, apply=True, full=True, state_dir=tmp_path
            )
            return rebuild(world.settings(), dataclasses.replace(request, **more))

        full = full_rebuild(replace_concrete=True)
        found = world.search.client.indices.get_alias(name=index)
        (fresh,) = found.body if hasattr(found, "body") else found  # the alias, on the one promoted
        staged = set(world.search.list_indices(f"{index}*"))
        world.refresh()
        kept, carried = (
            world.search.get(index, entity_doc_id(target)),
            world.search.get(index, entity_doc_id(bad)),
        )
        # asked, the next --full leaves the malformed row's document out (the row still reported)
        left = full_rebuild(leave_out_invalid=True)
        world.refresh()
        gone, served = (
            world.search.get(index, entity_doc_id(bad)),
            set(world.search.list_indices(f"{index}*")),
        )
        # a check that never passes: refused, and its staged index deleted all the same
        monkeypatch.setattr(DataHubStage, "still_wrong", lambda self, index, before: [target])
        with pytest.raises(NotPromoted, match="the same ones after every rewrite"):
            full_rebuild()
        after_refused = set(world.search.list_indices(f"{index}*"))
    finally:
        world.close()
    assert full.exit_code == 1 and [(c.finding.urn, c.verdict) for c in full.still_wrong] == [
        (bad, Verdict.INVALID)
    ], full.still_wrong
    # the promoted index, and the copy of the concrete one its swap removed (kept for the undo)
    (copy,) = {i for i in staged if i.startswith(f"{index}_kept-")}
    assert staged == {fresh, copy} and after_refused == served and fresh in served, (
        staged,
        served,
        after_refused,
    )
    assert gone is None and left.exit_code == 1 and [c.finding.urn for c in left.still_wrong] == [bad]
    assert any("left out" in n for n in left.notes), left.notes
    assert (
        kept is not None and kept["acmeTeam"] == "platform-infra" and full.counts.get(KEPT + "acmeTeam") == 1
    )
    assert carried is not None and carried["urn"] == bad
