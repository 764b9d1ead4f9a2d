"""The conformance suite: what every registered platform must do, run on each of them (as dbt's
adapter test suite runs on every adapter): DataHub and OpenMetadata against the real stack
(tests/conformance/test_stack_platforms.py), the toy platform and a platform installed from
another distribution in memory (tests/conformance/test_toy_platforms.py).

A platform's test supplies a `Deployment`: its settings and a way to break three entities the
way its own servers lose writes (a document never written, one left with an older value, one
whose entity is gone). The suite then checks, in this order, through the face (`auditor.api`)
only: the platform's declarations are proven (`platforms.base.proof`); what it does not
declare is refused with the one wording; a scan finds the three (the missing and the stale
diverged, the orphan seen) and a second scan, remembering the first, calls the orphan
persistent; triage names the broken entity's first break and the healthy one consistent; the
resident console (when declared) says what triage says, and is refused when not; a plan
writes nothing; a repair applied, and the re-scan finds none of the three.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pytest

from auditor import platforms
from auditor.api import ScanOptions, rebuild, scan, triage
from auditor.core.model import Classified, Report, Selection, Verdict
from auditor.errors import ConfigError
from auditor.platforms.base import Capability, Platform, proof
from auditor.rebuild.request import RebuildRequest
from auditor.settings import Settings


@dataclass(frozen=True)
class Broken:
    """The entities a deployment broke, as its findings name them (`Finding.urn`)."""

    missing: str  # its document was never written; its row is older than any grace
    stale: str  # its document holds an older value of a field
    orphan: str  # its document outlived its entity (deleted from the database)
    healthy: str  # left alone


class Deployment(Protocol):
    platform: str
    # the scan's knobs for this deployment (DataHub's short --settle and --sample-window: the
    # faults were injected a second ago, the change log sampled for two seconds, not ten)
    knobs: dict[str, float]

    def settings(self) -> Settings: ...

    def break_three(self) -> Broken: ...

    def settle(self) -> None:
        """Make every write so far visible to a scan (an index refresh)."""


def run_suite(d: Deployment) -> None:
    platform = platforms.get(d.platform)
    assert proof(platform) == [], f"{d.platform} declares what it does not provide"
    refusals(platform, d.settings())
    hit = d.break_three()
    d.settle()
    first = _scan(d, use_state=True)
    found = _by_urn(first)
    for urn, kind in ((hit.missing, "missing_document"), (hit.stale, "stale_fields")):
        assert _judged(found, urn, kind) == Verdict.DIVERGED, (urn, kind, _said(first))
    assert _judged(found, hit.orphan, "orphan_document") is not None, _said(first)
    assert hit.healthy not in found, _said(first)
    assert first.exit_code == 1
    second = _scan(d, use_state=True)  # the first scan's findings remembered: a second sight
    again = _by_urn(second)
    assert _judged(again, hit.orphan, "orphan_document") == Verdict.DIVERGED, (
        "a second sight",
        _said(second),
    )
    triaged(d, hit)
    serve(platform, d, hit)
    planned = rebuild(d.settings(), RebuildRequest("plan", findings=second.findings))
    assert not planned.applied and planned.plan.actions, "a plan of three broken entities"
    d.settle()
    unchanged = _diverged(_scan(d, use_state=True))  # nothing written: the same three, persistent
    assert {hit.missing, hit.stale, hit.orphan} <= unchanged, unchanged
    done = rebuild(d.settings(), RebuildRequest("reindex", findings=second.findings, apply=True))
    assert done.applied, done
    d.settle()
    after = _scan(d, use_state=False)
    assert not _diverged(after) & {hit.missing, hit.stale, hit.orphan}, _said(after)


def refusals(platform: Platform, settings: Settings) -> None:
    """Every capability it does not declare is refused with one wording; three through the face."""
    for capability in set(Capability) - platform.capabilities:
        with pytest.raises(ConfigError, match=f"is not supported on {platform.title}"):
            platform.require(capability)
    if Capability.REPLAY not in platform.capabilities:
        with pytest.raises(ConfigError, match=f"rebuild replay is not supported on {platform.title}"):
            rebuild(settings, RebuildRequest("replay", selection=Selection(urns=("x",)), apply=True))
    if Capability.STAGED_REINDEX not in platform.capabilities:
        with pytest.raises(ConfigError, match=f"--full is not supported on {platform.title}"):
            rebuild(settings, RebuildRequest("reindex", selection=Selection(), apply=True, full=True))
    if Capability.URN_PATTERN not in platform.capabilities:
        with pytest.raises(ConfigError, match=f"--urn-like is not supported on {platform.title}"):
            scan(settings, Selection(urn_like="a%"), ScanOptions(use_state=False))


def triaged(d: Deployment, hit: Broken) -> None:
    settle = d.knobs.get("settle", 10.0)
    broken = triage(d.settings(), hit.missing, grace=0.0, settle=settle)
    assert broken.verdict == Verdict.DIVERGED.value and broken.exit_code == 1, broken
    assert broken.first_break is not None, broken
    healthy = triage(d.settings(), hit.healthy, grace=0.0, settle=settle)
    assert healthy.verdict == "consistent" and healthy.exit_code == 0, healthy


def serve(platform: Platform, d: Deployment, hit: Broken) -> None:
    """The resident console answers as triage does (SERVE), or is refused before it listens."""
    from auditor.serve.console import Console

    if Capability.SERVE not in platform.capabilities:
        with pytest.raises(ConfigError, match=f"auditor serve\\) is not supported on {platform.title}"):
            Console(d.settings(), grace=0.0)
        return
    console = Console(d.settings(), grace=0.0, settle=d.knobs.get("settle", 10.0))
    try:
        assert console.triage(hit.missing).verdict == Verdict.DIVERGED.value
        assert console.triage(hit.healthy).verdict == "consistent"
    finally:
        console.close()


def _scan(d: Deployment, *, use_state: bool) -> Report:
    return scan(d.settings(), options=ScanOptions(grace=0.0, use_state=use_state, **d.knobs))


def _by_urn(report: Report) -> dict[str, list[Classified]]:
    """Each entity's judged findings (a DataHub entity has one per document it is compared with)."""
    assert not report.findings_dropped
    out: dict[str, list[Classified]] = {}
    for c in report.findings:
        out.setdefault(c.finding.urn, []).append(c)
    return out


def _judged(found: dict[str, list[Classified]], urn: str, kind: str) -> Verdict | None:
    """The verdict of `urn`'s finding of `kind` (None: no such finding)."""
    return next((c.verdict for c in found.get(urn, ()) if c.finding.kind.value == kind), None)


def _diverged(report: Report) -> set[str]:
    return {c.finding.urn for c in report.findings if c.verdict == Verdict.DIVERGED}


def _said(report: Report) -> list[str]:
    return [f"{c.finding.urn}: {c.verdict.value}/{c.subkind}" for c in report.findings]
