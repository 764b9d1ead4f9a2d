"""DataHub 1.7's search side against the real stack: a zero-downtime reindex caught mid-way."""

from __future__ import annotations

import subprocess
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
from faults import _datasets, _tags
from sqlalchemy import text
from test_rebuild import rebuild_cli
from world import World

from auditor.api import rebuild, triage
from auditor.core.model import Report, Selection, Verdict
from auditor.core.plan import RebuildOutcome
from auditor.core.triage import Boundary
from auditor.rebuild.request import RebuildRequest
from auditor.reports.json_report import to_dict
from auditor.reports.jsonl import FindingsWriter, findings, header_of
from sandbox.naming import entity_doc_id, entity_doc_id_v3, entity_index, entity_index_v3
from sandbox.zdr import ZeroDowntimeReindex

ROOT = Path(__file__).resolve().parents[2]


def repair(world: World, mode: str, report: Report, tmp: Path) -> RebuildOutcome:
    """`rebuild MODE --apply` of the report's findings, verified."""
    return rebuild(
        world.settings(),
        RebuildRequest(mode, findings=report.findings, apply=True, wait_seconds=60, state_dir=tmp),
    )


def zdr_of(world: World, live: str = "") -> ZeroDowntimeReindex:
    """DataHub's zero-downtime reindex of the world's dataset index (or of `live`, a V3 index), on
    its topics and group."""
    return ZeroDowntimeReindex(
        world.engine,
        world.search,
        world.consumer.updater,
        world.writer,
        "dataset",
        world.prefix,
        group=world.group,
        topics=world.topics,
        live=live,
    )


def diverged(report: Report) -> Counter[tuple[str, str]]:
    return Counter((c.finding.urn, c.subkind) for c in report.findings if c.verdict == Verdict.DIVERGED)


@pytest.mark.integration
@pytest.mark.parametrize("catch_up", ["done", "skipped"])
def test_a_zero_downtime_reindex_mid_way_then_swapped(catch_up: str, tmp_path: Path) -> None:
    """Mid-way: the scan audits what the alias serves (the next index misses the gap's writes and
    that is not divergence), says a reindex is running, and `--full` refuses to race it. After
    DataHub's swap the scan audits the new backing index: a catch-up that ran leaves nothing, a
    skipped one leaves the gap's writes stale there. Repaired, the re-scan is clean."""
    world = World("postgres", "opensearch", tmp_path, n=40, own_topics=True)
    try:
        dropped, *gap = _datasets(world, 4)
        world.writer.write(dropped, "globalTags", _tags("dropped"), drop_mcl=True)  # before T0
        assert world.consumer.drain(60)
        zdr = zdr_of(world)
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
        args += [
            "--topic",
            world.topics[0],
            "--timeseries-topic",
            world.topics[1],
            "--consumer-group",
            world.group,
        ]
        refused = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        mid = None
        if catch_up == "done":  # a targeted repair mid-way writes the next index too: it survives the swap
            mid = repair(world, "reindex", during, tmp_path)

        zdr.catch_up(skip=catch_up == "skipped")
        zdr.wait_for_lag()
        zdr.swap()
        after = world.scan()
        outcome = None
        if diverged(after):
            outcome = repair(world, "reindex", after, tmp_path)
        clean = world.scan()
    finally:
        world.close()
    assert set(diverged(during)) == {(dropped, "event_never_published")}, diverged(during)
    (running,) = [r for r in during.sections["reindex"] if r["alias"] == zdr.alias]
    assert running["phase"] == "in_progress" and running["next_index"] == zdr.next_index
    assert running["source"] == "upgrade state" and running["serving"] == [zdr.alias]
    assert any(zdr.next_index in w and "in progress" in w for w in during.warnings)
    assert refused.returncode == 3, refused.stdout[-800:] + refused.stderr[-800:]
    assert zdr.next_index in refused.stderr and "race" in refused.stderr, refused.stderr

    (swapped,) = [r for r in after.sections["reindex"] if r["alias"] == zdr.alias]
    assert swapped["phase"] == "swapped" and swapped["serving"] == [zdr.next_index]
    if mid is not None:
        assert mid.counts.get("written", 0) >= 2 and not mid.still_wrong and mid.exit_code == 0, mid.counts
        assert not diverged(after), diverged(after)  # the catch-up closed the gap, the repair was mirrored
    else:
        expected = {(dropped, "event_never_published")} | {(urn, "stale_fields") for urn in gap}
        assert set(diverged(after)) == expected, diverged(after)
        assert outcome and not outcome.failed and not outcome.still_wrong and outcome.exit_code == 0
    assert not diverged(clean) and clean.exit_code == 0, [str(c) for c in clean.findings][:5]


