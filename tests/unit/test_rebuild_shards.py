"""Sharded repairs' logic: which urns a shard repairs, its lock and checkpoint names, the children
of --workers and the merge of their outcomes (the real stack: tests/scenarios/test_sharded_rebuild.py)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.core.model import Classified, Evidence, Finding, Kind, RepairKind, Selection, Verdict
from auditor.rebuild.checkpoint import Lock, LockHeld, shard_suffix
from auditor.rebuild.datahub.run import repair_plan
from auditor.rebuild.request import RebuildRequest
from auditor.rebuild.workers import run_shards
from auditor.reports.rebuild_merge import merge_outcomes
from auditor.settings import load_settings

URNS = [f"urn:li:dataset:(urn:li:dataPlatform:hive,t{i:02d},PROD)" for i in range(40)]


def test_a_shard_keeps_exactly_its_range_and_the_shards_cover_every_urn_once() -> None:
    bounds = [URNS[10], URNS[25]]
    ranges = [(None, bounds[0]), (bounds[0], bounds[1]), (bounds[1], None)]
    owners = []
    for urn in URNS:
        owners.append(
            [
                i
                for i, r in enumerate(ranges)
                if RebuildRequest("replay", shard=(i, 3), urn_range=r).in_shard(urn)
            ]
        )
    assert all(len(o) == 1 for o in owners)
    picked = RebuildRequest("replay", shard=(1, 3), urn_range=ranges[1]).sharded(Selection(urns=tuple(URNS)))
    assert picked.urns == tuple(URNS[10:25]) and picked.urn_range == ranges[1] and picked.shard == (1, 3)


def test_without_a_plan_a_shard_is_the_crc32_residue_as_in_the_scan() -> None:
    seen = [
        u
        for i in range(4)
        for u in RebuildRequest("reindex", shard=(i, 4)).sharded(Selection(urns=tuple(URNS))).urns
    ]
    assert sorted(seen) == sorted(URNS)  # each urn in exactly one shard
    assert RebuildRequest("reindex").sharded(Selection(urns=tuple(URNS))).urns == tuple(URNS)


def _diverged(urn: str, restored: bool = False) -> Classified:
    finding = Finding(
        check="index.stale-fields",
        kind=Kind.STALE_FIELDS,
        urn=urn,
        entity_type="dataset",
        index="datasetindex_v2",
        repairs=(RepairKind.REPLAY_ASPECT,),
        aspect="globalTags",
    )
    subkind = "index_behind_restore" if restored else "stale_fields"
    return Classified(finding, Verdict.DIVERGED, subkind, Evidence("test"))


def test_a_shard_plans_its_own_urns_and_every_shard_walks_a_window() -> None:
    findings = [_diverged(u) for u in URNS] + [_diverged(URNS[0], restored=True)]
    bounds = (URNS[20], None)
    request = RebuildRequest("replay", findings=findings, shard=(1, 2), urn_range=bounds)
    repairs = repair_plan(request)
    assert {a.urn for a in repairs.of(RepairKind.REPLAY_ASPECT)} == set(URNS[20:])
    assert len(repairs.of(RepairKind.REPLAY_WINDOW)) == 1  # no urn: walked over the shard's range


def test_shard_locks_run_side_by_side_and_exclude_the_whole_target(tmp_path: Path) -> None:
    assert shard_suffix((2, 4)) == "-shard2of4" and shard_suffix(None) == ""
    first, second = Lock(tmp_path, "k", (0, 2)), Lock(tmp_path, "k", (1, 2))
    first.acquire()
    second.acquire()  # another shard of the same target: runs beside it
    assert first.path.name == "rebuild-k-shard0of2.lock"
    with pytest.raises(LockHeld, match="exclude each other"):
        Lock(tmp_path, "k").acquire()
    with pytest.raises(LockHeld):
        Lock(tmp_path, "k", (0, 2)).acquire()  # the same shard twice
    first.release()
    second.release()
    whole = Lock(tmp_path, "k")
    whole.acquire()
    with pytest.raises(LockHeld, match="exclude each other"):
        Lock(tmp_path, "k", (1, 2)).acquire()
    whole.release()


def test_a_dead_runs_lock_of_another_shard_does_not_block(tmp_path: Path) -> None:
    (tmp_path / "rebuild-k.lock").write_text(json.dumps({"pid": 2**22 + 7, "host": os.uname().nodename}))
    shard = Lock(tmp_path, "k", (0, 2))
    shard.acquire()  # the whole-target lock is stale (its process is gone)
    shard.release()


def test_a_shard_child_reads_its_request_on_stdin_and_says_its_error(tmp_path: Path) -> None:
    """`api.rebuild_in_shards` gives each child its settings and request on stdin (pickled: the
    settings hold credentials, so nothing on a command line); a refusal is its one error line."""
    settings = load_settings(env={}, store_url="mysql+pymysql://u:secret-pw@127.0.0.1:1/x")
    federated = Finding(
        "missing_document", Kind.MISSING_DOCUMENT, "urn:li:corpuser:a", "corpuser",
        details={"platform": "datahub"}, stores=("east", "west"),
    )  # fmt: skip
    c = Classified(federated, Verdict.DIVERGED, "missing_document", Evidence("x"))
    request = RebuildRequest("reindex", findings=[c], apply=True, shard=(0, 2))
    outcome = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "auditor.shard_child", str(outcome)],
        input=pickle.dumps((settings, request)), capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.decode().splitlines()
    assert lines[-1].startswith("error: the report is of a federation (stores east, west)")
    assert "secret-pw" not in done.stderr.decode() and not outcome.exists()


def test_workers_run_every_shard_and_name_one_that_died(tmp_path: Path) -> None:
    script = (
        "import json, os, signal, sys; i, out = int(sys.argv[1]), sys.argv[2]\n"
        "if i == 2: os.kill(os.getpid(), signal.SIGKILL)\n"
        "if i == 1: print('error: store down', file=sys.stderr); sys.exit(3)\n"
        "json.dump({'mode': 'reindex', 'applied': True, 'rows': 5, 'counts': {'entities': 5}, "
        "'exit_code': 0, 'still_wrong': [], 'failed': [], 'checkpoint': None}, open(out, 'w'))\n"
    )
    results = run_shards(
        lambda i, out: [sys.executable, "-c", script, str(i), str(out)], 4, 2, tmp_path, poll=0.01
    )
    assert [r["shard"] for r in results] == ["0/4", "1/4", "2/4", "3/4"]
    assert [r["exit_code"] for r in results] == [0, 3, 3, 0]
    assert results[1]["error"] == "error: store down" and "signal 9" in results[2]["error"]
    merged = merge_outcomes(results, 4)
    assert merged["exit_code"] == 3 and merged["counts"] == {"entities": 10} and merged["rows"] == 10


def test_the_merge_sums_and_takes_the_worst_exit_code() -> None:
    def part(i: int, code: int, **more: object) -> dict[str, object]:
        base = {"shard": f"{i}/3", "mode": "replay", "applied": True, "exit_code": code, "rows": 10,
                "counts": {"produced": 10}, "still_wrong": [], "failed": [], "verified_urns": 4,
                "consumer_caught_up": True}  # fmt: skip
        return {**base, **more}

    clean = merge_outcomes([part(0, 0), part(1, 0), part(2, 0)], 3)
    assert clean["exit_code"] == 0 and clean["counts"] == {"produced": 30} and clean["verified_urns"] == 12
    wrong = merge_outcomes([part(0, 0), part(1, 1, still_wrong=[{"urn": "u", "subkind": "stale_fields"}])], 3)
    assert wrong["exit_code"] == 3 and wrong["missing_shards"] == ["2/3"]  # a shard missing: incomplete
    assert merge_outcomes([part(0, 0), part(1, 1), part(2, 0)], 3)["exit_code"] == 1
    locked = {"shard": "2/3", "exit_code": 6, "error": "error: a repair of this target is running"}
    assert merge_outcomes([part(0, 1), part(1, 0), locked], 3)["exit_code"] == 6  # not max(): 6 > 3
    assert merge_outcomes([part(0, 3), part(1, 6), part(2, 2)], 3)["exit_code"] == 3
    assert merge_outcomes([part(0, 0, consumer_caught_up=False)])["consumer_caught_up"] is False


def test_a_lock_naming_this_process_that_it_does_not_hold_is_stale(tmp_path: Path) -> None:
    """A retried Indexed Job pod keeps its hostname and may get the lost run's pid for itself."""
    lock = Lock(tmp_path, "k", (3, 4))
    lock.path.write_text(json.dumps({"pid": os.getpid(), "host": os.uname().nodename}))
    assert lock.stale()
    with pytest.raises(LockHeld, match="stale"):
        lock.acquire()
    lock.acquire(break_stale=True)
    assert not lock.stale()  # now it is this process's own
    lock.release()


