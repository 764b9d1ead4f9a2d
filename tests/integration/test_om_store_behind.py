"""OpenMetadata, a store behind its index (a lagging replica, a restored database), against
PostgreSQL + OpenSearch 3 and MariaDB + Elasticsearch: a table's document holds a later version
than its row; the scan says the store is behind, and no repair writes the older row over it
unless asked (--prefer-store)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from test_om_profile import PAIRS, World, om_world

from auditor.api import rebuild
from auditor.core.model import Selection, Verdict
from auditor.core.plan import RebuildOutcome
from auditor.exit_codes import ExitCode
from auditor.rebuild.request import RebuildRequest

pytestmark = pytest.mark.integration

NEWER = "written after the backup the database was restored from"


def restore_older_row(w: World) -> Any:
    """A table described anew (row and document: version +0.1), then its row put back as it was."""
    table = w.catalog.of_type("table")[0]
    older = copy.deepcopy(w.server.row(table))
    w.server.update(table, description=NEWER)
    with w.server.store.engine.begin() as conn:
        w.server.store.update(conn, table.et, table.id, older, table.fqn_hash)
    w.refresh()
    return table


def repair(w: World, tmp: Path, **asked: Any) -> RebuildOutcome:
    return rebuild(w.settings(), RebuildRequest("reindex", apply=True, state_dir=tmp, **asked))


def description(w: World, table: Any) -> Any:
    w.refresh()
    return (w.server.doc(table) or {}).get("description")


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}+{p[1]}")
def test_a_document_newer_than_its_row_is_the_store_behind_and_kept_by_every_repair(
    pair: tuple[str, str], tmp_path: Path
) -> None:
    with om_world(*pair, tmp_path, n=20) as w:
        table = restore_older_row(w)
        report = w.scan(grace=0.0, use_state=False)
        behind = [c for c in report.findings if c.verdict == Verdict.STORE_BEHIND]
        assert [c.finding.urn for c in behind] == [table.id], [str(c) for c in report.findings]
        assert report.exit_code == ExitCode.STORE_BEHIND and not behind[0].finding.repairs
        assert "--prefer-store" in behind[0].evidence.reason
        assert report.sources["store_replica"] == "primary (not a replica)"  # the server asked
        by_id = Selection(urns=(table.id,))
        targeted = repair(w, tmp_path, selection=by_id)
        from_report = repair(w, tmp_path, findings=report.findings, include=frozenset(Verdict))
        kept = [description(w, table)]
        full = repair(
            w, tmp_path, selection=Selection(entity_types=("table",)), full=True, replace_concrete=True
        )
        kept.append(description(w, table))
        forced = repair(w, tmp_path, selection=by_id, prefer_store=True)
        forced_to = description(w, table)
        final = w.scan(grace=0.0, use_state=False)
    assert kept == [NEWER, NEWER], kept
    assert (
        targeted.exit_code == 0
        and from_report.exit_code == 0
        and not targeted.counts.get("documents written")
    )
    assert full.counts.get("kept: the store is behind") == 1 and any(
        "--prefer-store" in n for n in full.notes
    )
    assert forced.counts.get("documents written") == 1 and forced_to != NEWER
    assert final.exit_code == 0, [str(c) for c in final.findings]