@pytest.mark.integration
def test_v2_and_v3_written_side_by_side_with_a_v3_only_fault(tmp_path: Path) -> None:
    """DataHub writing V2 and V3 (datasets and charts in one search group's index, the rest one
    index per type): a V3 document missing, stale or orphaned is a finding naming the V3 index,
    the report says V2 and V3 disagree, and a targeted reindex writes both back to clean."""
    groups = {"dataset": "primary", "chart": "primary"}
    world = World("mariadb", "elasticsearch", tmp_path, n=40, v3=groups, own_topics=True)
    try:
        primary = entity_index_v3("primary", world.prefix)
        missing, stale = _datasets(world, 2)
        ghost = missing.replace(",PROD)", "-ghost,PROD)")
        world.search.delete(primary, entity_doc_id_v3(missing))
        world.consumer.updater.v3_skip = {stale}  # its V3 write is lost, its V2 write is not
        world.writer.write(stale, "globalTags", _tags("only-in-v2"))
        assert world.consumer.drain(60)
        world.consumer.updater.v3_skip = set()
        world.search.put(primary, entity_doc_id_v3(ghost), {"urn": ghost, "_entityType": "dataset"})
        every = tmp_path / "every.jsonl"
        before = world.scan(findings_out=partial(FindingsWriter, every))
        walked = triage(world.settings(), stale, settle=0.5)
        outcome = repair(world, "reindex", before, tmp_path)
        after = world.scan()
    finally:
        world.close()
    wrong = {
        (c.finding.urn, c.subkind, c.finding.index) for c in before.findings if c.verdict == Verdict.DIVERGED
    }
    assert wrong == {
        (missing, "missing_document", primary),
        (stale, "stale_fields", primary),
        (ghost, "orphan_document", primary),
    }, wrong
    v3 = before.sections["v3"]
    assert v3["indices"]["dataset"] == primary and v3["indices"]["corpuser"].endswith("_corpuserindex_v3")
    assert v3["wrong_in_v3_only"] == sorted({missing, stale, ghost}) and not v3["wrong_in_v2_only"]
    assert any("V2 and V3 disagree on 3 entities" in w for w in before.warnings), before.warnings
    # the warning names the V3 index holding them, not every V3 index (corpuser's is clean)
    assert any(f"the V3 index only ({primary})" in w for w in before.warnings), before.warnings
    (gone,) = [c for c in before.findings if c.finding.urn == missing and c.finding.index == primary]
    assert gone.finding.details["doc_id"] == entity_doc_id_v3(missing)  # as stale and orphan say
    assert not outcome.failed and not outcome.still_wrong and outcome.exit_code == 0, outcome.still_wrong
    assert not diverged(after) and after.exit_code == 0, [str(c) for c in after.findings][:5]
    assert after.sections["v3"]["disagreeing"] == 0
    assert {(c.finding.index, c.subkind) for c in walked.findings} == {(primary, "stale_fields")}
    header = header_of(every)  # every finding, of both passes, in one file with the merged counts
    assert header is not None and header["counts"] == to_dict(before)["counts"]
    lines = [(c.finding.urn, c.subkind, c.finding.index) for c in findings(every, header)]
    assert wrong <= set(lines) and len(lines) == header["findings_total"] == sum(before.counts.values())


@pytest.mark.integration
def test_full_refuses_to_race_a_zero_downtime_reindex_of_the_v3_index(tmp_path: Path) -> None:
    """DataHub's zero-downtime reindex rebuilds V3 indices too (`<group>index_v3_<version>_<ms>`):
    while it copies the V3 index of the datasets' search group, `reindex --full --entity-type
    dataset` (which rebuilds that V3 index after the V2 one) is refused before it writes a thing,
    exit 3, naming the V3 index's next index; the V2 dataset index is left as it was."""
    world = World("postgres", "opensearch", tmp_path, n=20, v3={"dataset": "primary"}, own_topics=True)
    try:
        primary = entity_index_v3("primary", world.prefix)
        zdr = zdr_of(world, live=primary)
        zdr.copy()
        v2 = entity_index("dataset", world.prefix)
        indices_before = sorted(world.search.client.indices.get(index=f"{v2}*"))
        args, env = rebuild_cli(world, tmp_path, "reindex", "--full", "--entity-type", "dataset")
        args.append("--replace-concrete-index")  # nothing else would stop it
        refused = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        indices_after = sorted(world.search.client.indices.get(index=f"{v2}*"))
    finally:
        world.close()
    assert zdr.alias == primary and zdr.next_index.startswith(f"{primary}_1_7_0-1_")
    assert refused.returncode == 3, refused.stdout[-800:] + refused.stderr[-800:]
    assert zdr.next_index in refused.stderr and "race" in refused.stderr, refused.stderr
    assert indices_after == indices_before  # no fresh V2 index was started either


