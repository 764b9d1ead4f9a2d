"""The drill's pure logic: boundaries, bisection over fake sides, thresholds, and the renderers."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from auditor.core.drill import CountDiff, DrillResult, RowChange, RowDiff, Thresholds
from auditor.drill.bisect import BisectOptions, boundaries, diff_table, segments_of, usable_bound
from auditor.drill.spec import strip_length
from auditor.platforms.datahub.drill import METADATA_ASPECT_V2
from auditor.reports import drill_report

Key = tuple[str, str, int]


@dataclass(frozen=True)
class Sum:
    count: int
    total: int


class FakeSide:
    """A table in memory: (urn, aspect, version) -> metadata; ranges compared as code points."""

    def __init__(self, role: str, rows: dict[Key, str], indexed: bool = True) -> None:
        self.role = role
        self.rows = rows
        self.indexed = indexed
        self.checksummed: list[tuple[str | None, str | None]] = []

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        f: Future[Any] = Future()
        f.set_result(fn(*args))
        return f

    def _in(self, lo: str | None, hi: str | None) -> dict[Key, str]:
        return {
            k: v for k, v in self.rows.items() if (lo is None or k[0] >= lo) and (hi is None or k[0] < hi)
        }

    @staticmethod
    def _hash(key: Key, value: str) -> str:
        return hashlib.md5(f"{key}|{value}".encode()).hexdigest()

    @staticmethod
    def bucket(urn: str, buckets: int) -> int:  # as the databases compute it: MD5(urn)'s first 16 bits
        return int.from_bytes(hashlib.md5(urn.encode()).digest()[:2], "big") % buckets

    def ranges_use_index(self, spec: Any) -> bool:
        return self.indexed

    def checksums(
        self, spec: Any, lo: str | None, hi: str | None, divisors: Any, buckets: int
    ) -> dict[int, Sum]:
        self.checksummed.append((lo, hi))
        out: dict[int, Sum] = {}
        for k, v in self._in(lo, hi).items():
            b = self.bucket(k[0], buckets)
            c = out.get(b, Sum(0, 0))
            out[b] = Sum(c.count + 1, c.total + int(self._hash(k, v)[:15], 16))
        return out

    def keys_in(self, spec: Any, lo: str | None, hi: str | None) -> list[str]:
        return [k[0] for k in self._in(lo, hi)]

    def sample_keys(self, spec: Any, wanted: int) -> list[str]:
        return sorted(k[0] for k in self.rows)[:: max(len(self.rows) // (wanted or 1), 1)]

    def row_hashes(
        self,
        spec: Any,
        lo: str | None,
        hi: str | None,
        divisors: Any,
        only: tuple[int, ...] = (),
        buckets: int = 1,
    ) -> dict[Key, str]:
        rows = self._in(lo, hi).items()
        return {k: self._hash(k, v) for k, v in rows if not only or self.bucket(k[0], buckets) in only}

    def rows_for(self, spec: Any, keys: list[Key], divisors: Any) -> dict[Key, dict[str, str]]:
        out = {}
        for k in keys:
            if k in self.rows:
                v = self.rows[k]
                out[k] = {
                    "urn": f"{len(k[0])}:{k[0]}",
                    "aspect": k[1],
                    "version": str(k[2]),
                    "metadata": f"{len(v)}:{v}",
                    "systemmetadata": "~",
                    "createdon": "1",
                    "createdby": "x",
                    "createdfor": "~",
                }
        return out


def _table(n: int) -> dict[Key, str]:
    return {(f"urn:li:tag:t{i:05d}", a, 0): f'{{"v":{i}}}' for i in range(n) for a in ("tagKey", "status")}


def test_boundaries_skip_keys_both_engines_cannot_cut_alike() -> None:
    assert not usable_bound("urn:li:tag:a\t") and not usable_bound("urn:li:tag:b ") and not usable_bound("")
    assert usable_bound("urn:li:tag:数据")
    cuts = boundaries(["c", "a\t", "b", "a", "d ", "e", "b"], 3)
    assert cuts == sorted(cuts) and "a\t" not in cuts and "d " not in cuts and len(cuts) == 2
    assert segments_of(["b", "d"]) == [(None, "b"), ("b", "d"), ("d", None)]
    assert segments_of(["a", "b", "d", "f"], "b", "e") == [("b", "d"), ("d", "e")]


def test_identical_tables_check_only_the_first_level() -> None:
    a, b = FakeSide("source", _table(2000)), FakeSide("target", _table(2000))
    diffs, stats = diff_table(
        METADATA_ASPECT_V2, a, b, {}, 4000, BisectOptions(segment_rows=500, threshold=50)
    )
    assert diffs == [] and stats.levels == 1 and stats.leaf_rows == 0
    assert stats.segments == len(b.checksummed) >= 4 and stats.source_rows == stats.target_rows == 4000


def test_bisection_finds_each_difference_and_recurses_only_where_sums_differ() -> None:
    src = _table(3000)
    dst = dict(src)
    dst[("urn:li:tag:t00100", "status", 0)] = '{"v":"changed"}'
    del dst[("urn:li:tag:t01500", "tagKey", 0)]
    dst[("urn:li:tag:t02999x", "status", 0)] = "{}"
    a, b = FakeSide("source", src), FakeSide("target", dst)
    options = BisectOptions(segment_rows=1000, factor=8, threshold=300)
    diffs, stats = diff_table(METADATA_ASPECT_V2, a, b, {}, 6000, options)
    assert [(d.key, d.change, d.columns) for d in diffs] == [
        (("urn:li:tag:t00100", "status", 0), RowChange.CHANGED, ("metadata",)),
        (("urn:li:tag:t01500", "tagKey", 0), RowChange.REMOVED, ()),
        (("urn:li:tag:t02999x", "status", 0), RowChange.ADDED, ()),
    ]
    # the first level's buckets narrow each difference to 1/factor of its segment
    assert stats.levels == 1 and stats.segments == len(b.checksummed)
    assert 0 < stats.leaf_rows <= 3 * 2 * options.threshold  # three buckets' rows, both sides


def test_a_bucket_past_the_threshold_has_its_segment_cut_again() -> None:
    src = _table(3000)
    dst = {k: v + " " if k[0] == "urn:li:tag:t02000" else v for k, v in src.items()}
    a, b = FakeSide("source", src), FakeSide("target", dst)
    options = BisectOptions(segment_rows=3000, factor=4, threshold=40)  # one segment, 4 buckets
    diffs, stats = diff_table(METADATA_ASPECT_V2, a, b, {}, 6000, options)
    assert {d.key for d in diffs} == {("urn:li:tag:t02000", "tagKey", 0), ("urn:li:tag:t02000", "status", 0)}
    assert stats.levels >= 3 and stats.leaf_rows <= 2 * 2 * 40
    # each level below the first cuts only the one differing segment
    assert stats.segments <= 2 + (stats.levels - 1) * options.factor


def test_without_an_index_for_ranges_on_one_side_the_table_is_read_in_one_pass_of_hash_buckets() -> None:
    src = _table(3000)
    dst = {
        k: (v + " " if k[0] in ("urn:li:tag:t00007", "urn:li:tag:t02500") and k[1] == "status" else v)
        for k, v in src.items()
    }
    a, b = FakeSide("source", src), FakeSide("target", dst, indexed=False)
    diffs, stats = diff_table(METADATA_ASPECT_V2, a, b, {}, 6000, BisectOptions(threshold=300))
    assert {d.key for d in diffs} == {("urn:li:tag:t00007", "status", 0), ("urn:li:tag:t02500", "status", 0)}
    assert a.checksummed == b.checksummed == [(None, None)]  # one query each: no range scanned twice
    assert stats.levels == 1 and stats.leaf_rows <= 2 * 2 * 300


def test_thresholds_decide_pass_and_fail() -> None:
    row = RowDiff("metadata_aspect_v2", ("u", "a", 0), RowChange.REMOVED)
    result = DrillResult("s", "t", "now", rows=[row, row], counts=[CountDiff("documents", "x", 10, 13)])
    assert not result.passed and result.row_failures() == {"metadata_aspect_v2": 2}
    result.thresholds = Thresholds(max_row_diffs=2, max_count_delta=3)
    assert result.passed
    result.thresholds = Thresholds(max_row_diffs=2, max_count_delta=3, per_kind={"documents": 2})
    assert not result.passed and [c.name for c in result.count_failures()] == ["x"]
    result.counts.append(CountDiff("documents", "only-source", 5, None))
    result.thresholds = Thresholds(max_row_diffs=2, max_count_delta=100)
    assert [c.name for c in result.count_failures()] == ["only-source"]  # an index missing on one side


@pytest.mark.parametrize(("text", "value"), [("5:hello", "hello"), ("~", None), ("3:a:b", "a:b"), ("0:", "")])
def test_canonical_texts_read_back(text: str, value: str | None) -> None:
    assert strip_length(text) == value


def test_renderers_escape_the_data_and_keep_an_explanation_slot() -> None:
    evil = "urn:li:tag:x\x1b[31m|`*<b>\n"
    result = DrillResult(
        "pg://u:***@h/db",
        "my://u:***@h/db",
        "2026-01-01T00:00:00Z",
        rows=[
            RowDiff(
                "metadata_aspect_v2",
                (evil, "status", 0),
                RowChange.CHANGED,
                ("metadata",),
                {"metadata": "a"},
                {"metadata": "b"},
            )
        ],
        counts=[CountDiff("entities", evil, 1, 2)],
        log=["2026-01-01T00:00:00Z urn " + evil],
    )
    files = drill_report.bundle_files(result)
    assert files["RESULT"] == "FAIL\n"
    assert "\x1b" not in files["summary.md"] and "\n|`*<b>" not in files["summary.md"]
    assert "\x1b" not in files["log.txt"] and files["log.txt"].count("\n") == 1
    differences = json.loads(files["differences.json"])
    assert differences["rows"][0]["key"][0] == evil and differences["rows"][0]["explanation"] == ""
    assert differences["counts"][0]["explanation"] == ""


def test_a_side_is_a_toml_file_or_a_url_and_never_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from auditor.cli.drill_cmd import _side
    from auditor.errors import ConfigError

    monkeypatch.setenv("AUDITOR_STORE_URL", "mysql+pymysql://env:pw@elsewhere/db")
    monkeypatch.setenv("AUDITOR_SEARCH_URL", "http://from-env:9200")
    config = tmp_path / "prod.toml"
    config.write_text(
        '[store]\nurl = "postgresql+psycopg://u:secret@pg/datahub"\n[search]\nurl = "http://os:9200"\n'
    )
    side = _side("source", str(config), None, None, None)
    assert side.describe() == {"store": "postgresql+psycopg://u:***@pg/datahub", "search": "http://os:9200"}
    side = _side("target", "mysql+pymysql://u:pw@maria/datahub", "http://es:9200", "k:9092", "pre")
    assert side.describe() == {
        "store": "mysql+pymysql://u:***@maria/datahub",
        "search": "http://es:9200",
        "kafka": "k:9092",
    }
    assert side.index_prefix == "pre"
    with pytest.raises(ConfigError, match="neither a store URL nor a configuration file"):
        _side("source", str(tmp_path / "missing.toml"), None, None, None)
