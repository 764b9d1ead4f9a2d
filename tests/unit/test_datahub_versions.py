"""Judging documents by the release that wrote them: detection, the rules, the mapping witness,
documents an older release wrote, and how reports carry them. No services: the pure logic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fakes import rows

from auditor.checks.datahub import BUILTIN_CHECKS, CheckContext
from auditor.core.classify import classify
from auditor.core.model import Kind, Report, Verdict
from auditor.core.records import DYNAMIC, SearchDoc
from auditor.errors import ConfigError
from auditor.platforms.datahub.documents.entity import JoinedEntity
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.sections import merge_outdated, outdated_groups
from auditor.platforms.datahub.versions.detect import choose, from_upgrades
from auditor.platforms.datahub.versions.rules import Release, catalog
from auditor.platforms.datahub.versions.view import IndexRules

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CHART = "urn:li:chart:(looker,c1)"
INFO = {
    "title": "Revenue",
    "description": "a chart",
    "lastModified": {
        "created": {"time": 1, "actor": "urn:li:corpuser:a"},
        "lastModified": {"time": 2, "actor": "urn:li:corpuser:a"},
    },
}


def _row(step: str, at: datetime, state: str = "SUCCEEDED") -> tuple[str, str, datetime]:
    return (f"urn:li:dataHubUpgrade:{step}", '{"state": "' + state + '"}', at)


def test_the_release_from_the_upgrade_rows() -> None:
    rows_ = [
        _row("dashboard-info-v1", T0),
        _row("BuildIndicesIncremental_v1.6.0-0", T0 + timedelta(days=1)),
        _row("BuildIndicesIncremental_v1.7.0.1-3", T0 + timedelta(days=9)),
        _row("IncrementalReindexCatchUp_v1.7.0.1-3", T0 + timedelta(days=9)),
    ]
    found = from_upgrades(rows_)
    assert found is not None and found.exact
    assert found.release == Release.parse("1.7.0.1") and "BuildIndicesIncremental_v1.7.0.1-3" in found.how
    assert found.history == ("1.6.0", "1.7.0.1")
    only_steps = from_upgrades([_row("dashboard-info-v1", T0), _row("mlmodel-key-v1", T0)])
    assert only_steps is not None and not only_steps.exact and only_steps.release == Release.parse("1.4.0")
    failed = from_upgrades([_row("mlmodel-key-v1", T0, "FAILED")])
    assert failed is None
    assert from_upgrades([_row("bootstrap-ownership-types-v1", T0)]) is None


def test_choosing_the_rules_and_what_is_said() -> None:
    c = catalog()
    exact = [_row("BuildIndicesIncremental_v1.4.0-0", T0)]
    chosen = choose(c, override=None, upgrade_rows=exact)
    assert chosen.rules.release == "1.4.0" and not chosen.warnings
    nothing = choose(c, override=None)
    assert nothing.rules is c.newest and "was not found" in nothing.warnings[0]
    flag = choose(c, override="1.0.0", upgrade_rows=exact)
    assert flag.rules.release == "1.0.0"
    assert "--platform-version 1.0.0, but the data says DataHub 1.4.0" in flag.warnings[0]
    at_least = choose(c, override="1.0.0", upgrade_rows=[_row("mlmodel-key-v1", T0)])
    assert "but the data says at least DataHub 1.4.0" in at_least.warnings[0]
    newer = choose(c, override="1.9.0")
    assert newer.rules is c.newest and "newer than every release" in newer.warnings[0]
    with pytest.raises(ConfigError, match="not a DataHub release"):
        choose(c, override="latest")


def _entity(doc: dict | None, index: str = "chartindex_v2") -> JoinedEntity:
    return JoinedEntity(
        CHART,
        "chart",
        index,
        rows=rows(CHART, {"chartInfo": INFO}, at=T0),
        doc=SearchDoc(index, "id", doc) if doc is not None else None,
    )


def _findings(ctx: CheckContext, entity: JoinedEntity) -> list:
    """The document checks' findings (the entity has no system-metadata docs or edges here)."""
    checks = [c() for c in BUILTIN_CHECKS if c.id not in ("system-metadata.stale", "graph.edges")]
    return [f for check in checks for f in check.run(entity, ctx)]


