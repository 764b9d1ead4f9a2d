"""Triage's pure rules: reading a pasted urn, its near variants, and where a finding breaks."""

from __future__ import annotations

from urllib.parse import quote, quote_plus

import pytest

from auditor.core.model import Cause, Classified, Evidence, Finding, Kind, Verdict
from auditor.core.triage import Boundary, Status, Step, TriageResult, boundary_of
from auditor.platforms.datahub.urn_text import dataset_name, normalize, variants
from auditor.platforms.datahub.urns import UrnError

URN = "urn:li:dataset:(urn:li:dataPlatform:hive,db.my table,PROD)"


@pytest.mark.parametrize(
    ("text", "note"),
    [
        (URN, None),
        (f"  {URN}\n", "surrounding whitespace removed"),
        (f"'{URN}'", "quotes removed"),
        (f'"{URN}"', "quotes removed"),
        (quote(URN, safe=""), "URL-decoded"),
        (quote_plus(URN), "URL-decoded"),
        (
            f"https://datahub.example/dataset/{quote(URN, safe='')}/Schema?is_lineage_mode=false",
            "taken from the URL",
        ),
    ],
)
def test_a_urn_is_read_in_the_forms_people_paste(text: str, note: str | None) -> None:
    urn, notes = normalize(text)
    assert urn == URN
    assert (note in notes) if note else notes == []


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("dataset:foo", "urn:"),
        ("urn:li:dataset:(urn:li:dataPlatform:hive,db.t", "paren"),
        ("urn:li::x", "entity type"),
        ("https://datahub.example/search?q=orders", "no urn in the URL"),
    ],
)
def test_a_malformed_urn_is_refused_with_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(UrnError) as caught:
        normalize(text)
    assert says in str(caught.value)


def test_variants_cover_whitespace_encoding_and_case() -> None:
    spaced = "urn:li:dataset:(urn:li:dataPlatform:hive, db.t ,PROD)"
    assert variants(spaced)["urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"] == "whitespace"
    encoded = variants(URN)
    assert encoded["urn:li:dataset:(urn:li:dataPlatform:hive,db.my%20table,PROD)"] == "URL-encoded"
    assert variants("urn:li:dataset:(urn:li:dataPlatform:hive,db.my%20table,PROD)")[URN] == "URL-decoded"
    assert variants("urn:li:corpuser:JDoe")["urn:li:corpuser:jdoe"] == "case"
    assert URN not in variants(URN)
    assert dataset_name(URN) == "db.my table" and dataset_name("urn:li:corpuser:x") is None


def judged(
    kind: Kind, verdict: Verdict, subkind: str | None = None, mcl_found: bool | None = None
) -> Classified:
    f = Finding("c", kind, URN, "dataset", details={"platform": "datahub"})
    return Classified(f, verdict, subkind or kind.value, Evidence("r", mcl_found=mcl_found))


@pytest.mark.parametrize(
    ("c", "where"),
    [
        (judged(Kind.MALFORMED_ASPECT, Verdict.INVALID, "malformed_aspect"), Boundary.ROWS),
        (judged(Kind.STALE_FIELDS, Verdict.DIVERGED, Cause.EVENT_NEVER_PUBLISHED.value), Boundary.PUBLISHED),
        (judged(Kind.STALE_FIELDS, Verdict.STALLED, "stalled", True), Boundary.CONSUMED),
        (judged(Kind.STALE_FIELDS, Verdict.IN_FLIGHT, "in_flight", True), Boundary.CONSUMED),
        (judged(Kind.STALE_FIELDS, Verdict.IN_FLIGHT, "in_flight"), Boundary.DOCUMENT),  # within the grace
        (judged(Kind.ORPHAN_DOCUMENT, Verdict.DIVERGED), Boundary.DOCUMENT),
        (judged(Kind.FIELD_LEFT_BEHIND, Verdict.DIVERGED), Boundary.DOCUMENT),
        (judged(Kind.STALE_SYSTEM_METADATA, Verdict.DIVERGED), Boundary.SYSTEM_METADATA),
        (judged(Kind.ORPHAN_EDGE, Verdict.DIVERGED), Boundary.EDGES),
    ],
)
def test_each_finding_breaks_one_boundary(c: Classified, where: Boundary) -> None:
    assert boundary_of(c) == where


def test_the_verdict_and_exit_code_follow_the_worst_finding() -> None:
    rows = Step(Boundary.ROWS, Status.OK, "", {"present": True})
    assert (TriageResult("x", URN, steps=[rows]).verdict, TriageResult("x", URN, steps=[rows]).exit_code) == (
        "consistent",
        0,
    )
    unknown = TriageResult("x", URN, steps=[Step(Boundary.ROWS, Status.INFO, "", {"present": False})])
    assert (unknown.verdict, unknown.exit_code) == ("unknown", 7)  # its own code, not a usage error
    stalled = judged(Kind.STALE_FIELDS, Verdict.STALLED, "stalled", True)
    diverged = judged(Kind.ORPHAN_EDGE, Verdict.DIVERGED)
    assert TriageResult("x", URN, steps=[rows], findings=[stalled]).exit_code == 4
    both = TriageResult("x", URN, steps=[rows], findings=[stalled, diverged])
    assert (both.verdict, both.exit_code) == ("diverged", 1)
    outdated = judged(Kind.STALE_FIELDS, Verdict.OUTDATED, "outdated")
    only_old = TriageResult("x", URN, steps=[rows], findings=[outdated])
    assert (only_old.verdict, only_old.exit_code) == ("outdated", 5)  # as the scan: a reindex is due
    assert TriageResult("x", URN, steps=[rows], findings=[outdated, stalled]).exit_code == 4
    in_flight = judged(Kind.STALE_FIELDS, Verdict.IN_FLIGHT, "in_flight")
    assert TriageResult("x", URN, steps=[rows], findings=[in_flight]).exit_code == 0
    pending = Step(Boundary.CONSUMED, Status.PENDING, "")
    broken = Step(Boundary.EDGES, Status.BROKEN, "")
    assert TriageResult("x", URN, steps=[rows, pending, broken]).first_break is broken
    assert TriageResult("x", URN, steps=[rows, pending]).first_break is pending


def test_an_openmetadata_finding_is_said_in_its_own_words_on_the_document() -> None:
    """Its details have the documented shape ([{field, expected, actual, kind}]); a soft delete
    is said with OpenMetadata's note."""
    from auditor.triage.place import place

    def judged(kind: Kind, **details: object) -> Classified:
        found = Finding("openmetadata", kind, "6f2b0000-0000-4000-8000-000000000000", "table",
                        details={"platform": "openmetadata", **details})  # fmt: skip
        return Classified(found, Verdict.DIVERGED, kind.value, Evidence("seen twice past the grace"))

    changed = [{"field": "description", "expected": "new", "actual": "old", "kind": "mismatch"}]
    stale = judged(Kind.STALE_FIELDS, fields=changed)
    soft = judged(Kind.SOFT_DELETE_MISMATCH, note="deleted in the database, searchable as live")
    for c, says in ((stale, "description: expected 'new', found 'old'"), (soft, "searchable as live")):
        out = TriageResult("x", c.finding.urn, findings=[c])
        out.steps = [Step(Boundary.ROWS, Status.OK, "a row"), Step(Boundary.DOCUMENT, Status.OK, "a doc")]
        place(out)
        assert out.steps[1].status == Status.BROKEN and out.steps[0].status == Status.OK
        assert says in out.steps[1].problems[0], out.steps[1].problems
