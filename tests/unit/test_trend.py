"""The trend of findings across scans: kept per scope in the state file, bounded, merged across
shards run by run, and carried through the JSON report."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from auditor.backends import state as state_module
from auditor.backends.state import ScanState
from auditor.core.model import Report, RunSummary, Selection
from auditor.reports import RENDERERS
from auditor.reports.merge import from_dict, merged_trend
from auditor.scan.finish import scope_key
from auditor.scan.memory import record_trend, trend_key

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def run(minutes: int, diverged: int, code: int = 1) -> RunSummary:
    return RunSummary(T0 + timedelta(minutes=minutes), 100, {"diverged": diverged}, code)


def test_runs_are_kept_per_scope_oldest_first_and_bounded(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(state_module, "RUNS_KEPT", 5)
    state = ScanState(tmp_path / "s.sqlite")
    for m in range(8):
        state.record_run("all", run(m, m))
    state.record_run("tags", run(3, 99))
    kept = state.runs("all")
    assert [r.verdicts["diverged"] for r in kept] == [3, 4, 5, 6, 7]
    assert [r.started_at for r in kept] == sorted(r.started_at for r in kept)
    assert [r.verdicts for r in state.runs("tags")] == [{"diverged": 99}]
    assert len(state.runs("all", limit=2)) == 2
    state.close()
    reader = ScanState(tmp_path / "s.sqlite", read_only=True)
    reader.record_run("all", run(9, 9))  # a triage never writes
    assert len(reader.runs("all")) == 5


def test_a_state_file_from_before_the_trend_reads_as_no_trend(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    sqlite3.connect(path).execute("CREATE TABLE finding (key TEXT)").connection.commit()
    assert ScanState(path, read_only=True).runs("all") == []


def test_narrowed_scans_have_their_own_trend() -> None:
    whole = scope_key(Selection())
    assert scope_key(Selection(entity_types=("tag", "dataset"))) == scope_key(
        Selection(entity_types=("dataset", "tag"))
    )
    assert scope_key(Selection(since=T0)) == scope_key(Selection(since=T0 + timedelta(hours=1)))
    assert len({whole, scope_key(Selection(urn_like="x%")), scope_key(Selection(shard=(0, 4)))}) == 3


def test_record_trend_counts_verdicts_and_reads_back(tmp_path: Path) -> None:
    state = ScanState(tmp_path / "s.sqlite")
    for i in range(3):
        report = Report(started_at=T0 + timedelta(minutes=i), entities={"dataset": 7, "tag": 3})
        report.counts = {
            ("dataset", "diverged", "a"): 2,
            ("tag", "diverged", "b"): i,
            ("tag", "in_flight", "c"): 1,
        }
        record_trend(state, report, None)
    assert [r.verdicts["diverged"] for r in report.trend] == [2, 3, 4]
    assert report.trend[-1] == RunSummary(report.started_at, 10, {"diverged": 4, "in_flight": 1}, 1)
    back = from_dict(json.loads(RENDERERS["json"](report)))
    assert back.trend == report.trend


def test_each_platform_has_its_own_trend_of_a_scope_and_datahubs_key_is_unchanged(tmp_path: Path) -> None:
    state = ScanState(tmp_path / "s.sqlite")
    for name, diverged in ((None, 1), ("openmetadata", 2), ("toy", 3)):
        report = Report(
            started_at=T0, entities={"dataset": 1}, counts={("dataset", "diverged", "x"): diverged}
        )
        record_trend(state, report, name)
        assert [r.verdicts["diverged"] for r in report.trend] == [diverged]
    plain = Report(started_at=T0)
    assert trend_key(plain, None) == scope_key(plain.scope)  # the state files written before
    assert trend_key(plain, "toy") == "platform=toy;" + scope_key(plain.scope)


def test_shards_trends_add_run_by_run_newest_aligned() -> None:
    a = [run(0, 1), run(10, 2), run(20, 3, code=0)]
    b = [run(11, 5, code=4), run(21, 6, code=3)]
    merged = merged_trend([a, b])
    assert [r.verdicts["diverged"] for r in merged] == [7, 9]
    assert [r.exit_code for r in merged] == [1, 3]  # as a report decides: incomplete, diverged, stalled
    assert merged[0].started_at == a[1].started_at and merged[0].entities == 200
    assert merged_trend([a, []]) == []