def _doc_as(ctx: CheckContext, release: str) -> dict:
    """The document the chart's rows give, as `release` writes it."""
    expected = CheckContext(ctx.registry, T0).expected(_entity(None))
    dropped = ctx.versions.installed_fields("chart") - catalog().get(release).fields_of("chart")  # type: ignore[union-attr]
    return {k: v for k, v in expected.fields.items() if k not in dropped and v is not None}


def _judged_by(release: str) -> tuple[Registry, CheckContext]:
    registry = Registry.load()
    return registry, CheckContext(
        registry, T0, versions=IndexRules(registry, catalog().get(release), catalog())
    )


def test_a_document_written_by_an_older_release_is_its_own_class() -> None:
    registry, ctx = _judged_by("1.7.0")
    c = catalog()
    old = _doc_as(ctx, "1.0.0")
    assert "lastModifiedAt" not in old and "title" in old
    found = _findings(ctx, _entity(old))
    assert [f.kind for f in found] == [Kind.OUTDATED_DOCUMENT]
    assert found[0].details["written_by"] == "1.3.1" and "lastModifiedAt" in found[0].details["missing"]
    verdict = classify(found[0], T0, grace=300, settle=10, position=None, kafka=None, history=None)
    # 1.0.0 to 1.3.1 index a chart alike: the range, never its newest alone (1.0.0 is the oldest
    # release shipped, so an older one may have written it too)
    assert found[0].details["written_since"] == "1.0.0" and found[0].details["or_older"] is True
    assert verdict.verdict == Verdict.OUTDATED and verdict.subkind == "written_by_1.0.0_to_1.3.1"
    assert "DataHub 1.0.0 to 1.3.1 or an older one" in verdict.evidence.reason
    # the same document judged by 1.0.0's rules is consistent
    as_old = CheckContext(registry, T0, versions=IndexRules(registry, c.get("1.0.0"), c))
    assert _findings(as_old, _entity(old)) == []
    # a row written after the judged release started was indexed by it: a real divergence
    later = IndexRules(registry, c.get("1.7.0"), c, since=T0 - timedelta(hours=1))
    stale = _findings(CheckContext(registry, T0, versions=later), _entity(old))
    assert [f.kind for f in stale] == [Kind.STALE_FIELDS]
    # a field an older release wrote too is missing: not explained by any release
    broken = {k: v for k, v in old.items() if k != "title"}
    assert [f.kind for f in _findings(ctx, _entity(broken))] == [Kind.STALE_FIELDS]


def test_the_mapping_is_a_witness() -> None:
    registry = Registry.load()
    c = catalog()
    ctx = CheckContext(registry, T0, versions=IndexRules(registry, c.newest, c))
    old = _doc_as(ctx, "1.0.0")
    mapped = frozenset(old) | {"urn", "removed"}
    witnessed = IndexRules(registry, c.newest, c, {"chartindex_v2": mapped})
    assert _findings(CheckContext(registry, T0, versions=witnessed), _entity(old)) == []
    assert "lastModifiedAt" in witnessed.withheld("chart", "chartindex_v2")
    assert not witnessed.withheld("chart", "other") & {"title"}
    read: list[str] = []
    lazy = IndexRules(registry, c.newest, c, read_mapping=lambda i: read.append(i) or {i: mapped})
    assert lazy.withheld("chart", "x") == witnessed.withheld("chart", "chartindex_v2")
    lazy.withheld("chart", "x")
    assert read == ["x"]  # read once
    # a repair leaves out what an explicit mapping lacks; a dynamic mapping takes what the
    # release writes (the server adds such a field with the first document holding it)
    assert "lastModifiedAt" in witnessed.not_written("chart", "chartindex_v2")
    dynamic = IndexRules(registry, c.get("1.7.0"), c, {"chartindex_v2": mapped | {DYNAMIC}})
    assert "lastModifiedAt" in dynamic.withheld("chart", "chartindex_v2")
    assert "lastModifiedAt" not in dynamic.not_written("chart", "chartindex_v2")
    assert "createdAt" in dynamic.not_written("chart", "chartindex_v2")  # 1.7.0 does not write it


