"""The readers of a scan's every-finding JSON Lines: a repair takes its findings pass by pass from
the file (the plan the same as from the whole list), and an index most of whose documents are
missing is one window in the plan and one sentence in the report, with its counts."""

from __future__ import annotations

import json
import pickle
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from auditor.core.model import Classified, Evidence, Finding, Kind, RepairKind, Report, Verdict
from auditor.core.plan import plan
from auditor.reports import jsonl
from auditor.reports.jsonl import FindingsWriter, findings, header_of, load, taking

T0 = datetime(2026, 11, 1, tzinfo=UTC)
DIVERGED = frozenset({Verdict.DIVERGED})


def judged(
    urn: str, entity_type: str, kind: Kind, verdict: Verdict = Verdict.DIVERGED, n: int = 0
) -> Classified:
    repairs = {
        Kind.MISSING_DOCUMENT: (RepairKind.REPLAY_ASPECT,),
        Kind.MISSING_EDGE: (RepairKind.REWRITE_EDGES,),
        Kind.ORPHAN_DOCUMENT: (RepairKind.DELETE_DOCUMENT,),
        Kind.STALE_FIELDS: (RepairKind.REPLAY_ASPECT,),
    }[kind]
    index = "graph_service_v1" if kind == Kind.MISSING_EDGE else f"{entity_type}index_v2"
    changed = None if kind == Kind.ORPHAN_DOCUMENT else T0 + timedelta(hours=n)
    f = Finding(f"c.{kind}", kind, urn, entity_type, index, None, changed, {"platform": "datahub"}, repairs)
    return Classified(f, verdict, kind.value, Evidence("because"))


def written(path: Path, found: list[Classified], entities: dict[str, int]) -> Path:
    report = Report(T0, entities=entities)
    report.counts = dict(Counter((c.finding.entity_type, c.verdict.value, c.subkind) for c in found))
    out = FindingsWriter(path, report)
    for c in found:
        out.write(c)
    out.close(report)
    return path


def restored(n: int = 10, behind: int = 8) -> list[Classified]:
    """`behind` of `n` datasets without their document or edges; charts with a little wrong."""
    urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t{},PROD)".format
    found = [judged(urn(i), "dataset", Kind.MISSING_DOCUMENT, n=i) for i in range(behind)]
    found += [judged(urn(i), "dataset", Kind.MISSING_EDGE, n=i + 1) for i in range(behind)]
    found += [
        judged(urn(9), "dataset", Kind.STALE_FIELDS, n=9),
        judged("urn:li:dataset:gone", "dataset", Kind.ORPHAN_DOCUMENT),
    ]
    found += [judged("urn:li:chart:(looker,c1)", "chart", Kind.MISSING_DOCUMENT, n=3)]
    found += [judged("urn:li:chart:(looker,c2)", "chart", Kind.STALE_FIELDS, Verdict.IN_FLIGHT, n=4)]
    return found


def test_an_index_mostly_behind_is_one_window_in_the_plan_and_the_rest_as_from_the_whole_list(
    tmp_path: Path,
) -> None:
    found = restored()
    path = written(tmp_path / "all.jsonl.gz", found, {"dataset": 10, "chart": 10})
    header = header_of(path)
    assert header is not None
    taken = taking(path, header, DIVERGED)
    streamed = plan(taken)
    windows = streamed.of(RepairKind.REPLAY_WINDOW)
    assert [(a.entity_type, a.index, a.since) for a in windows] == [("dataset", "datasetindex_v2", T0)]
    # everything else as the whole list planned it: the stale dataset, the orphan, the chart
    windowed = {Kind.MISSING_DOCUMENT, Kind.MISSING_EDGE}
    rest = [c for c in found if not (c.finding.entity_type == "dataset" and c.finding.kind in windowed)]
    whole = plan(c for c in rest if c.verdict in DIVERGED)
    assert [a for a in streamed.actions if a.kind != RepairKind.REPLAY_WINDOW] == whole.actions
    assert plan(taken).actions == streamed.actions  # a second pass reads the same
    assert [(b.index, b.missing, b.entities) for b in taken.behind] == [("datasetindex_v2", 8, 10)]


def test_with_no_index_behind_the_streamed_plan_is_the_whole_lists(tmp_path: Path) -> None:
    found = restored(behind=4)  # 4 of 10: not most of the index
    path = written(tmp_path / "all.jsonl", found, {"dataset": 10, "chart": 10})
    header = header_of(path)
    assert header is not None
    for verdicts in (DIVERGED, frozenset({Verdict.DIVERGED, Verdict.IN_FLIGHT})):
        taken = taking(path, header, verdicts)
        assert (
            taken.behind == []
            and plan(taken).actions == plan(c for c in found if c.verdict in verdicts).actions
        )


def test_a_pass_over_more_than_it_keeps_reads_the_file_again_and_a_shard_gets_none(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(jsonl, "KEEP_READ", 3)
    found = restored(behind=4)
    path = written(tmp_path / "all.jsonl", found, {"dataset": 10, "chart": 10})
    header = header_of(path)
    assert header is not None
    taken = taking(path, header, DIVERGED)
    first = [c.finding.key for c in taken]
    assert taken._kept is None and [c.finding.key for c in taken] == first
    small = taking(path, header, frozenset({Verdict.INVALID}))  # none taken: the first names the platform
    assert [c.finding.key for c in small] == [found[0].finding.key] and small._kept is not None
    assert pickle.loads(pickle.dumps(small))._kept is None  # a shard process reads the file itself


def test_the_report_says_once_per_index_how_far_behind_it_is(tmp_path: Path) -> None:
    path = written(tmp_path / "all.jsonl.gz", restored(), {"dataset": 10, "chart": 10})
    for keep in (0, 3):
        report = load(path, keep=keep)
        said = [w for w in report.warnings if "datasetindex_v2" in w]
        assert said == [
            "index datasetindex_v2: 8 missing documents against 10 dataset entities in the store (most of "
            "the index is behind). One repair: `auditor rebuild reindex -t dataset` (or DataHub's own "
            "reindex of the type)"
        ]
        assert not [w for w in report.warnings if "chartindex" in w]
        assert len(report.findings) == keep and report.findings_dropped == 20 - keep


def test_a_line_is_read_without_decoding_as_decoding_reads_it(tmp_path: Path) -> None:
    awkward = [
        'urn:li:dataset:(urn:li:dataPlatform:hive,"kind":"orphan_document",PROD)',
        "urn:li:dataset:(urn:li:dataPlatform:hive,back\\slash\\,PROD)",
        "urn:li:dataset:(urn:li:dataPlatform:hive,café,PROD)",
    ]
    found = [judged(u, "dataset", k) for u in awkward for k in (Kind.MISSING_DOCUMENT, Kind.ORPHAN_DOCUMENT)]
    path = written(tmp_path / "all.jsonl", found, {"dataset": 3})
    header = header_of(path)
    assert header is not None
    lines = list(jsonl._rows(path))
    assert [jsonl._fields(line) for line in lines] == [jsonl._decoded(line) for line in lines]
    assert [json.loads(line)["urn"] for line in lines] == [c.finding.urn for c in findings(path, header)]
