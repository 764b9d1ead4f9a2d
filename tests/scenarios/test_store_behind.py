"""A store behind its index (a lagging replica, a restored database) against the real stack: the
scan says so, and no repair writes the older rows over the newer documents unless asked."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from world import World

from auditor.api import rebuild, triage
from auditor.core.model import Report, Selection, Verdict
from auditor.core.plan import RebuildOutcome
from auditor.exit_codes import ExitCode
from auditor.rebuild.request import RebuildRequest
from sandbox.naming import (
    ASPECT_TABLE,
    entity_doc_id,
    entity_index,
    system_metadata_doc_id,
    system_metadata_index,
)

NEWER = "written after the backup the database was restored from"


def restore_older_row(world: World) -> tuple[str, str]:
    """A dataset whose description changed (row, MCL, index: a newer run), then its row put back as
    it was (the database restored from a backup taken before): (its urn, the newer description)."""
    entity = next(e for e in world.of_type("dataset") if dict(e.aspects).get("datasetProperties"))
    where = {"urn": entity.urn, "aspect": "datasetProperties"}
    with world.engine.connect() as conn:
        older = conn.execute(
            text(
                f"SELECT metadata, systemmetadata, createdon FROM {ASPECT_TABLE} "
                "WHERE urn = :urn AND aspect = :aspect AND version = 0"
            ),
            where,
        ).one()
    props = {**dict(dict(entity.aspects)["datasetProperties"]), "description": NEWER}
    world.writer.write(entity.urn, "datasetProperties", props, system_metadata={"runId": "ingest-newer"})
    assert world.consumer.drain(60)
    with world.engine.begin() as conn:  # the restore: version 0 as the backup held it
        conn.execute(
            text(
                f"UPDATE {ASPECT_TABLE} SET metadata = :m, systemmetadata = :s, createdon = :c "
                "WHERE urn = :urn AND aspect = :aspect AND version = 0"
            ),
            {**where, "m": older[0], "s": older[1], "c": older[2]},
        )
    world.refresh()
    return entity.urn, NEWER


def backfill(world: World, not_this: str) -> str:
    """What DataHub's backfill steps leave after an upgrade (datahub-upgrade's AbstractMCLStep): an
    aspect's MCL re-emitted as an UPSERT of the row's own content, with the step's runId and the
    run's time, the row untouched. The consumer's only visible write is the system-metadata doc."""
    entity, aspect = next(
        (e, name)
        for e in world.of_type("dataset")
        if e.urn != not_this
        for name in ("datasetProperties", "globalTags", "ownership", "status")
        if name in dict(e.aspects)
    )
    index = system_metadata_index(world.prefix)
    doc_id = system_metadata_doc_id(entity.urn, aspect)
    step = {"runId": "upgrade-BackfillDatasetProperties-v1", "lastUpdated": int(time.time() * 1000) + 5000}
    world.search.upsert(index, doc_id, step)
    world.search.refresh(index)
    return entity.urn


def field(world: World, urn: str, name: str) -> Any:
    index = entity_index("dataset", world.prefix)
    world.search.refresh(index)
    return (world.search.get(index, entity_doc_id(urn)) or {}).get(name)


def behind(report: Report) -> set[str]:
    return {c.finding.urn for c in report.findings if c.verdict == Verdict.STORE_BEHIND}


@pytest.mark.integration
@pytest.mark.parametrize("pair", ["postgres/opensearch", "mariadb/elasticsearch"])
def test_a_document_newer_than_its_row_is_the_store_behind_and_no_repair_writes_over_it(
    pair: str, tmp_path: Path
) -> None:
    world = World(*pair.split("/"), tmp_path, n=16)
    try:
        urn, newer = restore_older_row(world)
        re_emitted = backfill(world, urn)
        report = world.scan()
        assert behind(report) == {urn}, [str(c) for c in report.findings]
        # a re-emission of the row's own content (issue 53): no finding at all, store_behind or other
        assert not [c for c in report.findings if c.finding.urn == re_emitted], report.findings
        assert not [c for c in report.findings if c.verdict == Verdict.DIVERGED], report.findings
        assert report.exit_code == ExitCode.STORE_BEHIND
        assert report.sources["store_replica"] == "primary (not a replica)"  # the server asked
        (found,) = [c for c in report.findings if c.verdict == Verdict.STORE_BEHIND]
        assert found.finding.details["writes"][0]["index_run_id"] == "ingest-newer"
        assert "--prefer-store" in found.evidence.reason and not found.finding.repairs
        walked = triage(world.settings(), urn, grace=300.0, settle=0.5)
        assert (walked.verdict, walked.exit_code) == ("store_behind", ExitCode.STORE_BEHIND)
        assert walked.first_break is not None and walked.first_break.boundary == "rows"
        by_urn = Selection(urns=(urn,))
        origin = field(world, urn, "origin")  # datasetKey's: an aspect the store is not behind on
        world.search.upsert(entity_index("dataset", world.prefix), entity_doc_id(urn), {"origin": "QA"})
        asked = {
            "reindex --urn": ("reindex", {"selection": by_urn}),
            "replay --urn": ("replay", {"selection": by_urn}),
            "reindex --from-report": ("reindex", {"findings": report.findings, "include": ALL}),
            "replay --from-report": ("replay", {"findings": report.findings, "include": ALL}),
        }
        outcomes, kept = {}, {}
        for name, (mode, what) in asked.items():
            outcomes[name] = repair(world, mode, tmp_path, **what)
            assert world.consumer.drain(60)
            kept[name] = (field(world, urn, "description"), field(world, urn, "origin"))
        full = repair(
            world,
            "reindex",
            tmp_path,
            selection=Selection(entity_types=("dataset",)),
            full=True,
            replace_concrete=True,
        )
        after_full = field(world, urn, "description")
        forced = repair(world, "reindex", tmp_path, selection=by_urn, prefer_store=True)
        forced_to = field(world, urn, "description")
        final = world.scan()
    finally:
        world.close()
    # every repair kept the newer description; the stale field of the other aspect was repaired
    assert kept == dict.fromkeys(asked, (newer, origin)), kept
    for name in ("reindex --urn", "replay --urn"):
        assert outcomes[name].counts.get("kept: the store is behind") == 1, (name, outcomes[name].counts)
        assert any("--prefer-store" in n and urn in n for n in outcomes[name].notes), outcomes[name].notes
        assert outcomes[name].exit_code == 0 and outcomes[name].verified_urns == 0
    assert outcomes["replay --urn"].counts.get("produced"), "the aspects the store is not behind on"
    assert after_full == newer and any("--prefer-store" in n for n in full.notes), full.notes
    assert full.exit_code == 0
    # asked: the store's state wins (a restored database), and the index agrees with it again
    assert forced_to != newer and not forced.counts.get("kept: the store is behind")
    assert not behind(final) and final.exit_code == 0, [str(c) for c in final.findings]


ALL = frozenset(Verdict)


def repair(world: World, mode: str, tmp: Path, **asked: Any) -> RebuildOutcome:
    """`rebuild <mode> --apply` of what is asked (the replay's wait short: nothing is applied late)."""
    request = RebuildRequest(mode, apply=True, wait_seconds=20, state_dir=tmp, **asked)
    return rebuild(world.settings(), request)
