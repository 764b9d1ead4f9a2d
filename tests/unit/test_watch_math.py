"""The watch's math on plain numbers: quantiles, burn-rate windows, time lag, Burrow's rules."""

from __future__ import annotations

import random

import pytest

from auditor.core.lag_table import CommitWindow, GroupStatus, LagTable
from auditor.core.slo import GOOGLE_30D, BurnRate, BurnWindow, LatencyHistogram, scaled
from auditor.platforms.datahub.watch.ledger import PartitionLedger, Resume, parse_ranges, ranges


def test_quantiles_interpolate_within_buckets_like_prometheus() -> None:
    h = LatencyHistogram((1, 2, 4))
    for v in (0.5, 1.5, 1.5, 3.0):
        h.observe(v)
    # rank 2 of 4 falls in (1, 2] holding 2 events, 1 below: 1 + 1 * (2 - 1) / 2
    assert h.quantile(0.5) == pytest.approx(1.5)
    assert h.quantile(1.0) == pytest.approx(4.0)
    assert h.cumulative() == [(1.0, 1), (2.0, 3), (4.0, 4), (float("inf"), 4)]
    h.observe(100)  # past the last bound: the quantile says "at least the top bound"
    assert h.quantile(0.99) == 4.0
    assert LatencyHistogram().quantile(0.5) is None


def test_quantiles_track_a_known_distribution_within_a_bucket() -> None:
    rng = random.Random(7)
    h = LatencyHistogram()
    values = sorted(rng.uniform(0, 30) for _ in range(20_000))
    for v in values:
        h.observe(v)
    got = {q: h.quantile(q) or 0.0 for q in (0.5, 0.95, 0.99)}
    for q, width in ((0.5, 5), (0.95, 15), (0.99, 15)):
        exact = values[int(q * len(values)) - 1]
        assert abs(got[q] - exact) <= width  # at most one bucket's width off
    assert got[0.5] < got[0.95] <= got[0.99]


def test_burn_rate_is_the_bad_share_over_the_budget() -> None:
    burn = BurnRate(0.99, (BurnWindow("w", "page", 600, 60, 14.4),), bucket_seconds=60)
    for i in range(100):
        burn.record(1000.0 + i, good=i >= 5)  # 5 % bad, all in the minute of 1000..1100
    assert burn.rate(1100.0, 600) == pytest.approx(5.0)  # 0.05 / 0.01
    assert burn.firing(1100.0) == []  # 5x < 14.4x
    burn.record(1100.0, good=False, n=100)
    assert burn.rate(1100.0, 600) == pytest.approx(52.5)
    assert [w.name for w, _, _ in burn.firing(1100.0)] == ["w"]


def test_both_windows_must_exceed_and_old_buckets_fall_out() -> None:
    w = BurnWindow("page-1h", "page", 3600, 300, 14.4)
    burn = BurnRate(0.99, (w,), bucket_seconds=60)
    t0 = 1_000_000.0
    for m in range(30):  # half an hour of errors, then recovery
        burn.record(t0 + m * 60, good=False, n=10)
    for m in range(30, 40):
        burn.record(t0 + m * 60, good=True, n=100)
    now = t0 + 39 * 60
    assert burn.rate(now, 3600) > 14.4  # the long window still burns
    assert burn.rate(now, 300) == 0.0  # the short window recovered: no page
    assert burn.firing(now) == []
    later = t0 + 4 * 3600  # a full lap of the ring later: nothing left
    assert burn.counts(later, 3600) == (0, 0)


def test_google_30d_windows_and_scaling() -> None:
    assert [(w.long_seconds, w.short_seconds, w.factor) for w in GOOGLE_30D] == [
        (3600, 300, 14.4),
        (21600, 1800, 6.0),
        (259200, 21600, 1.0),
    ]
    fast = scaled(GOOGLE_30D, 0.001)
    assert fast[0].long_seconds == pytest.approx(3.6) and fast[0].short_seconds == pytest.approx(0.3)
    ring = BurnRate(0.99, GOOGLE_30D, 60)
    assert ring.slots == 4321  # 3 days of minutes, fixed


def test_lag_table_interpolates_and_extrapolates() -> None:
    t = LagTable(size=60)
    for i in range(10):
        t.add(100 * i, 1000.0 + 10 * i)  # 10 messages a second
    assert t.time_of(450) == pytest.approx(1045.0)
    assert t.time_of(1000) == pytest.approx(1100.0)  # past the newest point: extrapolated
    assert t.time_lag(450, 900, now=1100.0) == pytest.approx(55.0)
    assert t.time_lag(900, 900, now=1100.0) == 0.0
    for i in range(200):
        t.add(1000 + i, 2000.0 + i)
    assert len(t.points) == 60  # bounded


def test_lag_table_keeps_when_a_quiet_log_reached_its_end() -> None:
    t = LagTable()
    t.add(0, 0.0)
    t.add(100, 10.0)
    for s in range(11, 100):
        t.add(100, float(s))  # nothing new for 90 s
    assert len(t.points) <= 3
    assert t.time_of(100) == pytest.approx(10.0)


def window(points: list[tuple[int, int]], members: int = 1) -> CommitWindow:
    w = CommitWindow()
    for i, (offset, lag) in enumerate(points):
        w.add(offset, lag, 100.0 + 5 * i, members)
    return w


def test_burrow_rules() -> None:
    now = 100.0 + 5 * 5
    assert window([(10, 0), (20, 0), (30, 0)]).status(now) == GroupStatus.OK
    assert window([(10, 5), (20, 5), (30, 4)]).status(now) == GroupStatus.OK
    assert window([(10, 5), (10, 8), (10, 9)]).status(now) == GroupStatus.STALL
    assert window([(10, 5), (10, 8), (10, 9)], members=0).status(now) == GroupStatus.STOP
    assert window([(10, 5), (20, 5), (15, 9)]).status(now) == GroupStatus.REWIND
    assert window([(10, 5), (20, 7), (30, 9)]).status(now) == GroupStatus.WARN
    assert window([(10, 3), (10, 0)]).status(now) == GroupStatus.OK  # no lag, nothing to worry


def test_ledger_commits_below_the_first_open_event_and_lists_the_rest() -> None:
    ledger = PartitionLedger()
    for o in range(10, 20):
        ledger.read(o, opened=o in (12, 13, 17))
    assert ledger.commit() == (12, "next=20;open=12-13,17")
    ledger.settle(12)
    ledger.settle(13)
    assert ledger.commit() == (17, "next=20;open=17")
    ledger.settle(17)
    assert ledger.commit() == (20, "next=20")
    resume = Resume.parse(12, "next=20;open=12-13,17")
    assert [o for o in range(10, 25) if resume.skip(o)] == [10, 11, 14, 15, 16, 18, 19]
    assert Resume.parse(5, "written by someone else").skip(5) is False
    assert parse_ranges(ranges([1, 2, 3, 7, 9, 10])) == {1, 2, 3, 7, 9, 10}


def test_ledger_metadata_stays_within_what_a_broker_keeps() -> None:
    ledger = PartitionLedger()
    for o in range(0, 20_000):
        ledger.read(o, opened=o % 2 == 0)  # worst case: nothing consecutive
    offset, metadata = ledger.commit()  # type: ignore[misc]
    assert offset == 0 and len(metadata) <= 3600
    resume = Resume.parse(offset, metadata)
    # what is not listed is below `next` only if settled: nothing open is ever skipped
    assert not any(resume.skip(o) for o in range(0, 20_000, 2))
