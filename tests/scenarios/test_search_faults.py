"""The search cluster misbehaving under a scan, broken by the test itself (a proxy in front of
the real node): 429 and 503 answers are retried with backoff and the verdicts hold; a slow
cluster hits the configured timeout and the scan fails clearly; the node lost mid-scan ends
the scan with exit code 3 and no report, and straight to the node the scan is right again."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from faults import drop_mcl
from http_faults import DIE, FaultyProxy
from test_rebuild import ROOT
from world import World

from auditor.api import ScanOptions, scan
from auditor.core.model import Selection, Verdict
from auditor.errors import BackendUnavailable

pytestmark = pytest.mark.integration

OPTIONS = ScanOptions(grace=300.0, settle=0.5, sample_window=1.0)


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, set[str]]]:
    world = World("mariadb", "opensearch", tmp_path_factory.mktemp("search-faults"), n=40)
    try:
        targets = drop_mcl(world)  # a row without an MCL: no index write to wait for
        yield world, targets
    finally:
        world.close()


def diverged(report) -> set[str]:
    return {c.finding.urn for c in report.findings if c.verdict == Verdict.DIVERGED}


def through(world: World, proxy: FaultyProxy, **over: object):
    return world.settings().model_copy(update={"search_url": proxy.url, **over})


def test_429_and_503_are_retried_with_backoff_and_the_verdicts_hold(broken) -> None:
    world, targets = broken
    direct = scan(world.settings(), Selection(), OPTIONS)

    def storm(n: int, method: str, path: str) -> int | None:
        if n > 400:
            return None
        return 429 if n % 3 == 0 else 503 if n % 5 == 0 else None

    with FaultyProxy(world.endpoints.search_url("opensearch"), storm) as proxy:
        report = scan(through(world, proxy), Selection(), OPTIONS)
    assert {a for *_, a in proxy.injected} == {429, 503} and len(proxy.injected) >= 5
    assert report.complete and report.exit_code == direct.exit_code == 1
    assert diverged(report) == diverged(direct) == targets
    assert sorted(c.finding.key for c in report.findings) == sorted(c.finding.key for c in direct.findings)
    assert report.entities == direct.entities and report.documents == direct.documents
    assert any("sent again after a backoff" in w for w in report.warnings), report.warnings


def test_a_slow_cluster_hits_the_configured_timeout_and_fails_clearly(broken) -> None:
    world, targets = broken
    upstream = world.endpoints.search_url("opensearch")

    def slow(delay: float):
        return lambda n, method, path: delay if "_search" in path else None

    with FaultyProxy(upstream, slow(2.0)) as proxy:
        started = time.monotonic()
        with pytest.raises(BackendUnavailable) as failed:
            scan(through(world, proxy, search_timeout_seconds=0.5, search_retries=1), Selection(), OPTIONS)
        took = time.monotonic() - started
    assert "search cluster" in str(failed.value) and proxy.url in str(failed.value), str(failed.value)
    assert took < 15, took  # one timeout, one retry after its backoff: bounded
    with FaultyProxy(upstream, slow(0.2)) as proxy:  # slow, but within the timeout
        patient = scan(through(world, proxy, search_timeout_seconds=10), Selection(), OPTIONS)
    assert patient.complete and diverged(patient) == targets


def test_the_node_lost_mid_scan_ends_it_with_exit_3_and_no_report(broken, tmp_path: Path) -> None:
    """The node goes away after the first pages (the proxy in front of it hangs up on that
    request and every later one): exit 3, no report. A real kill of the node is
    test_rebuild.py's search-node test (phase 2); this one needs no restart and runs beside others."""
    world, targets = broken
    gone: list[int] = []

    def die_after_some_pages(n: int, method: str, path: str) -> str | None:
        if "_search" in path and not gone and n > 8:
            gone.append(n)
            return DIE
        return None

    out = tmp_path / "scan.json"
    with FaultyProxy(world.endpoints.search_url("opensearch"), die_after_some_pages) as proxy:
        env = world.cli_env(AUDITOR_SEARCH_URL=proxy.url, AUDITOR_SEARCH_RETRIES="2")
        done = subprocess.run(
            [sys.executable, "-m", "auditor.cli", "scan", "--no-state", "-f", "json", "-o", str(out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert gone, "the node was not lost: the scan made fewer requests than expected"
    assert done.returncode == 3, (done.returncode, done.stderr[-2000:])
    assert "search cluster" in done.stderr and "error:" in done.stderr, done.stderr[-2000:]
    assert not out.exists(), "a failed scan left a report that looks complete"
    again = scan(world.settings(), Selection(), OPTIONS)  # straight to the node: the scan is right
    assert again.complete and diverged(again) == targets


def test_the_node_lost_mid_verification_keeps_the_checkpoint_and_resume_verifies(
    broken, tmp_path: Path
) -> None:
    """A reindex writes its one bulk; the node goes away as the verification starts reading (the
    proxy hangs up from then on); the repair ends with exit 3 and its checkpoint; `--resume`,
    straight to the node, verifies clean."""
    from test_rebuild import rebuild_cli

    world, _ = broken
    urn = next(e.urn for e in world.of_type("dataset"))
    wrote: list[int] = []
    killed: list[int] = []

    def die_after_the_bulk(n: int, method: str, path: str) -> str | None:
        if "_bulk" in path:
            wrote.append(n)
        elif wrote and not killed and ("_search" in path or "_msearch" in path):  # a few urns: one _msearch
            killed.append(n)
            return DIE
        return None

    with FaultyProxy(world.endpoints.search_url("opensearch"), die_after_the_bulk) as proxy:
        args, env = rebuild_cli(world, tmp_path, "reindex", "--urn", urn)
        args[args.index("--search-url") + 1] = proxy.url
        env["AUDITOR_SEARCH_RETRIES"] = "2"
        first = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert wrote and killed, (wrote, killed)
    assert first.returncode == 3 and "search cluster" in first.stderr, (
        first.returncode,
        first.stderr[-1500:],
    )
    assert list(tmp_path.glob("rebuild-*.json")), "the checkpoint was not kept"
    args, env = rebuild_cli(world, tmp_path, "reindex", "--urn", urn)
    resumed = subprocess.run(
        [*args, "--resume"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stdout[-1500:] + resumed.stderr[-1500:]
    assert json.loads(resumed.stdout)["still_wrong"] == [] and not list(tmp_path.glob("rebuild-*.json"))
