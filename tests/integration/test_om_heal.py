"""`auditor heal` on OpenMetadata against the real servers: a lost index write healed by the
policy (journaled, the re-scan clean of it), an orphan reported until pruning is enabled."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from om_world import om_world

from auditor.core.model import Verdict
from auditor.exit_codes import ExitCode
from auditor.heal.loop import heal_once
from auditor.heal.policy import parse_policy
from auditor.scan.options import ScanOptions
from sandbox.openmetadata.faults import Fault
from sandbox.openmetadata.indices import refresh_all
from sandbox.openmetadata.reindex import Reindex

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scenarios"))
from undo_checks import changed, journaled_docs, raw_sources  # noqa: E402

pytestmark = pytest.mark.integration

POLICY = """\
[heal]
enabled = true
prune = false

[guards]
max_share = 0.2

[[rule]]
kind = "*"
action = "heal"
"""


@pytest.mark.parametrize("pair", [("postgres", "opensearch3"), ("mariadb", "elasticsearch")], ids="+".join)
def test_the_policy_heals_an_openmetadata_lost_write_and_prunes_an_orphan_only_when_enabled(
    pair: tuple[str, str], tmp_path: Path
) -> None:
    with om_world(*pair, tmp_path, prefix="omheal", n=30, seeded=5, visibility=0.5) as w:
        tables = [e for e in w.server.entities.values() if e.type == "table"]
        w.server.update(tables[0], description="changed, not indexed", fault=Fault.STALE_UPDATE)
        w.server.hard_delete(tables[2], fault=Fault.ORPHAN_DOC)
        refresh_all(w.search, w.alias)
        names, options = f"{w.alias}_*", ScanOptions(grace=0.0)
        policy, pruning = parse_policy(POLICY), parse_policy(POLICY.replace("prune = false", "prune = true"))
        before = raw_sources(w.search_url, names)
        healed = heal_once(w.settings(), policy, options=options, state_dir=tmp_path)
        after = raw_sources(w.search_url, names)
        kept = heal_once(w.settings(), policy, options=options, state_dir=tmp_path)  # the orphan seen again
        unpruned = raw_sources(w.search_url, names)
        pruned = heal_once(w.settings(), pruning, options=options, state_dir=tmp_path)
        refresh_all(w.search, w.alias)
        clean = w.scan()
    assert not healed.refused and not kept.refused and not pruned.refused, healed.refused + kept.refused
    assert healed.healed_urns == [tables[0].id] and healed.verified and healed.journal, healed.left
    assert changed(before, after) and changed(before, after) <= journaled_docs(
        tmp_path / "journal", healed.journal
    )
    # the orphan, diverged once a scan has seen it before, is reported and left as it is
    assert kept.repair is None and unpruned == after and kept.exit_code == ExitCode.PERSISTENT
    assert {x.finding.finding.urn for x in kept.left} == {tables[2].id}
    assert all("not deleted" in x.why for x in kept.left)
    assert pruned.healed_urns == [tables[2].id] and pruned.exit_code == ExitCode.OK, pruned.left
    assert not clean.total(Verdict.DIVERGED), [str(c) for c in clean.findings][:5]


def test_openmetadatas_running_reindex_job_stops_the_heal_with_nothing_written(tmp_path: Path) -> None:
    """A lost write of a pipeline (a type the job does not touch: its finding stays diverged) the
    policy would heal at once; the job's running over the tables is why nothing is written."""
    with om_world("postgres", "opensearch3", tmp_path, prefix="omhealx", n=30, seeded=5, visibility=0.5) as w:
        (pipeline, *_) = [e for e in w.server.entities.values() if e.type == "pipeline"]
        w.server.update(pipeline, description="changed, not indexed", fault=Fault.STALE_UPDATE)
        job = Reindex(w.server, ["table"], batch_size=5, recreate=False)
        job.start()
        job.step(1)
        refresh_all(w.search, w.alias)
        names = f"{w.alias}_*"
        before = raw_sources(w.search_url, names)
        refused = heal_once(
            w.settings(), parse_policy(POLICY), options=ScanOptions(grace=0.0), state_dir=tmp_path
        )
        after = raw_sources(w.search_url, names)
        job.finish()
    assert refused.exit_code == ExitCode.HEAL_REFUSED and [r.guard for r in refused.refused] == [
        "platform_reindex"
    ]
    assert job.job_id in refused.refused[0].why and not refused.healed and refused.repair is None
    assert pipeline.id in {x.finding.finding.urn for x in refused.left}  # it would have been healed
    assert after == before and not (tmp_path / "journal").exists()