def test_types_without_a_searchable_field_get_no_document() -> None:
    registry = Registry.load()
    ctx = CheckContext(registry, T0)
    for urn, aspect, value in (
        ("urn:li:telemetry:clientId", "telemetryClientId", {"clientId": "x"}),
        ("urn:li:globalSettings:0", "globalSettingsInfo", {}),
        (
            "urn:li:dataHubUpgrade:mlmodel-key-v1",
            "dataHubUpgradeResult",
            {"state": "SUCCEEDED", "timestampMs": 1},
        ),
    ):
        etype = urn.split(":")[2]
        entity = JoinedEntity(urn, etype, f"{etype.lower()}index_v2", rows=rows(urn, {aspect: value}, at=T0))
        assert _findings(ctx, entity) == [], urn
    assert [f.kind for f in _findings(ctx, _entity(None))] == [Kind.MISSING_DOCUMENT]


def test_a_document_holding_fields_its_release_does_not_write_is_noticed() -> None:
    _, ctx = _judged_by("1.0.0")
    new = _doc_as(ctx, "1.7.0")
    assert _findings(ctx, _entity(new)) == []
    assert ctx.versions is not None
    said = ctx.versions.newer_warning()
    assert said is not None and "chart.lastModifiedAt" in said and "1.0.0" in said


def test_outdated_lines_per_type_field_and_release_and_exit_code() -> None:
    _, ctx = _judged_by("1.7.0")
    old = _doc_as(ctx, "1.0.0")
    finding = _findings(ctx, _entity(old))[0]
    judged = classify(finding, T0, grace=300, settle=10, position=None, kafka=None, history=None)
    lines = outdated_groups([judged, judged], "p")
    line = next(x for x in lines if x["field"] == "lastModifiedAt")
    assert line["documents"] == 2 and line["examples"] == [CHART, CHART][:5]
    assert line["repair"] == "auditor rebuild reindex --entity-type chart --index-prefix p --apply"
    assert line["native"] == "datahub-upgrade -u RestoreIndices -a urnLike=urn:li:chart:%"
    merged = merge_outdated(lines, lines)
    assert next(x for x in merged if x["field"] == "lastModifiedAt")["documents"] == 4
    report = Report(T0, counts={("chart", "outdated", "written_by_1.3.1"): 2})
    assert report.exit_code == 5
    report.counts[("chart", "stalled", "stalled")] = 1
    assert report.exit_code == 4


def test_a_mapping_that_cannot_be_read_withholds_nothing_and_says_so() -> None:
    from auditor.errors import BackendUnavailable
    from auditor.platforms.datahub.versions.deployment import index_rules

    class Refusing:
        def mapped_fields(self, pattern: str) -> dict[str, frozenset[str]]:
            raise BackendUnavailable(f"search: 403 on {pattern}/_mapping")

    class Store:
        def upgrade_rows(self) -> list[tuple[str, str, datetime]]:
            return [_row("BuildIndicesIncremental_v1.7.0-0", T0)]

    warnings: list[str] = []
    rules, choice = index_rules(
        Store(), Refusing(), Registry.load(), index_prefix="p", platform_version=None, gms_url=None,
        warnings=warnings,
    )  # fmt: skip
    assert choice.rules.release == "1.7.0" and rules.since == T0
    assert rules.withheld("chart", "p_chartindex_v2") == rules.not_in_release("chart")
    assert len(warnings) == 1 and "could not be read" in warnings[0], warnings


def test_an_unreachable_gms_is_a_warning_without_its_credentials() -> None:
    from auditor.platforms.datahub.versions.deployment import index_rules

    class Search:
        def mapped_fields(self, pattern: str) -> dict[str, frozenset[str]]:
            return {}

    warnings: list[str] = []
    _, choice = index_rules(
        object(), Search(), Registry.load(), index_prefix="", platform_version=None,
        gms_url="http://admin:s3cret@127.0.0.1:9/gms", warnings=warnings,
    )  # fmt: skip
    assert choice.rules is catalog().newest
    assert any("did not answer" in w for w in warnings) and not any("s3cret" in w for w in warnings)
