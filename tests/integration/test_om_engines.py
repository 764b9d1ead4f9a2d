"""The OpenMetadata profile on Elasticsearch 8.x (what most OpenMetadata 1.x deployments run):
a scan that names each fault, a triage, the targeted reindex from its report, a clean re-scan,
then a `--full` rebuild that swaps a staged index in behind the aliases. Marked
`engines`: the 8.x node runs for that phase of scripts/test only (docs/compatibility.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_om_profile import _cli, _inject, _sel, om_world
from test_om_triage import triage

from auditor.api import rebuild
from auditor.rebuild.request import RebuildRequest

pytestmark = [pytest.mark.integration, pytest.mark.engines]


@pytest.mark.parametrize("store", ["postgres"])
def test_scan_triage_reindex_and_full_swap_on_elasticsearch_8(store: str, tmp_path: Path) -> None:
    with om_world(store, "elasticsearch8", tmp_path, n=40) as world:
        hit = _inject(world)
        report = tmp_path / "scan.json"
        scanned = _cli(world, "scan", "--grace", "0", "-f", "json", "-o", str(report))
        assert scanned.returncode == 1, scanned.stdout[-2000:] + scanned.stderr[-2000:]
        assert "elasticsearch 8." in report.read_text()
        found = {c.finding.urn: c for c in world.scan(grace=0.0, use_state=False).findings}
        expected = {
            "stale": "stale_fields",
            "soft_delete": "soft_delete_mismatch",
            "orphan": "orphan_document",
            "missing": "missing_document",
        }
        assert set(found) == {hit[fault] for fault in (*expected, "queued")}
        for fault, kind in expected.items():
            assert found[hit[fault]].finding.kind.value == kind, (fault, str(found[hit[fault]]))
        code, data, said = triage(world, hit["stale"], "--format", "json", "--grace", "0")
        assert code == 1 and data["subkind"] == "stale_fields", said
        assert data["first_break"] == {"boundary": "document", "status": "broken"}
        applied = _cli(world, "rebuild", "reindex", "--from-report", str(report), "--include",
                       "diverged,in_flight", "--apply", alias=None)  # fmt: skip
        assert applied.returncode == 0, applied.stdout[-2000:] + applied.stderr[-2000:]
        assert "verified" in applied.stdout and applied.stderr == "", applied.stderr
        after = world.scan(grace=0.0, use_state=False)
        assert after.findings == [] and after.exit_code == 0, [str(c) for c in after.findings]
        live = f"{world.alias}_table_search_index"
        full = rebuild(
            world.settings(),
            RebuildRequest(
                "reindex", selection=_sel(types=("table",)), apply=True, full=True, replace_concrete=True
            ),
        )
        assert full.exit_code == 0, full.failed
        behind = world.search.client.indices.get_alias(index=live)
        (fresh,) = behind.body if hasattr(behind, "body") else behind
        assert fresh.startswith(f"{live}_rebuild_"), fresh
        swapped = world.scan(grace=0.0, use_state=False)
        assert swapped.findings == [] and swapped.exit_code == 0, [str(c) for c in swapped.findings]
