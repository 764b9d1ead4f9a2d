"""The scan engine's spill: what goes to disk comes back exactly, in key order, as often as read;
and the engine holds none of the join's findings while it re-reads and judges them."""

from __future__ import annotations

import gc
import random
import weakref
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from auditor.core.model import Finding, Kind, Report, Selection
from auditor.scan import engine, spill
from auditor.scan.engine import Joined, Judging, Parts, Seen
from auditor.scan.spill import Spill
from tests.unit.fakes import FakeState


def test_records_in_order_come_back_as_written_and_can_be_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spill, "BLOCK", 7)
    records = [(f"urn:{i:04}", {"n": i}) for i in range(100)]
    with Spill(lambda r: r[0]) as s:
        s.extend(records)
        assert len(s) == 100 and list(s) == records and list(s) == records
        s.append(("urn:9999", {"n": -1}))  # added after a read: read back too
        assert list(s)[-1] == ("urn:9999", {"n": -1}) and len(list(s)) == 101


def test_records_out_of_order_come_back_sorted_and_stable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spill, "BLOCK", 5)
    monkeypatch.setattr(spill, "RUN", 16)  # many runs, merged when read
    rng = random.Random(7)
    records = [(f"urn:{rng.randrange(30):02}", i) for i in range(200)]
    with Spill(lambda r: r[0]) as s:
        s.extend(records)
        got = list(s)
    assert got == sorted(records, key=lambda r: r[0])  # sorted() is stable: equal keys keep their order
    assert list(Spill[int]()) == []


def test_a_closed_spill_reads_empty_and_leaves_no_file() -> None:
    s = Spill[int]()
    s.extend(range(10_000))
    assert s._file is not None
    name = s._file.name  # an anonymous file: its descriptor, no path
    s.close()
    assert list(s) == [] and len(s) == 0 and isinstance(name, int)


NOW = datetime.now(UTC)


class Payload:
    """Something only one join finding holds (weakly referable)."""


class Spilling(Parts):
    """A join that hands its findings to the engine's sink, then re-reads that check which of
    them are still alive in memory."""

    platform = "t"

    def __init__(self, n: int) -> None:
        self.n = n
        self.refs: list[weakref.ref[Payload]] = []
        self.alive_when_reread: int | None = None
        self.batches = 0

    def join(self, selection: Selection, progress: Any = None, sink: Any = None) -> Joined:
        for i in range(self.n):
            held = Payload()
            self.refs.append(weakref.ref(held))
            sink.append(Finding("t.check", Kind.MISSING_DOCUMENT, f"urn:{i:05}", "thing", "things", None,
                                NOW, {"platform": "t", "held": held}, ()))  # fmt: skip
        return Joined(entities={"thing": self.n}, documents={"things": 0})

    def reobserve(self, candidates: Iterable[Finding]) -> Iterator[Seen]:
        gc.collect()
        self.alive_when_reread = sum(r() is not None for r in self.refs)
        for seen in super().reobserve(candidates):
            self.batches += 1
            yield seen


def test_the_engine_holds_the_joins_findings_on_disk_and_judges_them_batch_by_batch() -> None:
    parts = Spilling(2_500)  # more than a block (2,000)
    report = engine.run(parts, FakeState(), Report(started_at=NOW, scope=Selection(entity_types=("thing",))),
                        Judging(grace=300.0, max_findings=10))  # fmt: skip
    # what the join made went to disk, but for the last block not yet written (held by the spill)
    assert parts.alive_when_reread is not None and parts.alive_when_reread < spill.BLOCK
    assert parts.batches == 3  # 1,000 a batch
    assert sum(report.counts.values()) == 2_500 and len(report.findings) == 10
    assert report.reobserved["candidates"] == 2_500 and report.reobserved["entities"] == 2_500