@pytest.mark.parametrize(
    ("given", "asked", "said"),
    [
        ({"stores": ["a=postgresql+psycopg://u:pw@h/a", "b=postgresql+psycopg://u:pw@h/b"]}, {},
         "--workers is not supported on a federation"),
        ({}, {"shard": (0, 2)}, "--workers runs every shard itself"),
        ({}, {"full": True}, "--workers shards a targeted replay or reindex (not --full)"),
        ({"platform": "openmetadata"}, {}, "--workers is not supported on OpenMetadata"),
    ],
)  # fmt: skip
def test_the_api_refuses_what_parallel_shards_cannot_do_before_any_backend(
    tmp_path: Path, given: dict[str, object], asked: dict[str, object], said: str
) -> None:
    from auditor.api import rebuild_in_shards
    from auditor.errors import ConfigError

    store = {} if "stores" in given else {"store_url": "mysql+pymysql://u:pw@127.0.0.1:1/x"}
    settings = load_settings(env={}, state_file=str(tmp_path / "s.db"), **store, **given)
    request = RebuildRequest("reindex", selection=Selection(entity_types=("dataset",)), apply=True, **asked)
    with pytest.raises(ConfigError) as refused:
        rebuild_in_shards(settings, request, 2)  # type: ignore[arg-type]
    assert str(refused.value) == said
    assert not list(tmp_path.iterdir())  # no plan written, no shard started


def test_after_restore_refuses_a_federation_before_any_backend(tmp_path: Path) -> None:
    """The CLI's shared connection options give after-restore --store too: one table's last
    write is its window, so a federation is refused (a usage error), not half-read."""
    from auditor.api import after_restore
    from auditor.errors import ConfigError

    stores = ["a=postgresql+psycopg://u:pw@127.0.0.1:1/a", "b=postgresql+psycopg://u:pw@127.0.0.1:1/b"]
    settings = load_settings(env={}, state_file=str(tmp_path / "s.db"), stores=stores)
    with pytest.raises(ConfigError, match="rebuild after-restore is not supported on a federation"):
        after_restore(settings)