@pytest.mark.integration
def test_a_targeted_reindex_mid_way_writes_the_v3_next_index_too(tmp_path: Path) -> None:
    """While DataHub's zero-downtime reindex copies a V3 index, a write lands in the live V3 index
    only (the copy's snapshot is older): a targeted reindex of that entity writes its V3 document to
    the live index and to the next one, as DataHub's consumer does once it dual-writes, so the
    repair survives DataHub's alias swap."""
    world = World("postgres", "opensearch", tmp_path, n=20, v3={"dataset": "primary"}, own_topics=True)
    try:
        primary = entity_index_v3("primary", world.prefix)
        (urn,) = _datasets(world, 1)
        zdr = zdr_of(world, live=primary)
        zdr.copy()
        world.writer.write(urn, "globalTags", _tags("after-copy"))  # the live V3 index only
        assert world.consumer.drain(60)
        world.refresh()
        doc_id = entity_doc_id_v3(urn)
        before = world.search.mget(zdr.next_index, [doc_id])
        outcome = rebuild(
            world.settings(),
            RebuildRequest(
                "reindex", selection=Selection(urns=(urn,)), apply=True, wait_seconds=60, state_dir=tmp_path
            ),
        )
        world.search.refresh(zdr.next_index)
        after = world.search.mget(zdr.next_index, [doc_id])
        live = world.search.mget(primary, [doc_id])
    finally:
        world.close()
    assert "after-copy" not in str(before[doc_id]), before  # the copy's snapshot: older
    assert outcome.exit_code == 0 and not outcome.failed, outcome.notes
    assert "after-copy" in str(after[doc_id]) and "after-copy" in str(live[doc_id]), (after, live)
    assert after[doc_id].get("_entityType") == "dataset"


@pytest.mark.integration
def test_a_full_rebuild_rebuilds_the_v3_index_holding_the_type_too(tmp_path: Path) -> None:
    """`reindex --full --entity-type dataset` on a DataHub writing V2 and V3: the V2 dataset index
    and the V3 index of its search group (datasets and charts) each rebuilt into a fresh index,
    verified, swapped behind the live name; the V3 faults (missing, stale, orphaned, and a chart's
    in the same group) gone, the V3 index now an alias, the re-scan clean."""
    groups = {"dataset": "primary", "chart": "primary"}
    world = World("mariadb", "elasticsearch", tmp_path, n=40, v3=groups, own_topics=True)
    try:
        primary = entity_index_v3("primary", world.prefix)
        missing, stale = _datasets(world, 2)
        chart = world.of_type("chart")[0].urn
        ghost = missing.replace(",PROD)", "-ghost,PROD)")
        for urn in (missing, chart):
            world.search.delete(primary, entity_doc_id_v3(urn))
        world.consumer.updater.v3_skip = {stale}
        world.writer.write(stale, "globalTags", _tags("only-in-v2"))
        assert world.consumer.drain(60)
        world.consumer.updater.v3_skip = set()
        world.search.put(primary, entity_doc_id_v3(ghost), {"urn": ghost, "_entityType": "dataset"})
        world.refresh()
        before = world.scan()
        request = RebuildRequest(
            "reindex",
            selection=Selection(entity_types=("dataset",)),
            apply=True,
            full=True,
            replace_concrete=True,
            state_dir=tmp_path,
        )
        outcome = rebuild(world.settings(), request)
        after = world.scan()
        serving = world.search.client.indices.get_alias(name=primary)
        with world.engine.connect() as conn:  # soft-deleted entities too: they have rows
            rows = conn.execute(
                text(
                    "SELECT COUNT(DISTINCT urn) FROM metadata_aspect_v2 WHERE version = 0 "
                    "AND (urn LIKE 'urn:li:dataset:%' OR urn LIKE 'urn:li:chart:%')"
                )
            ).scalar()
    finally:
        world.close()
    wrong = {(c.finding.urn, c.finding.index) for c in before.findings if c.verdict == Verdict.DIVERGED}
    assert {(u, primary) for u in (missing, stale, ghost, chart)} <= wrong, wrong
    assert outcome.exit_code == 0 and not outcome.failed, outcome.notes
    assert any(note.startswith(f"{primary} (V3: chart, dataset) -> {primary}_") for note in outcome.notes)
    assert outcome.counts[f"entities {primary}"] == rows  # every entity of the group, from its rows
    assert not diverged(after) and after.exit_code == 0, [str(c) for c in after.findings][:5]
    assert [name.startswith(f"{primary}_") for name in serving] == [True]  # the live name: an alias


