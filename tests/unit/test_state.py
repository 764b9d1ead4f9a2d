"""The state file: findings remembered across scans, forgotten when they converge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from auditor.backends.state import ScanState
from auditor.core.model import Finding, Kind
from auditor.core.records import OffsetSample

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def f(urn: str, etype: str = "dataset") -> Finding:
    return Finding("index.missing-document", Kind.MISSING_DOCUMENT, urn, etype, "i", None, T0)


def test_history_counts_scans_and_forgets_converged(tmp_path) -> None:
    state = ScanState(tmp_path / "s.sqlite")
    a, b, tag = f("urn:li:dataset:a"), f("urn:li:dataset:b"), f("urn:li:tag:t", "tag")
    state.record_findings([a, b, tag], T0, ())
    state.record_findings([a], T0 + timedelta(minutes=5), ("dataset",))
    seen = state.history([a.key, b.key, tag.key])
    assert seen[a.key].times_seen == 2 and seen[a.key].first_seen == T0
    assert b.key not in seen  # converged: forgotten
    assert tag.key in seen  # another type: not in the scope, kept
    state.record_findings([], T0 + timedelta(minutes=9), ("dataset",), forget_unseen=False)
    assert a.key in state.history([a.key])  # a narrowed scan (--since) forgets nothing
    state.close()
    again = ScanState(tmp_path / "s.sqlite")
    assert again.history([a.key])[a.key].times_seen == 2


def test_offset_samples_round_trip() -> None:
    state = ScanState(None)
    sample = OffsetSample("t", 1, 5, 0, 9, 1, 100.0, "m")
    state.record_samples("g", [sample])
    got = state.previous_samples("g")[("t", 1)]
    assert (got.committed, got.end, got.members) == (5, 9, 1)


def test_a_read_only_state_reads_what_a_scan_wrote_and_writes_nothing(tmp_path) -> None:
    path = tmp_path / "s.sqlite"
    state = ScanState(path)
    a = f("urn:li:dataset:a")
    state.record_findings([a], T0, ())
    state.record_samples("g", [OffsetSample("t", 0, 5, 0, 9, 1, 100.0)])
    state.close()
    before = path.read_bytes()
    ro = ScanState(path, read_only=True)
    assert ro.history([a.key])[a.key].times_seen == 1
    assert ro.previous_samples("g")[("t", 0)].committed == 5
    ro.record_findings([a, f("urn:li:dataset:b")], T0 + timedelta(minutes=1), ())
    ro.record_samples("g", [OffsetSample("t", 0, 7, 0, 9, 1, 200.0)])
    ro.close()
    assert path.read_bytes() == before
    missing = tmp_path / "none" / "s.sqlite"
    empty = ScanState(missing, read_only=True)
    assert empty.history([a.key]) == {} and empty.previous_samples("g") == {}
    empty.close()
    assert not missing.parent.exists()  # a triage creates no state file
