"""A store behind its index (a lagging replica, a restored database) against the real stack: the
scan says so, and no repair writes the older rows over the newer documents unless asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from world import World

from auditor.core.model import Report, Verdict
from auditor.exit_codes import ExitCode
from sandbox.naming import ASPECT_TABLE, entity_doc_id, entity_index

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


def description(world: World, urn: str) -> Any:
    index = entity_index("dataset", world.prefix)
    world.search.refresh(index)
    return (world.search.get(index, entity_doc_id(urn)) or {}).get("description")


def behind(report: Report) -> set[str]:
    return {c.finding.urn for c in report.findings if c.verdict == Verdict.STORE_BEHIND}


@pytest.mark.integration
@pytest.mark.parametrize("pair", ["postgres/opensearch", "mariadb/elasticsearch"])
def test_a_document_newer_than_its_row_is_the_store_behind_and_no_repair_writes_over_it(
    pair: str, tmp_path: Path
) -> None:
    world = World(*pair.split("/"), tmp_path, n=12)
    try:
        urn, newer = restore_older_row(world)
        report = world.scan()
        assert behind(report) == {urn}, [str(c) for c in report.findings]
        assert not [c for c in report.findings if c.verdict == Verdict.DIVERGED], report.findings
        assert report.exit_code == ExitCode.STORE_BEHIND
    finally:
        world.close()