@pytest.mark.integration
def test_per_hook_consumer_group_feeds_the_evidence(tmp_path: Path) -> None:
    """UpdateIndicesHook in a group of its own (`<base>-<suffix>`), the auditor told the base only:
    the scan finds the group that consumes, judges a dropped MCL diverged and a write waiting
    behind the stalled hook group stalled, and a replay waits for that group and ends clean."""
    world = World("postgres", "elasticsearch", tmp_path, n=30, own_topics=True, group_suffix="updateIndices")
    hook_group = f"{world.group}-updateIndices"
    try:
        dropped, waiting = _datasets(world, 2)
        world.writer.write(dropped, "globalTags", _tags("dropped"), drop_mcl=True)
        assert world.consumer.drain(60)
        world.consumer.stall()
        world.writer.write(waiting, "globalTags", _tags("waiting"))
        before = world.scan(sample_window=3.0)
        walked = triage(world.settings(), waiting, settle=0.5)
        world.consumer.resume()
        assert world.consumer.drain(60)
        outcome = repair(world, "replay", before, tmp_path)
        after = world.scan()
    finally:
        world.close()
    assert before.consumer_group == hook_group and any(hook_group in w for w in before.warnings)
    consumed = next(s for s in walked.steps if s.boundary == Boundary.CONSUMED)
    assert consumed.facts["group"] == hook_group and f"group {hook_group} " in consumed.detail, consumed
    verdicts = {
        (c.finding.urn, c.verdict, c.subkind)
        for c in before.findings
        if c.finding.check == "index.stale-fields"
    }
    assert (dropped, Verdict.DIVERGED, "event_never_published") in verdicts, verdicts
    assert {v for u, v, _ in verdicts if u == waiting} == {Verdict.STALLED}, verdicts
    assert outcome.consumer_caught_up and not outcome.still_wrong and outcome.exit_code == 0
    assert not diverged(after) and after.exit_code == 0, [str(c) for c in after.findings][:5]


@pytest.mark.integration
def test_swapped_before_its_catch_up_the_gap_is_in_flight_until_it_runs(tmp_path: Path) -> None:
    """DataHub's newest order (copy, swap, then catch-up): between the swap and the catch-up the
    new backing index lacks the gap's writes; that is in flight (DataHub will RESTATE them), not
    divergence. Once the catch-up ran, the index is clean with no repair of ours."""
    world = World("mariadb", "opensearch", tmp_path, n=30, own_topics=True)
    try:
        gap = _datasets(world, 3)
        zdr = zdr_of(world)
        zdr.copy()
        for i, urn in enumerate(gap):
            world.writer.write(urn, "globalTags", _tags(f"gap-{i}"))
        assert world.consumer.drain(60)
        zdr.dual_write()
        zdr.swap()
        before = world.scan()
        zdr.catch_up()
        zdr.wait_for_lag()
        after = world.scan()
    finally:
        world.close()
    held = {(c.finding.urn, c.verdict) for c in before.findings if c.finding.check == "index.stale-fields"}
    assert held == {(urn, Verdict.IN_FLIGHT) for urn in gap}, held
    assert all("catch-up" in c.evidence.reason for c in before.findings if c.finding.urn in gap)
    assert not diverged(before) and before.exit_code == 0, diverged(before)
    (seen,) = before.sections["reindex"][:1]
    assert seen["phase"] == "swapped" and seen["catch_up"] == ""
    assert not after.findings and after.exit_code == 0, [str(c) for c in after.findings][:5]
