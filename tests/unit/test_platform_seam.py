"""The platform seam, proven by a third platform that lives in the tests (tests/unit/toy_platform.py).

It registers through the same registry as DataHub and OpenMetadata; the face, the verdict
rules, the repair plan, the reports and the CLI then work for it unchanged: scan verdicts, a
plan, a repair and its clean re-scan, triage, and the refusals its capabilities imply.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor import platforms
from auditor.api import ScanOptions, rebuild, scan, triage
from auditor.core.model import Finding, Kind, PlatformKind, Selection, Verdict, kind_of
from auditor.errors import ConfigError
from auditor.platforms.base import Capability
from auditor.rebuild.request import RebuildRequest
from auditor.reports import RENDERERS
from auditor.reports.merge import from_dict
from auditor.settings import load_settings

sys.path.insert(0, str(Path(__file__).parent))
from toy_platform import WORLDS, Row, Toy, World  # noqa: E402

URL = "toy://unit"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    platforms.register("toy", Toy)
    old = datetime.now(UTC) - timedelta(hours=1)
    w = World(
        rows={
            "ok": Row("ok", "fine", old),
            "missing": Row("missing", "never indexed", old),
            "stale": Row("stale", "new text", old),
            "fresh": Row("fresh", "just written", datetime.now(UTC)),
        },
        docs={
            "ok": {"name": "ok", "description": "fine"},
            "stale": {"name": "stale", "description": "old <b>text</b>"},
            "fresh": {"name": "fresh", "description": "before the write"},
            "gone": {"name": "gone", "description": "its row was deleted"},
        },
    )
    WORLDS[URL] = w
    yield w
    WORLDS.pop(URL, None)
    platforms.unregister("toy")


def settings(tmp_path: Path):  # type: ignore[no-untyped-def]
    return load_settings(env={}, platform="toy", store_url=URL, state_file=str(tmp_path / "s.sqlite"))


def verdicts(report) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {c.finding.urn: f"{c.verdict.value}/{c.subkind}" for c in report.findings}


def test_the_registry_knows_it_and_loads_the_real_ones_lazily(world: World) -> None:
    assert platforms.names()[0] == "datahub" and {"openmetadata", "toy"} <= set(platforms.names())
    assert platforms.get("TOY").title == "Toy"
    with pytest.raises(ConfigError, match="unknown platform"):
        platforms.get("nope")
    with pytest.raises(Exception, match="unknown platform"):
        load_settings(env={}, platform="nope")


def test_scan_gives_the_shared_verdicts(world: World, tmp_path: Path) -> None:
    report = scan(settings(tmp_path), options=ScanOptions(grace=300.0, use_state=False))
    assert verdicts(report) == {
        "missing": "diverged/missing_document",
        "stale": "diverged/stale_fields",
        "gone": "in_flight/in_flight",  # no change time, first seen: unconfirmed until a later scan
        "fresh": "in_flight/in_flight",  # changed within the grace
    }
    assert report.exit_code == 1
    data = json.loads(RENDERERS["json"](report))
    stale = next(f for f in data["findings"] if f["urn"] == "stale")
    # its own repair commands, rendered by the reports through the registry
    # the shared renderer's line (every value from the data quoted)
    assert stale["repair"] == "auditor rebuild reindex --platform toy --urn 'stale' --apply"
    assert stale["repair_platform"] == "toyctl reindex stale" and stale["repair_datahub"] is None
    assert stale["details"]["fields"] == [
        {"field": "description", "expected": "new text", "actual": "old <b>text</b>"}
    ]
    markdown = RENDERERS["markdown"](report)
    assert "toyctl reindex missing" in markdown and "<b>" not in markdown


def test_plan_repair_and_a_clean_rescan(world: World, tmp_path: Path) -> None:
    s = settings(tmp_path)
    first = scan(s, options=ScanOptions(grace=0.0, use_state=False))
    planned = rebuild(s, RebuildRequest("plan", findings=first.findings))
    assert not planned.applied and world.writes == 0  # a plan writes nothing
    # the orphan has no change time: unconfirmed (in flight) on a first sight, so not repaired
    assert sorted(a.urn or "" for a in planned.plan.actions) == ["fresh", "missing", "stale"]
    done = rebuild(s, RebuildRequest("reindex", findings=first.findings, apply=True))
    assert done.applied and world.writes == 3
    again = scan(s, options=ScanOptions(grace=0.0, use_state=False))
    assert verdicts(again) == {"gone": "in_flight/in_flight"} and again.exit_code == 0


def test_a_kind_of_its_own_is_judged_reported_read_back_and_repaired(world: World, tmp_path: Path) -> None:
    world.rows["legacy"] = Row("legacy", "kept", datetime.now(UTC) - timedelta(hours=1))
    world.docs["legacy"] = {"name": "legacy", "description": "kept", "legacy": True}
    s = settings(tmp_path)
    report = scan(s, options=ScanOptions(grace=300.0, use_state=False))
    assert verdicts(report)["legacy"] == "diverged/toy.legacy_document"
    assert ("thing", "diverged", "toy.legacy_document") in report.counts
    back = from_dict(json.loads(RENDERERS["json"](report)))  # a saved report, read again
    kind = next(c.finding.kind for c in back.findings if c.finding.urn == "legacy")
    assert isinstance(kind, PlatformKind) and kind == "toy.legacy_document" and kind.platform == "toy"
    assert "toy.legacy_document" in RENDERERS["markdown"](report)
    done = rebuild(s, RebuildRequest("reindex", findings=back.findings, apply=True))
    assert done.applied and "legacy" not in verdicts(
        scan(s, options=ScanOptions(grace=300.0, use_state=False))
    )


def test_a_platform_kind_lives_in_its_platforms_namespace() -> None:
    assert kind_of("stale_fields") is Kind.STALE_FIELDS and kind_of("toy.x") == PlatformKind("toy", "x")
    with pytest.raises(ValueError, match="<platform>.<kind>"):
        kind_of("no_such_kind")  # not the kernel's, and no platform's namespace
    with pytest.raises(ValueError, match=r"\[a-z0-9_\]"):
        PlatformKind("toy", "two.dots")
    with pytest.raises(ValueError, match="toy's kind"):  # another platform's finding cannot claim it
        Finding("c", PlatformKind("toy", "x"), "u", "thing", details={"platform": "acme"})


def test_triage_names_the_first_break(world: World, tmp_path: Path) -> None:
    result = triage(settings(tmp_path), " stale ", grace=0.0)
    assert result.verdict == Verdict.DIVERGED.value and result.exit_code == 1
    assert result.first_break is not None and result.first_break.boundary.value == "document"
    assert triage(settings(tmp_path), "ok").verdict == "consistent"


def test_what_it_does_not_declare_is_refused_with_one_wording(world: World, tmp_path: Path) -> None:
    s = settings(tmp_path)
    with pytest.raises(ConfigError, match="rebuild replay is not supported on Toy") as refused:
        rebuild(s, RebuildRequest("replay", selection=Selection(urns=("ok",)), apply=True))
    assert refused.value.hint == "use `auditor rebuild reindex`"
    with pytest.raises(ConfigError, match="--urn-like is not supported on Toy"):
        scan(s, Selection(urn_like="a%"), ScanOptions(use_state=False))
    with pytest.raises(ConfigError, match="--full is not supported on Toy"):
        rebuild(s, RebuildRequest("reindex", selection=Selection(), apply=True, full=True))
    assert not platforms.get("toy").supports(Capability.CHANGE_LOG)
    # the real platforms declare theirs
    assert platforms.get("datahub").supports(Capability.REPLAY)
    assert not platforms.get("openmetadata").supports(Capability.REPLAY)


def test_the_cli_scans_and_repairs_it(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from auditor.cli import app

    monkeypatch.setenv("AUDITOR_STATE_FILE", str(tmp_path / "cli.sqlite"))
    runner = CliRunner()
    out = tmp_path / "scan.json"
    done = runner.invoke(
        app,
        ["scan", "--platform", "toy", "--store-url", URL, "--grace", "0", "--format", "json", "-o", str(out)],
    )
    assert done.exit_code == 1, done.output
    assert {f["subkind"] for f in json.loads(out.read_text())["findings"]} >= {
        "missing_document",
        "stale_fields",
    }
    done = runner.invoke(
        app,
        ["rebuild", "reindex", "--platform", "toy", "--store-url", URL, "--from-report", str(out), "--apply"],
    )
    assert done.exit_code == 0, done.output
    assert world.docs["missing"] == {"name": "missing", "description": "never indexed"}
    assert world.docs["stale"]["description"] == "new text" and "gone" in world.docs  # in flight: kept
