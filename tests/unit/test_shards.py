"""Shard plans (pure logic): bounds that balance rows, never a urn PAD SPACE orders apart, a
plan file checked on load, ranges in both query languages, merges that tile."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.backends.search import urn_filter
from auditor.core import absence
from auditor.core.model import Report, Selection
from auditor.errors import ConfigError
from auditor.scan.shards import ShardPlan, plan_bounds, usable_bound
from reports.merge import merge


def weights(n: int, skew: bool = False) -> list[tuple[str, int]]:
    """n entities in urn order: most datasets (as catalogs are), a few with many aspects."""
    out = []
    for i in range(n):
        kind = "dataset" if (not skew or i % 10) else "chart"
        out.append((f"urn:li:{kind}:{i:07d}", 40 if skew and i % 97 == 0 else 5))
    return sorted(out)


@pytest.mark.parametrize("n", [1, 2, 4, 16])
@pytest.mark.parametrize("skew", [False, True])
def test_shards_hold_about_equal_rows(n: int, skew: bool) -> None:
    w = weights(20_000, skew)
    total = sum(r for _, r in w)
    bounds, rows, entities = plan_bounds(w, n, total)
    assert len(bounds) == n - 1 and bounds == sorted(set(bounds))
    assert sum(rows) == total and sum(entities) == len(w)
    assert max(rows) <= 1.2 * min(rows), rows  # the 20%
    # every urn falls in exactly the shard the plan's ranges say
    plan = ShardPlan(n, bounds, rows, entities)
    counted = [0] * n
    for urn, r in w:
        (i,) = [i for i in range(n) if Selection(urn_range=plan.urn_range(i)).in_shard(urn)]
        counted[i] += r
    assert counted == rows


def test_a_urn_pad_space_orders_apart_never_starts_a_shard() -> None:
    w = [("urn:li:tag:a", 1), ("urn:li:tag:b\t", 1), ("urn:li:tag:c ", 1), ("urn:li:tag:d", 1)]
    bounds, rows, _ = plan_bounds(w, 3, 4)
    assert all(usable_bound(b) for b in bounds) and bounds == ["urn:li:tag:d"]  # fewer than asked
    assert rows == [3, 1, 0]


@settings(max_examples=200)
@given(
    st.lists(st.tuples(st.text(alphabet="ab \t:", max_size=5), st.integers(1, 9)), max_size=60),
    st.integers(1, 8),
)
def test_the_bounds_increase_and_cover_everything(raw: list[tuple[str, int]], n: int) -> None:
    w = sorted({f"urn:li:tag:{u}": r for u, r in raw}.items())
    total = sum(r for _, r in w)
    bounds, rows, entities = plan_bounds(w, n, total)
    assert bounds == sorted(set(bounds)) and all(usable_bound(b) for b in bounds)
    assert sum(rows) == total and sum(entities) == len(w)


def test_a_plan_file_round_trips_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    plan = ShardPlan(3, ["urn:li:dataset:b", "urn:li:dataset:m"], [1, 1, 1], [1, 1, 1], store="pg")
    path = tmp_path / "shards.json"
    path.write_text(plan.to_json())
    assert ShardPlan.load(path) == plan
    assert plan.urn_range(0) == (None, "urn:li:dataset:b") and plan.urn_range(2) == ("urn:li:dataset:m", None)
    for broken in (
        {**json.loads(plan.to_json()), "bounds": ["urn:li:dataset:m", "urn:li:dataset:b"]},  # decreasing
        {**json.loads(plan.to_json()), "bounds": ["urn:li:dataset:b"]},  # too few
        {**json.loads(plan.to_json()), "bounds": ["urn:li:dataset:b ", "urn:li:dataset:m"]},  # a space
        {**json.loads(plan.to_json()), "kind": "something else"},
        {**json.loads(plan.to_json()), "version": 99},
    ):
        path.write_text(json.dumps(broken))
        with pytest.raises(ConfigError):
            ShardPlan.load(path)


def test_a_range_is_a_range_query_on_the_urn_keyword() -> None:
    query = urn_filter("source.urn", Selection(urn_range=("urn:li:a", "urn:li:b")))
    assert query == {"bool": {"filter": [{"range": {"source.urn": {"gte": "urn:li:a", "lt": "urn:li:b"}}}]}}
    first = urn_filter("urn", Selection(urn_range=(None, "urn:li:b")))
    assert first == {"bool": {"filter": [{"range": {"urn": {"lt": "urn:li:b"}}}]}}


def _shard(i: int, n: int, rng: tuple[str | None, str | None] | None) -> Report:
    return Report(started_at=datetime.now(UTC), scope=Selection(shard=(i, n), urn_range=rng))


def test_a_merge_of_one_plans_shards_is_complete_and_of_two_plans_is_not() -> None:
    tiled = [_shard(0, 2, (None, "urn:m")), _shard(1, 2, ("urn:m", None))]
    assert merge(tiled).complete
    gap = [_shard(0, 2, (None, "urn:m")), _shard(1, 2, ("urn:n", None))]
    merged = merge(gap)
    assert not merged.complete and any("tile" in w for w in merged.warnings)
    mixed = [_shard(0, 2, (None, "urn:m")), _shard(1, 2, None)]
    assert not merge(mixed).complete
    assert merge([_shard(0, 2, None), _shard(1, 2, None)]).complete  # crc32 shards


def _pad_less(a: str, b: str) -> bool:
    """a < b under PAD SPACE (MySQL/MariaDB's utf8mb4_bin): by code point, the shorter padded."""
    width = max(len(a), len(b))
    return a.ljust(width) < b.ljust(width)


@settings(max_examples=2000)
@given(st.text(alphabet="ab \t\x01~", max_size=6), st.text(alphabet="ab \t\x01~", min_size=1, max_size=6))
def test_the_databases_range_holds_every_urn_the_code_point_range_holds(u: str, b: str) -> None:
    """What `urn >= lo[:-1] AND urn < hi` reads under PAD SPACE contains what [lo, hi) holds by
    code point, for every usable bound: the join's exact cut then loses nothing."""
    if not usable_bound(b):
        return
    if u < b:  # shard below b: the database's `urn < b` must read it
        assert _pad_less(u, b), (u, b)
    else:  # shard from b: the database's `urn >= b[:-1]` must read it
        assert not _pad_less(u, b[:-1]), (u, b)


def test_shards_each_naming_a_missing_index_merge_into_one_finding_with_the_counts_added() -> None:
    """Each shard names the missing index with its share of the entities: one finding merged."""
    key = ("tag", "diverged", "missing_index")
    parts = []
    for i, rows in ((0, 2), (1, 3)):
        found = absence.missing_index("datahub", "tag", "tagindex_v2", rows, "and no V3 index", "recreate it")
        part = _shard(i, 2, None)
        part.sources = {"platform": "datahub"}
        part.findings, part.counts = absence.judged(lambda _: False, [found]), {key: 1}
        parts.append(part)
    merged = merge(parts)
    [c] = merged.findings
    assert c.finding.details["entities"] == 5 and "5 tag entities" in c.evidence.reason
    assert merged.counts == {key: 1}
