"""A federated report's repair: each finding to its store's repair, conflicts left to a person,
orphans re-homed, the outcomes merged (pure logic: the single-store repair is a recording fake)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from auditor.core.model import Classified, Evidence, Finding, Kind, Verdict
from auditor.core.plan import RebuildOutcome, RepairAction, RepairKind, RepairPlan
from auditor.errors import ConfigError
from auditor.rebuild.federation import home, merge, rebuild_federation, split
from auditor.rebuild.request import RebuildRequest
from auditor.settings import Settings, load_settings

A_URL = "postgresql+psycopg://datahub:pw-a@pg-a:5432/datahub"
B_URL = "mysql+pymysql://datahub:pw-b@mysql-b:3306/datahub"


def judged(urn: str, kind: Kind, store: str | None) -> Classified:
    finding = Finding("presence", kind, urn, "dataset", stores=tuple(store.split(",")) if store else ())
    return Classified(finding, Verdict.DIVERGED, kind.value, Evidence("seen"))


def nobody(urns: Sequence[str]) -> dict[str, list[str]]:
    return {u: [] for u in urns}


def test_each_finding_goes_to_the_store_it_rests_on() -> None:
    findings = [judged("urn:a1", Kind.STALE_FIELDS, "a"), judged("urn:b1", Kind.MISSING_DOCUMENT, "b")]
    parts = split(findings, ["a", "b"])
    assert {k: [c.finding.urn for c in v] for k, v in parts.by_store.items()} == {
        "a": ["urn:a1"],
        "b": ["urn:b1"],
    }
    assert parts.conflicted == [] and parts.orphans == []


def test_every_finding_of_a_conflicted_urn_is_left_to_a_person() -> None:
    findings = [
        judged("urn:both", Kind.STALE_FIELDS, "b"),  # the store that wrote last
        judged("urn:both", Kind.STORE_CONFLICT, "a,b"),
        judged("urn:a1", Kind.STALE_FIELDS, "a"),
    ]
    parts = split(findings, ["a", "b"])
    assert [c.finding.urn for c in parts.conflicted] == ["urn:both", "urn:both"]
    assert list(parts.by_store) == ["a"]


def test_an_orphan_is_looked_up_again_once_and_goes_where_its_rows_are_now() -> None:
    asked: list[list[str]] = []

    def holders(urns: Sequence[str]) -> dict[str, list[str]]:
        asked.append(list(urns))
        return {"urn:gone": [], "urn:now-b": ["b"], "urn:now-both": ["a", "b"]}

    findings = [
        judged("urn:gone", Kind.ORPHAN_DOCUMENT, None),
        judged("urn:gone", Kind.ORPHAN_EDGE, None),
        judged("urn:now-b", Kind.ORPHAN_DOCUMENT, None),
        judged("urn:now-both", Kind.ORPHAN_DOCUMENT, None),
        judged("urn:a1", Kind.STALE_FIELDS, "a"),
    ]
    parts = split(findings, ["a", "b"])
    assert [c.finding.urn for c in parts.by_store["a"]] == ["urn:a1"] and len(parts.orphans) == 4
    homed = home(parts.orphans, ["a", "b"], holders)
    assert asked == [["urn:gone", "urn:now-b", "urn:now-both"]]  # one question, each urn once
    by = {k: sorted(c.finding.urn for c in v) for k, v in homed.by_store.items()}
    assert by == {"a": ["urn:gone", "urn:gone"], "b": ["urn:now-b"]}
    assert [c.finding.urn for c in homed.conflicted] == ["urn:now-both"] and homed.moved == 1


def test_a_store_the_configuration_does_not_have_is_a_usage_error() -> None:
    with pytest.raises(ConfigError, match="'c'"):
        split([judged("urn:c1", Kind.STALE_FIELDS, "c")], ["a", "b"])


def federation() -> Settings:
    return load_settings(env={}, stores=[f"a={A_URL}", f"b={B_URL}"], search_url="http://search:9200")


def outcome(mode: str, urns: list[str], **counts: int) -> RebuildOutcome:
    plan = RepairPlan([RepairAction(RepairKind.REWRITE_DOCUMENT, u, "dataset") for u in urns])
    done = RebuildOutcome(mode, True, plan, rows=len(urns), counts=dict(counts), verified_urns=len(urns))
    done.checkpoint = f"/state/rebuild-{urns[0]}.json"
    return done


def test_each_store_is_repaired_alone_and_the_outcomes_merge() -> None:
    calls: list[tuple[str | None, tuple[str, ...], list[str]]] = []

    def single(settings: Settings, request: RebuildRequest) -> RebuildOutcome:
        url = settings.store_url.get_secret_value() if settings.store_url else None
        urns = [c.finding.urn for c in request.findings or ()]
        calls.append((url, tuple(e.name for e in settings.stores), urns))
        done = outcome(request.mode, urns, entities=len(urns))
        if "urn:b1" in urns:
            done.still_wrong = [judged("urn:b1", Kind.STALE_FIELDS, "b")]
        return done

    findings = [
        judged("urn:b1", Kind.MISSING_DOCUMENT, "b"),
        judged("urn:a1", Kind.STALE_FIELDS, "a"),
        judged("urn:a2", Kind.STALE_FIELDS, "a"),
        judged("urn:both", Kind.STORE_CONFLICT, "a,b"),
    ]
    request = RebuildRequest("reindex", findings=findings, apply=True)
    merged = rebuild_federation(federation(), request, single, holders=nobody)
    # the configured order, each alone (no federation left in its settings), its own findings
    assert calls == [(A_URL, (), ["urn:a1", "urn:a2"]), (B_URL, (), ["urn:b1"])]
    assert merged.counts == {"entities": 3} and merged.rows == 3 and merged.verified_urns == 3
    assert [c.finding.urn for c in merged.still_wrong] == ["urn:b1"] and merged.exit_code == 1
    assert merged.elsewhere == {"fix_row": 1}
    assert any(n.startswith("store a: 2 in scope; entities 2") for n in merged.notes)
    assert any("urn:both" in n and "person decides" in n for n in merged.notes)
    assert "store b: checkpoint /state/rebuild-urn:b1.json" in merged.notes


def test_a_federation_is_repaired_from_a_report_only_and_unsharded() -> None:
    def single(settings: Settings, request: RebuildRequest) -> RebuildOutcome:
        raise AssertionError("nothing may run")

    with pytest.raises(ConfigError, match="from a scan's report"):
        rebuild_federation(federation(), RebuildRequest("reindex", selection=None), single, nobody)
    shard = RebuildRequest("replay", findings=[judged("urn:a1", Kind.STALE_FIELDS, "a")], shard=(0, 2))
    with pytest.raises(ConfigError, match="--shard"):
        rebuild_federation(federation(), shard, single, nobody)


def test_merge_of_nothing_is_an_empty_clean_outcome() -> None:
    merged = merge("replay", True, [])
    assert merged.exit_code == 0 and merged.counts == {} and merged.consumer_caught_up is None


def test_the_consumer_caught_up_only_when_it_did_for_every_store() -> None:
    a, b = outcome("replay", ["urn:a1"]), outcome("replay", ["urn:b1"])
    a.consumer_caught_up, b.consumer_caught_up = True, False
    assert merge("replay", True, [("a", a), ("b", b)]).consumer_caught_up is False
    b.consumer_caught_up = True
    assert merge("replay", True, [("a", a), ("b", b)]).consumer_caught_up is True


def test_orphans_are_repaired_last_and_one_written_meanwhile_is_still_wrong() -> None:
    order: list[tuple[str | None, list[str]]] = []
    asked: list[list[str]] = []

    def single(settings: Settings, request: RebuildRequest) -> RebuildOutcome:
        url = settings.store_url.get_secret_value() if settings.store_url else None
        urns = [c.finding.urn for c in request.findings or ()]
        order.append((url, urns))
        return outcome(request.mode, urns, entities=len(urns))

    def holders(urns: Sequence[str]) -> dict[str, list[str]]:
        asked.append(list(urns))
        if len(asked) == 1:  # before: nobody holds it; after the deletion: store b does
            return {u: [] for u in urns}
        return {u: ["b"] for u in urns}

    findings = [judged("urn:orphan", Kind.ORPHAN_DOCUMENT, None), judged("urn:a1", Kind.STALE_FIELDS, "a")]
    request = RebuildRequest("reindex", findings=findings, apply=True)
    merged = rebuild_federation(federation(), request, single, holders=holders)
    assert order == [(A_URL, ["urn:a1"]), (A_URL, ["urn:orphan"])]  # the store's own first
    assert asked == [["urn:orphan"], ["urn:orphan"]]  # before and after the deletion
    assert [c.finding.urn for c in merged.still_wrong] == ["urn:orphan"] and merged.exit_code == 1
    assert any("written into store b" in w for w in merged.warnings)
    assert any(n.startswith("store a (orphans): 1 in scope") for n in merged.notes)


def test_an_orphan_the_first_store_wrote_meanwhile_is_not_called_still_wrong() -> None:
    """Its repair re-read the first store's rows before any deletion: it rewrote, not deleted."""
    asked: list[list[str]] = []

    def single(settings: Settings, request: RebuildRequest) -> RebuildOutcome:
        return outcome(request.mode, [c.finding.urn for c in request.findings or ()])

    def holders(urns: Sequence[str]) -> dict[str, list[str]]:
        asked.append(list(urns))
        return {u: ([] if len(asked) == 1 else ["a"]) for u in urns}

    request = RebuildRequest("reindex", findings=[judged("urn:o", Kind.ORPHAN_DOCUMENT, None)], apply=True)
    merged = rebuild_federation(federation(), request, single, holders=holders)
    assert len(asked) == 2 and merged.still_wrong == [] and merged.warnings == []
