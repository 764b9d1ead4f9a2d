"""DataHub 1.7's search side against the real stack: a zero-downtime reindex caught mid-way."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest
from faults import _datasets, _tags
from test_rebuild import rebuild_cli
from world import World

from auditor.api import rebuild
from auditor.core.model import Report, Verdict
from auditor.rebuild.run import RebuildRequest
from sandbox.naming import entity_doc_id
from sandbox.zdr import ZeroDowntimeReindex

ROOT = Path(__file__).resolve().parents[2]


def diverged(report: Report) -> Counter[tuple[str, str]]:
    return Counter((c.finding.urn, c.subkind) for c in report.findings if c.verdict == Verdict.DIVERGED)


@pytest.mark.integration
@pytest.mark.parametrize("catch_up", ["done", "skipped"])
def test_a_zero_downtime_reindex_mid_way_then_swapped(catch_up: str, tmp_path: Path) -> None:
    """Mid-way: the scan audits what the alias serves (the next index misses the gap's writes and
    that is not divergence), says a reindex is running, and `--full` refuses to race it. After
    DataHub's swap the scan audits the new backing index: a catch-up that ran leaves nothing, a
    skipped one leaves the gap's writes stale there. Repaired, the re-scan is clean."""
    world = World("postgres", "opensearch", tmp_path, n=40)
    try:
        dropped, *gap = _datasets(world, 4)
        world.writer.write(dropped, "globalTags", _tags("dropped"), drop_mcl=True)  # before T0
        assert world.consumer.drain(60)
        zdr = ZeroDowntimeReindex(
            world.engine, world.search, world.consumer.updater, world.writer, "dataset", world.prefix
        )
        zdr.copy()
        for i, urn in enumerate(gap):  # consumed before the poller sees the state: live index only
            world.writer.write(urn, "globalTags", _tags(f"gap-{i}"))
        assert world.consumer.drain(60)
        zdr.dual_write()
        world.refresh()
        half = world.search.mget(zdr.next_index, [entity_doc_id(u) for u in gap])
        assert all("gap-" not in str(doc) for doc in half.values()), "the next index should lack them"

        during = world.scan()
        args, env = rebuild_cli(world, tmp_path, "reindex", "--full", "--entity-type", "dataset")
        refused = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)

        zdr.catch_up(skip=catch_up == "skipped")
        zdr.wait_for_lag()
        zdr.swap()
        after = world.scan()
        outcome = rebuild(
            world.settings(),
            RebuildRequest(
                "reindex", findings=after.findings, apply=True, wait_seconds=60, state_dir=tmp_path
            ),
        )
        clean = world.scan()
    finally:
        world.close()
    assert set(diverged(during)) == {(dropped, "event_never_published")}, diverged(during)
    (running,) = [r for r in during.reindex if r["alias"] == zdr.alias]
    assert running["phase"] == "in_progress" and running["next_index"] == zdr.next_index
    assert running["source"] == "upgrade state" and running["serving"] == [zdr.alias]
    assert any(zdr.next_index in w and "in progress" in w for w in during.warnings)
    assert refused.returncode == 3, refused.stdout[-800:] + refused.stderr[-800:]
    assert zdr.next_index in refused.stderr and "race" in refused.stderr, refused.stderr

    (swapped,) = [r for r in after.reindex if r["alias"] == zdr.alias]
    assert swapped["phase"] == "swapped" and swapped["serving"] == [zdr.next_index]
    expected = {(dropped, "event_never_published")}
    if catch_up == "skipped":
        expected |= {(urn, "stale_fields") for urn in gap}
    assert set(diverged(after)) == expected, diverged(after)
    assert not outcome.failed and not outcome.still_wrong and outcome.exit_code == 0
    assert not diverged(clean) and clean.exit_code == 0, [str(c) for c in clean.findings][:5]
