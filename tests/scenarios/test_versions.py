"""Every DataHub release users run: documents judged by the rules of the release that wrote them.

Each world is a deployment of one release (the sandbox indexes by that release's own wheel, read
apart from the auditor): its upgrade rows, a telemetry client id and the global settings (types
DataHub writes no document for), then the catalog. Against the real stack:
- a catalog indexed as DataHub 1.0.0 (PostgreSQL + OpenSearch) and as 1.4.0 (MariaDB +
  Elasticsearch) scans with exactly its injected faults, and the internal rows are never a
  finding, even beside empty indices of their types;
- a wrong --platform-version is a warning naming what the data says;
- an upgraded deployment (1.0.0 documents, then 1.7.0 writes) reports its older documents as
  their own class (exit 5, per type, field and release), and the reindex it names makes the
  next scan clean.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from world import World

from auditor.api import rebuild, scan, triage
from auditor.core.model import Report, Selection, Verdict
from auditor.rebuild.request import RebuildRequest
from auditor.scan.options import ScanOptions
from sandbox.search import ENTITY_MAPPINGS
from sandbox.versions import write_deployment

pytestmark = pytest.mark.integration

INTERNAL = ("telemetry", "globalSettings", "dataHubUpgrade")


def _scan(world: World, **settings: Any) -> Report:
    world.refresh()
    options = ScanOptions(grace=300.0, settle=0.5, sample_window=2.0)
    return scan(world.settings(**settings), Selection(), options)


def _faults(world: World) -> dict[str, str]:
    """A dropped MCL, a skipped index write's twin (a lost soft delete), a hard delete: urn -> kind."""
    datasets = [e.urn for e in world.of_type("dataset")]
    tags = {"tags": [{"tag": f"urn:li:tag:{world.prefix}-pii"}]}
    world.writer.write(datasets[0], "globalTags", tags, drop_mcl=True)
    world.writer.write(datasets[1], "status", {"removed": True}, drop_mcl=True)
    gone = world.of_type("chart")[0].urn
    assert world.writer.hard_delete_rows(gone) > 0
    assert world.consumer.drain(60)
    return {datasets[0]: "stale_fields", datasets[1]: "soft_delete_mismatch", gone: "orphan_document"}


def _diverged(report: Report) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for c in report.findings:
        if c.verdict == Verdict.DIVERGED:
            out.setdefault(c.finding.urn, set()).add(c.finding.kind.value)
    return out


@pytest.mark.parametrize(
    ("release", "store", "engine", "at_least"),
    [("1.0.0", "postgres", "opensearch", "1.0.0"), ("1.4.0", "mariadb", "elasticsearch", "1.4.0")],
)
def test_a_catalog_indexed_as_an_older_release_shows_only_its_faults(
    tmp_path: Path, release: str, store: str, engine: str, at_least: str
) -> None:
    world = World(store, engine, tmp_path, n=40, release=release)
    try:
        for etype in INTERNAL:  # empty indices of the types DataHub writes no document for
            world.search.ensure_index(f"{world.prefix}_{etype.lower()}index_v2", ENTITY_MAPPINGS)
        clean = _scan(world)
        injected = _faults(world)
        broken = _scan(world)
        wrong = _scan(world, platform_version="1.0.0") if release == "1.4.0" else None
    finally:
        world.close()
    assert clean.exit_code == 0, [str(c) for c in clean.findings][:5]
    assert clean.findings == []
    assert f"at least {at_least}" in clean.sources["platform_version"]
    assert all(clean.entities.get(t) for t in INTERNAL), clean.entities  # the rows were read
    found = _diverged(broken)
    assert set(found) == set(injected), found
    for urn, kind in injected.items():
        assert kind in found[urn], (urn, found[urn])
    assert not [c for c in broken.findings if c.finding.entity_type in INTERNAL]
    assert not [c for c in broken.findings if c.verdict == Verdict.OUTDATED]
    assert broken.exit_code == 1
    if wrong is not None:  # 1.4.0's documents judged as 1.0.0's: the flag contradicts the data
        said = " ".join(wrong.warnings)
        assert "--platform-version 1.0.0, but the data says at least DataHub 1.4.0" in said, said
        assert "does not write" in said and "1.0.0" in said, said


