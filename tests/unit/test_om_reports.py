"""OpenMetadata findings in the reports: its own repair commands, quoted; DataHub's untouched."""

from __future__ import annotations

from auditor.checks.openmetadata import check
from auditor.core.model import Classified, Evidence, Verdict
from auditor.platforms.openmetadata.naming import entity
from auditor.platforms.openmetadata.records import OmDoc, OmRow
from auditor.reports.commands import finding_commands, finding_rebuild, repair_commands

TABLE = entity("table")
A = "aaaaaaaa-0000-4000-8000-000000000000"


def _diverged(row: OmRow | None, doc: OmDoc | None) -> Classified:
    found = check(TABLE, "prod_table_search_index", row, doc)
    assert found is not None
    return Classified(found, Verdict.DIVERGED, found.kind.value, Evidence("x", kafka=False))


def test_an_orphan_is_a_delete_of_its_doc_and_a_stale_doc_a_reindex_with_the_platform_flag() -> None:
    orphan = _diverged(None, OmDoc("it's;rm -rf", "prod_table_search_index", {}))
    (delete,) = finding_commands(orphan, group="")
    assert delete.startswith("curl -X DELETE \"$SEARCH_URL\"/'prod_table_search_index'/_doc/")
    assert delete.split("/_doc/")[1].startswith("'it'\\''s;rm -rf'")  # quoted for a shell
    data = {"id": A, "name": "t", "fullyQualifiedName": "s.d.c.t", "version": 0.2, "updatedAt": 5}
    stale = _diverged(OmRow(A, data, 5, False), OmDoc(A, "i", {**data, "version": 0.1}))
    assert finding_rebuild(stale) == f"auditor rebuild reindex --platform openmetadata --urn '{A}' --apply"
    (native,) = finding_commands(stale, group="")
    assert "SearchIndexingApplication" in native and '{"entities":["table"]}' in native
    lines = repair_commands([orphan, stale], group="")
    assert lines[0].startswith("auditor rebuild reindex --platform openmetadata --urn")
    assert "# or with OpenMetadata's own tools:" in lines and not any("datahub" in x for x in lines)


def test_an_in_flight_finding_needs_no_command() -> None:
    found = check(TABLE, "i", None, OmDoc(A, "i", {}))
    assert found is not None
    c = Classified(found, Verdict.IN_FLIGHT, "in_flight", Evidence("x", kafka=False))
    assert finding_rebuild(c) is None and finding_commands(c, group="") == []


def test_an_openmetadata_report_says_why_its_verdicts_rest_on_time_and_keeps_datahub_out() -> None:
    from datetime import UTC, datetime

    from auditor.core.model import Report
    from auditor.reports import json_report, markdown

    data = {"id": A, "name": "t", "fullyQualifiedName": "s.d.c.t", "version": 0.2, "updatedAt": 5}
    stale = _diverged(OmRow(A, data, 5, False), OmDoc(A, "i", {**data, "version": 0.1}))
    report = Report(started_at=datetime.now(UTC), sources={"platform": "openmetadata"}, findings=[stale])
    text = markdown.render(report)
    assert "OpenMetadata writes search synchronously" in text and "Kafka not available" not in text
    (entry,) = json_report.to_dict(report)["findings"]
    assert "SearchIndexingApplication" in entry["repair_platform"] and entry["repair_datahub"] is None
    datahub = Report(started_at=datetime.now(UTC))
    assert "Kafka not available" in markdown.render(datahub)
