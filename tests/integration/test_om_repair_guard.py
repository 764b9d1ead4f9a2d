"""OpenMetadata's repair under the shared guard (auditor/rebuild/guard.py), against PostgreSQL +
OpenSearch 3, the CLI in child processes: a second repair of the same target is refused while
the first runs (exit 6); the first, killed mid-run (SIGKILL), leaves its checkpoint and a stale
lock; run again it is refused until `--break-stale-lock`, and `--resume` starts after the last
batch whose write was confirmed: every entity written once over both runs, the re-scan clean."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_om_profile import ROOT, World, _cli, cli_env, om_world

from sandbox.openmetadata.faults import Fault

pytestmark = pytest.mark.integration


def _checkpoint(w: World) -> dict[str, Any] | None:
    for path in w.state.parent.glob("rebuild-*.json"):
        try:
            return dict(json.loads(path.read_text()))
        except ValueError:  # replaced as we read it
            continue
    return None


def _wait_for(w: World, run: subprocess.Popen[str], written: int, timeout: float = 120) -> dict[str, Any]:
    """The running repair's checkpoint once it confirmed `written` documents (never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert run.poll() is None, f"the repair ended (exit {run.returncode}) before its checkpoint got there"
        ck = _checkpoint(w)
        if ck and ck["counts"].get("documents written", 0) >= written:
            return ck
        time.sleep(0.05)
    raise AssertionError(f"no checkpoint with {written} documents written within {timeout:.0f}s")


def test_a_repair_is_exclusive_and_resumes_after_its_last_confirmed_batch(tmp_path: Path) -> None:
    with om_world("postgres", "opensearch3", tmp_path, n=120) as w:
        tables = w.catalog.of_type("table")[:30]
        for t in tables:  # index writes lost after each update: 30 stale documents
            w.server.update(t, description=f"written since: {t.name}", fault=Fault.STALE_UPDATE)
        w.refresh()
        report = tmp_path / "scan.json"
        scanned = _cli(w, "scan", "--grace", "0", "-f", "json", "-o", str(report))
        assert scanned.returncode == 1, scanned.stderr
        broken = {f["urn"] for f in json.loads(report.read_text())["findings"] if f["verdict"] == "diverged"}
        assert broken == {t.id for t in tables}
        repair = ["rebuild", "reindex", "--from-report", str(report), "--apply", "--rate", "8",
                  "--batch-size", "4", "-f", "json"]  # fmt: skip
        first = _popen(w, *repair)
        try:
            running = _wait_for(w, first, 4)
            assert running["last_urn"] and running["part"] == 0
            second = _cli(w, *repair)  # the same target while the first runs
            assert second.returncode == 6, second.stderr
            assert "a repair of this target is running" in second.stderr or "is held" in second.stderr
            killed_at = _wait_for(w, first, 8)
            first.send_signal(signal.SIGKILL)
            first.wait(30)
        finally:
            if first.poll() is None:
                first.kill()
        killed = _checkpoint(w)
        assert killed is not None and killed["last_urn"] and not killed["done"]
        confirmed = killed["counts"]["documents written"]
        assert killed_at["counts"]["documents written"] <= confirmed < len(tables)
        stale = _cli(w, *repair, "--resume")  # the killed run's lock is still there
        assert stale.returncode == 6 and "stale" in stale.stderr, stale.stderr
        resumed = _cli(w, *repair, "--resume", "--break-stale-lock")
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        outcome = json.loads(resumed.stdout)
        counts = outcome["counts"]
        # every broken entity written once over both runs: the resumed run skipped what was confirmed
        assert counts["documents written"] == len(tables), counts
        assert counts["skipped (confirmed by the run resumed)"] == confirmed, (counts, confirmed)
        assert outcome["still_wrong"] == [] and outcome["exit_code"] == 0
        assert _checkpoint(w) is None  # done and verified: nothing left to resume
        again = _cli(w, "scan", "--grace", "0", "-f", "json")
        assert again.returncode == 0, again.stdout[-2000:]


def _popen(w: World, *args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "auditor.cli", *args]
    return subprocess.Popen(
        command, cwd=ROOT, env=cli_env(w), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