class _Gms(BaseHTTPRequestHandler):
    version = "v1.7.0"

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = json.dumps({"versions": {"acryldata/datahub": {"version": self.version, "commit": "x"}}})
        self.send_response(200 if self.path == "/config" else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


def test_the_release_is_read_from_gms_and_a_wrong_flag_is_a_warning(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Gms)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    gms = f"http://127.0.0.1:{server.server_address[1]}"
    world = World("postgres", "elasticsearch", tmp_path, n=30, release="1.7.0")
    try:
        by_gms = _scan(world, gms_url=gms)
        by_rows = _scan(world)
        flagged = _scan(world, platform_version="1.4.0")
    finally:
        world.close()
        server.shutdown()
    assert by_gms.exit_code == 0 and by_rows.exit_code == 0, [str(c) for c in by_rows.findings][:5]
    assert by_gms.sources["platform_version"].startswith("1.7.0 (GMS /config (v1.7.0)")
    assert "BuildIndicesIncremental_v1.7.0-0" in by_rows.sources["platform_version"]
    said = " ".join(flagged.warnings)
    assert "--platform-version 1.4.0, but the data says DataHub 1.7.0" in said, said


def test_an_upgraded_deployment_reports_its_older_documents_and_the_reindex_clears_them(
    tmp_path: Path,
) -> None:
    world = World("postgres", "opensearch", tmp_path, n=60, release="1.0.0")
    try:
        # the upgrade: DataHub 1.7.0's system update, then its consumer writes 1.7.0's fields;
        # a few entities are written again (their documents gain the new fields), the rest not
        write_deployment(world.writer, "1.7.0")
        world.consumer.updater.release = "1.7.0"
        rewritten = []
        for e in world.of_type("chart")[:3] + world.of_type("dataset")[:3]:
            for aspect, value in e.aspects:
                if aspect in ("chartInfo", "datasetProperties"):  # an edit: a new description
                    edited = value.to_obj() if hasattr(value, "to_obj") else dict(value)
                    edited["description"] = f"edited after the upgrade ({e.urn})"
                    world.writer.write(e.urn, aspect, edited)
                    rewritten.append(e.urn)
        assert rewritten and world.consumer.drain(60)
        before = _scan(world)
        # on call, one of them triaged: the same verdict, and the scan's exit code for it (5)
        old_urn = next(c.finding.urn for c in before.findings if c.verdict == Verdict.OUTDATED)
        looked = triage(world.settings(), old_urn, settle=0.0)
        lines = before.sections["outdated"]
        types = sorted({line["entity_type"] for line in lines})
        for etype in types:  # the repair each line names: a reindex of its type
            assert all(
                line["repair"] == f"auditor rebuild reindex --entity-type {etype} --index-prefix "
                f"{world.prefix} --apply"
                for line in lines
                if line["entity_type"] == etype
            )
            done = rebuild(
                world.settings(),
                RebuildRequest(
                    "reindex", selection=Selection(entity_types=(etype,)), apply=True, state_dir=tmp_path
                ),
            )
            assert not done.failed, done.failed
        after = _scan(world)
    finally:
        world.close()
    outdated = [c for c in before.findings if c.verdict == Verdict.OUTDATED]
    assert outdated, [str(c) for c in before.findings][:5]
    assert before.exit_code == 5, [str(c) for c in before.findings if c.verdict != Verdict.OUTDATED][:5]
    assert (looked.verdict, looked.exit_code) == ("outdated", 5), [str(c) for c in looked.findings]
    assert not [c for c in before.findings if c.verdict == Verdict.DIVERGED]
    assert not {c.finding.urn for c in outdated} & set(rewritten)  # written by 1.7.0: not older
    assert {c.finding.details["judged_by"] for c in outdated} == {"1.7.0"}
    assert "chart" in types
    chart_fields = {line["field"] for line in lines if line["entity_type"] == "chart"}
    assert "lastModifiedAt" in chart_fields, lines
    counted = sum(line["documents"] for line in lines if line["field"] == "lastModifiedAt")
    assert counted == sum("lastModifiedAt" in c.finding.details["missing"] for c in outdated)
    assert all(line["native"].startswith("datahub-upgrade -u RestoreIndices") for line in lines)
    assert after.exit_code == 0, [str(c) for c in after.findings][:5]
    assert after.findings == [] and after.sections["outdated"] == []
