"""A finding always names its platform (`details.platform`): DataHub's join (test_pipeline.py)
and watch write it, a report of schema version 2 must hold it, and a version-1 report (written
when DataHub's findings named none) is read with the platform filled in; the state file's key
never changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import T0
from typer.testing import CliRunner

from auditor.backends.state import ScanState
from auditor.core.model import Classified, Evidence, Finding, Kind, RepairKind, Report, Verdict
from auditor.platforms.datahub.scan.join import owned
from auditor.platforms.datahub.watch.judge import late_finding
from auditor.platforms.datahub.watch.reflect import Reflection, WatchedEvent
from auditor.reports import RENDERERS
from auditor.reports.merge import from_dict, merge

A, B, C = "urn:li:tag:a", "urn:li:tag:b", "urn:li:tag:c"


def test_the_join_names_datahub_over_whatever_a_check_wrote() -> None:
    mine = Finding("c", Kind.MISSING_DOCUMENT, A, "tag", details={"platform": "datahub", "x": 1})
    found = [
        Finding("c", Kind.MISSING_DOCUMENT, B, "tag"),
        Finding("custom", Kind.STALE_FIELDS, C, "tag", details={"x": 1, "platform": "hive"}),
        mine,
    ]
    owned(found, 1)  # the findings before `start` are another entity's: untouched
    assert found[0].details == {}
    assert found[1].details == {"platform": "datahub", "x": 1}
    assert found[2] is mine


def test_the_watch_s_late_finding_names_datahub() -> None:
    event = WatchedEvent("MetadataChangeLog_Versioned_v1", 0, 3, A, "tagProperties", "UPSERT", 0.0, "tag", {})
    c = late_finding(event, Reflection(False, Kind.STALE_FIELDS, "old"), 90.0, 90.0, None, None, 3.0)
    assert c.finding.platform == "datahub" and c.finding.details["offset"] == 3


def test_a_finding_without_a_platform_is_an_error_not_datahub() -> None:
    bare = Finding("c", Kind.MISSING_DOCUMENT, A, "tag", "tagindex_v2")
    with pytest.raises(ValueError, match="names no platform"):
        assert bare.platform is None  # never reached: it raises
    report = Report(started_at=T0, findings=[Classified(bare, Verdict.DIVERGED, "x", Evidence("r"))])
    with pytest.raises(ValueError, match="names no platform"):
        RENDERERS["json"](report)


def test_the_state_key_is_the_same_with_or_without_the_platform(tmp_path: Path) -> None:
    """A scan before this change remembered DataHub's findings without it: still recognised."""
    before = Finding("index.orphan-document", Kind.ORPHAN_DOCUMENT, C, "tag", "tagindex_v2")
    now = Finding(
        "index.orphan-document",
        Kind.ORPHAN_DOCUMENT,
        C,
        "tag",
        "tagindex_v2",
        details={"platform": "datahub"},
    )
    assert before.key == now.key == f"index.orphan-document|tagindex_v2|{C}|"
    state = ScanState(tmp_path / "state.sqlite")
    state.record_findings([before], T0, ())
    assert state.history([now.key])[now.key].times_seen == 1
    state.close()


def _old(data: dict[str, Any], **sources: str) -> dict[str, Any]:
    """The report as schema version 1 wrote it: DataHub's findings named no platform."""
    out = json.loads(json.dumps(data))
    out["schema_version"] = 1
    out["sources"].update(sources)
    for f in out["findings"]:
        f["details"].pop("platform", None)
    return out


def _report() -> dict[str, Any]:
    found = Finding(
        "index.missing-document",
        Kind.MISSING_DOCUMENT,
        A,
        "tag",
        "tagindex_v2",
        details={"platform": "datahub"},
        repairs=(RepairKind.REPLAY_ASPECT,),
    )
    r = Report(started_at=T0, finished_at=T0, sources={"store": "postgresql://h/db"})
    r.findings = [Classified(found, Verdict.DIVERGED, "missing_document", Evidence("consumed, not applied"))]
    r.counts = {("tag", "diverged", "missing_document"): 1}
    data: dict[str, Any] = json.loads(RENDERERS["json"](r))
    return data


def test_a_version_1_report_reads_its_findings_as_the_reports_platform_or_datahubs() -> None:
    current = _report()
    old = from_dict(_old(current))
    assert old.findings[0].finding.details == {"platform": "datahub"}
    assert json.loads(RENDERERS["json"](old)) == current  # rendered again: version 2, as today's
    toy = from_dict(_old(current, platform="openmetadata"))
    assert toy.findings[0].finding.platform == "openmetadata"
    named = _old(current)
    named["findings"][0]["details"]["platform"] = "openmetadata"  # named: kept as written
    assert from_dict(named).findings[0].finding.platform == "openmetadata"


def test_a_version_2_finding_without_a_platform_is_refused() -> None:
    data = _report()
    del data["findings"][0]["details"]["platform"]
    with pytest.raises(ValueError, match=r"names no platform .*schema_version 2"):
        from_dict(data)
    data["schema_version"] = 3
    with pytest.raises(ValueError, match="unsupported report schema_version 3"):
        from_dict(data)


def test_report_render_and_merge_read_old_reports_and_refuse_unnamed_findings(tmp_path: Path) -> None:
    from auditor.cli import app

    current = _report()
    old, bad = tmp_path / "old.json", tmp_path / "bad.json"
    old.write_text(json.dumps(_old(current)), encoding="utf-8")
    broken = json.loads(json.dumps(current))
    del broken["findings"][0]["details"]["platform"]
    bad.write_text(json.dumps(broken), encoding="utf-8")
    runner = CliRunner()
    done = runner.invoke(app, ["report", "render", str(old), "-f", "json"])
    assert done.exit_code == 1, done.output  # the finding is diverged
    assert json.loads(done.stdout)["findings"][0]["details"] == {"platform": "datahub"}
    refused = runner.invoke(app, ["report", "render", str(bad), "-f", "json"])
    assert refused.exit_code == 2 and "names no platform" in refused.output, refused.output
    merged = merge([from_dict(_old(current)), from_dict(current)])
    assert [c.finding.platform for c in merged.findings] == ["datahub", "datahub"]
    refused = runner.invoke(app, ["report", "merge", str(old), str(bad), "-f", "json"])
    assert refused.exit_code == 2 and "names no platform" in refused.output, refused.output
