"""Fault -> verdict scenarios against the real stack, expanded from cases.yaml."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml
from faults import FAULTS, lost_to_retention
from world import World

from auditor.api import triage
from auditor.core.triage import Boundary
from auditor.reports.markdown import render as markdown

CASES = yaml.safe_load((Path(__file__).with_name("cases.yaml")).read_text())
PARAMS = [
    pytest.param(case, pair, id=f"{case['name']} [{pair}]") for case in CASES for pair in case["run_on"]
]


@pytest.mark.integration
@pytest.mark.parametrize(("case", "pair"), PARAMS)
def test_scenario(case: dict, pair: str, tmp_path: Path) -> None:
    store, search = pair.split("/")
    world = World(store, search, tmp_path)
    try:
        targets = FAULTS[case["fault"]](world)
        report = world.scan(**case.get("scan", {}))
    finally:
        world.close()
    expect = case["expect"]
    summary = Counter((c.finding.urn, c.verdict.value, c.subkind) for c in report.findings)
    assert report.complete
    assert sum(report.entities.values()) >= len(world.entities) - len(targets)
    stray = [c for c in report.findings if c.finding.urn not in targets]
    assert not stray, f"findings on urns the fault did not touch: {[str(c) for c in stray[:5]]}"
    if "findings" in expect:
        assert len(report.findings) == expect["findings"], summary
    target = expect.get("target")
    if target:
        for urn in targets:
            mine = [c for c in report.findings if c.finding.urn == urn]
            assert mine, f"no finding for {urn}: {summary}"
            main = [c for c in mine if c.verdict.value == target["verdict"]]
            assert main, f"{urn}: no {target['verdict']} finding in {summary}"
            if "subkind" in target:
                assert target["subkind"] in {c.subkind for c in main}, summary
            if target.get("eta"):
                assert any(c.evidence.eta_seconds is not None for c in main), summary
            for c in mine:
                assert c.evidence.reason
    if "warning" in expect:
        assert any(expect["warning"] in w for w in report.warnings), report.warnings
    assert report.exit_code == expect["exit"], summary


@pytest.mark.integration
def test_a_change_retention_deleted_before_the_consumer_read_it_is_lost_not_never_published(
    tmp_path: Path,
) -> None:
    world = World("postgres", "opensearch", tmp_path, n=20)
    try:
        (urn,) = lost_to_retention(world)
        report = world.scan()
        traced = triage(world.settings(), urn, settle=0.5)
    finally:
        world.close()
    mine = [c for c in report.findings if c.finding.urn == urn]  # the document, its system metadata, ...
    assert mine and {(c.verdict.value, c.subkind) for c in mine} == {("diverged", "lost_to_retention")}, mine
    found = mine[0]
    (p,) = [
        p for p in report.partitions if p.topic == world.topics[0] and p.partition == found.evidence.partition
    ]
    assert p.committed is not None and p.lost_to_retention == (p.committed, p.start - 1), p
    first, last = p.lost_to_retention
    why = found.evidence.reason
    assert "lost to retention" in why and f"offsets {first} to {last}" in why and "never published" not in why
    assert report.exit_code == 1 and found.finding.repairs, found.finding.repairs  # replay or reindex it
    said = markdown(report)  # the partition says it too, with the offsets
    assert f"offsets {first}-{last} lost to retention" in said, said
    consumed = next(s for s in traced.steps if s.boundary == Boundary.CONSUMED)
    assert "lost to retention" in consumed.detail and consumed.facts["lost_to_retention"] == [first, last]
    assert "lost_to_retention" in {c.subkind for c in traced.findings}, [str(c) for c in traced.findings]
