"""`auditor heal` against the real stack: the README's policy heals the demo's faults once they
are persistent (the re-scan clean), reports an orphan until pruning is enabled, and each guard
(a restore-sized divergence, a stalled consumer, DataHub's own reindex running) stops the heal
with the guard named and nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from faults import _datasets, _tags, drop_mcl, hard_delete, restore_snapshot, skip_index_write
from test_datahub17 import zdr_of
from undo_checks import changed, journaled_docs, raw_sources
from world import World

from auditor.core.model import Verdict
from auditor.exit_codes import ExitCode
from auditor.heal.loop import HealOutcome, heal_once
from auditor.heal.policy import Policy, parse_policy
from auditor.scan.options import ScanOptions

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def readme_policy() -> str:
    """The policy the README shows (its "Heal within a policy" section's TOML)."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Heal within a policy", 1)[1]
    return section.split("```toml\n", 1)[1].split("```", 1)[0]


def heal(world: World, policy: Policy, tmp: Path, now: datetime, dry_run: bool = False) -> HealOutcome:
    world.refresh()
    options = ScanOptions(grace=300.0, settle=0.5, sample_window=2.0)
    return heal_once(
        world.settings(), policy, dry_run=dry_run, options=options, state_dir=tmp, now=now, wait_seconds=60
    )


def soft_delete_lost(world: World, which: int) -> set[str]:
    """A soft delete whose index write the consumer skipped (the demo's lost soft delete)."""
    urn = _datasets(world, which + 1)[which]
    world.consumer.skip_index_write({urn})
    world.writer.soft_delete(urn)
    assert world.consumer.drain(60)
    world.consumer.reset_faults()
    return {urn}


def diverged(world: World) -> dict[str, set[str]]:
    """Each diverged entity's kinds of finding, by a scan now."""
    out: dict[str, set[str]] = {}
    for c in world.scan().findings:
        if c.verdict == Verdict.DIVERGED:
            out.setdefault(c.finding.urn, set()).add(c.finding.kind.value)
    return out


@pytest.mark.parametrize(
    "pair", ["postgres/opensearch", "mariadb/elasticsearch", "postgres/opensearch/pgqueue"]
)
def test_the_readme_policy_heals_the_demo_faults_and_prunes_an_orphan_only_when_enabled(
    pair: str, tmp_path: Path
) -> None:
    store, search, *transport = pair.split("/")
    world = World(store, search, tmp_path, n=60, release="1.7.0", transport=(transport or ["kafka"])[0])
    url, names = world.endpoints.search_url(world.search_name), f"{world.prefix}_*"
    text = readme_policy()
    policy = parse_policy(text, "README.md")
    now = datetime.now(UTC)
    try:
        lost = skip_index_write(world) | drop_mcl(world, 1) | soft_delete_lost(world, 3)
        world.consumer.reset_faults()
        (orphan,) = hard_delete(world, 2)
        before = raw_sources(url, names)
        young = heal(world, policy, tmp_path, now)  # seen by one scan: not persistent yet
        untouched = raw_sources(url, names)
        dry = heal(world, policy, tmp_path, now + timedelta(minutes=6), dry_run=True)
        undry = raw_sources(url, names)
        healed = heal(world, policy, tmp_path, now + timedelta(minutes=6))
        after = raw_sources(url, names)
        left = diverged(world)
        pruned = heal(world, parse_policy(text.replace("prune = false", "prune = true")), tmp_path,
                      now + timedelta(minutes=12))  # fmt: skip
        clean = world.scan()
    finally:
        world.close()
    assert young.repair is None and not young.healed and untouched == before
    assert young.exit_code == ExitCode.PERSISTENT and not young.refused, young.refused
    assert all("not persistent long enough" in x.why for x in young.left if x.finding.finding.urn != orphan)
    assert set(dry.healed_urns) == lost and undry == before and dry.exit_code == ExitCode.PERSISTENT
    assert dry.repair is not None and not dry.repair.applied and dry.journal is None  # said, not written
    assert set(healed.healed_urns) == lost and not healed.refused, [
        (c.finding.urn, c.subkind, c.evidence.reason) for c in healed.healed
    ]
    assert healed.verified and healed.journal, healed.repair
    assert changed(before, after) <= journaled_docs(tmp_path / "journal", healed.journal)
    kept = [x for x in healed.left if x.finding.finding.urn == orphan][0]
    assert "reported, not deleted" in kept.why and healed.exit_code == ExitCode.PERSISTENT
    assert list(left) == [orphan] and "orphan_document" in left[orphan], left  # reported, never deleted
    assert pruned.healed_urns == [orphan] and pruned.verified and pruned.exit_code == ExitCode.OK
    assert clean.exit_code == 0 and not clean.total(Verdict.DIVERGED), [str(c) for c in clean.findings][:5]


def _stall(world: World) -> set[str]:
    world.consumer.stall()
    for urn in _datasets(world, 6)[3:6]:
        world.writer.write(urn, "globalTags", _tags("while-stalled"))
    return set()


def _reindex(world: World) -> set[str]:
    zdr = zdr_of(world)
    zdr.copy()
    zdr.dual_write()
    return set()


GUARDED = {"restore": ("systemic_divergence", restore_snapshot), "stall": ("consumer", _stall),
           "reindex": ("platform_reindex", _reindex)}  # fmt: skip


@pytest.mark.parametrize("case", sorted(GUARDED))
def test_a_guard_stops_the_heal_and_pages_with_nothing_written(case: str, tmp_path: Path) -> None:
    """Each case also holds a lost index write the policy would heal at once: the guard, not the
    policy, is why nothing is written. The restore's heal runs as the command: exit 11, the guard
    in its JSON and its metrics."""
    guard, fault = GUARDED[case]
    world = World("postgres", "opensearch", tmp_path, n=60, release="1.7.0")
    url, names = world.endpoints.search_url(world.search_name), f"{world.prefix}_*"
    text = (
        readme_policy().replace("after_scans = 2", "after_scans = 1").replace('after = "5m"', 'after = "0s"')
    )
    (tmp_path / "heal.toml").write_text(text, encoding="utf-8")
    try:
        (lost,) = skip_index_write(world)
        world.consumer.reset_faults()
        fault(world)
        world.refresh()
        before = raw_sources(url, names)
        if case == "restore":
            args, env = _heal_cli(world, tmp_path), world.cli_env()
            done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
            said = json.loads(done.stdout)
            code, refused, healed = done.returncode, [r["guard"] for r in said["refused"]], said["healed"]
            metrics = (tmp_path / "heal.prom").read_text(encoding="utf-8")
        else:
            outcome = heal(world, parse_policy(text), tmp_path, datetime.now(UTC))
            code, refused, healed = outcome.exit_code, [r.guard for r in outcome.refused], outcome.healed_urns
            metrics = ""
        after = raw_sources(url, names)
    finally:
        world.consumer.reset_faults()
        world.close()
    assert code == ExitCode.HEAL_REFUSED, code
    assert refused == [guard] and healed == [], refused
    assert after == before and not (tmp_path / "journal").exists()  # nothing written, nothing journaled
    if case == "restore":
        assert f'auditor_heal_refused{{guard="{guard}"}} 1' in metrics and "auditor_heal_healed 0" in metrics
        assert 'auditor_heal_refused{guard="consumer"} 0' in metrics


def _heal_cli(world: World, tmp: Path) -> list[str]:
    return [sys.executable, "-m", "auditor.cli", "heal", "--policy", str(tmp / "heal.toml"), "--json",
            "--metrics-file", str(tmp / "heal.prom")]  # fmt: skip
