"""A federation's pure logic: the k-way merge of stores, conflicts, attribution, configuration."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from auditor.core.join import JoinOrderError
from auditor.core.model import Classified, Evidence, Finding, Kind, Observation, Report, Verdict
from auditor.core.records import AspectRow, EntityRows
from auditor.errors import ConfigError
from auditor.platforms.datahub.backends.federated import FederatedRows, FederationUnsupported, merge_stores
from auditor.platforms.datahub.documents.entity import JoinedEntity
from auditor.platforms.datahub.scan.federation import conflict_finding, conflict_verdict, federate
from auditor.platforms.datahub.scan.join import owned
from auditor.reports import RENDERERS
from auditor.reports.merge import from_dict
from auditor.scan.finish import tally
from auditor.settings import load_settings

T0 = datetime(2026, 1, 1, 12, 0, 0)


def rows(urn: str, *aspects: str, at: datetime = T0) -> EntityRows:
    return EntityRows(urn, {a: AspectRow(a, "{}", None, at) for a in aspects})


def stream(*entities: EntityRows) -> Iterator[EntityRows]:
    return iter(entities)


def test_merge_is_the_union_in_byte_order_with_one_entity_per_urn() -> None:
    a = stream(rows("urn:li:corpuser:a", "k"), rows("urn:li:dataset:b", "k"), rows("urn:li:tag:é", "k"))
    b = stream(rows("urn:li:chart:x", "k"), rows("urn:li:tag:z", "k"))
    merged = list(merge_stores([("a", a), ("b", b)]))
    assert [m.urn for m in merged] == [
        "urn:li:chart:x",
        "urn:li:corpuser:a",
        "urn:li:dataset:b",
        "urn:li:tag:z",
        "urn:li:tag:é",
    ]
    assert [m.store for m in merged] == ["b", "a", "a", "b", "a"]
    assert not any(m.conflict for m in merged)


def test_a_urn_in_two_stores_comes_once_with_both_claims_and_the_newest_writers_rows() -> None:
    old, new = datetime(2026, 1, 1), datetime(2026, 2, 1)
    a = stream(rows("urn:li:tag:t", "k", "props", at=new))
    b = stream(rows("urn:li:tag:t", "k", at=old))
    (merged,) = list(merge_stores([("a", a), ("b", b)]))
    assert merged.conflict
    assert merged.store == "a" and set(merged.rows) == {"k", "props"}
    assert [(c.store, c.aspects, c.newest) for c in merged.claims] == [("a", 2, new), ("b", 1, old)]
    # the other way round: b wrote last, b's rows are compared
    a = stream(rows("urn:li:tag:t", "k", "props", at=old))
    b = stream(rows("urn:li:tag:t", "k", at=new))
    (merged,) = list(merge_stores([("a", a), ("b", b)]))
    assert merged.store == "b" and set(merged.rows) == {"k"}


def test_three_stores_holding_one_urn_are_one_conflict_of_three() -> None:
    streams = [(n, stream(rows(f"urn:li:tag:{n}", "k"), rows("urn:li:tag:t", "k"))) for n in "abc"]
    merged = list(merge_stores(streams))
    assert [m.urn for m in merged] == ["urn:li:tag:a", "urn:li:tag:b", "urn:li:tag:c", "urn:li:tag:t"]
    assert [c.store for c in merged[-1].claims] == ["a", "b", "c"]
    assert merged[-1].store == "a"  # a tie on the newest write: the first store configured


@pytest.mark.parametrize(
    "urns",
    [("urn:li:tag:b", "urn:li:tag:a"), ("urn:li:tag:a", "urn:li:tag:a")],
    ids=["backwards", "repeated"],
)
def test_a_store_stream_out_of_order_stops_the_merge_naming_the_store(urns: tuple[str, str]) -> None:
    good = stream(rows("urn:li:tag:0", "k"), rows("urn:li:tag:z", "k"))
    bad = stream(*(rows(u, "k") for u in urns))
    with pytest.raises(JoinOrderError, match="store 'teamb' is not in urn byte order"):
        list(merge_stores([("teama", good), ("teamb", bad)]))


def test_the_merge_holds_one_entity_per_store_at_a_time() -> None:
    pulled = {"a": 0, "b": 0}

    def counted(name: str, n: int) -> Iterator[EntityRows]:
        for i in range(n):
            pulled[name] += 1
            yield rows(f"urn:li:tag:{name}{i:06d}", "k")

    merged = merge_stores([("a", counted("a", 10_000)), ("b", counted("b", 10_000))])
    first = next(merged)
    assert first.urn == "urn:li:tag:a000000"
    assert pulled == {"a": 2, "b": 1}  # the next of a, the head of b: nothing more read ahead
    assert sum(1 for _ in merged) == 19_999


@given(st.lists(st.lists(st.text(alphabet="abcé中😀", min_size=1, max_size=4), unique=True), max_size=4))
def test_merge_equals_the_sorted_union(stores: list[list[str]]) -> None:
    streams = [(f"s{i}", stream(*(rows(u, "k") for u in sorted(urns)))) for i, urns in enumerate(stores)]
    merged = list(merge_stores(streams))
    union = sorted(set(itertools.chain.from_iterable(stores)))
    assert [m.urn for m in merged] == union
    for m in merged:
        holders = [f"s{i}" for i, urns in enumerate(stores) if m.urn in urns]
        assert list(m.holders) == holders
        assert m.conflict == (len(holders) > 1) and (m.claims == () or len(m.claims) == len(holders))


def _entity(rows_: EntityRows | None) -> JoinedEntity:
    return JoinedEntity("urn:li:tag:t", "tag", "tagindex_v2", rows=rows_)


def test_federate_names_the_store_of_each_finding_and_adds_one_conflict() -> None:
    a = stream(rows("urn:li:tag:t", "k", at=datetime(2026, 1, 2)))
    b = stream(rows("urn:li:tag:t", "k", at=datetime(2026, 1, 1)))
    (merged,) = list(merge_stores([("a", a), ("b", b)]))
    earlier = Finding("x", Kind.MISSING_DOCUMENT, "urn:li:tag:s", "tag")
    found = [earlier, Finding("presence", Kind.MISSING_DOCUMENT, "urn:li:tag:t", "tag")]
    stores: dict[str, dict[str, int]] = {
        "a": {"entities": 0, "conflicts": 0},
        "b": {"entities": 0, "conflicts": 0},
    }
    federate(_entity(merged), found, 1, stores)
    assert found[0] is earlier  # before `start`: another entity's, untouched
    assert found[1].stores == ("a",)
    conflict = found[2]
    assert conflict.kind == Kind.STORE_CONFLICT and conflict.stores == ("a", "b")
    assert conflict.details["stores"] == {
        "a": {"aspects": 1, "latest_createdon": "2026-01-02T00:00:00+00:00"},
        "b": {"aspects": 1, "latest_createdon": "2026-01-01T00:00:00+00:00"},
    }
    assert stores == {"a": {"entities": 1, "conflicts": 1}, "b": {"entities": 1, "conflicts": 1}}


def test_an_orphan_has_no_store() -> None:
    found = [Finding("presence", Kind.ORPHAN_DOCUMENT, "urn:li:tag:t", "tag")]
    federate(_entity(None), found, 0, {"a": {"entities": 0, "conflicts": 0}})
    assert found[0].stores == ()


def _conflict_classified() -> Classified:
    (merged,) = list(
        merge_stores([("a", stream(rows("urn:li:tag:t", "k"))), ("b", stream(rows("urn:li:tag:t", "k")))])
    )
    seen = Observation(T0, None, T0, T0)
    return conflict_verdict(conflict_finding(_entity(merged), merged), seen)


def test_a_conflict_is_diverged_and_its_reason_names_every_store() -> None:
    c = _conflict_classified()
    assert c.verdict == Verdict.DIVERGED and c.subkind == "store_conflict"
    assert "a (1 aspects" in c.evidence.reason and "b (1 aspects" in c.evidence.reason
    stores: dict[str, dict[str, int]] = {"a": {"entities": 1}, "b": {"entities": 1}, "c": {"entities": 0}}
    tally(stores, [c])
    assert stores["a"]["diverged"] == stores["b"]["diverged"] == 1 and stores["c"]["findings"] == 0


def test_every_renderer_shows_the_store_and_json_reads_it_back() -> None:
    import json

    conflict = _conflict_classified()
    found = [
        conflict.finding,
        Finding("presence", Kind.MISSING_DOCUMENT, "urn:li:tag:u", "tag", stores=("teamb",)),
    ]
    owned(found, 0)  # as the join names DataHub on every finding it returns
    c = replace(conflict, finding=found[0])
    assert c.finding.details["platform"] == "datahub" and c.finding.details["compared"] == "a"
    missing = Classified(
        found[1],
        Verdict.DIVERGED,
        "missing_document",
        Evidence("consumed but not applied"),
    )
    report = Report(started_at=T0, finished_at=T0, findings=[c, missing])
    report.counts = {("tag", "diverged", "store_conflict"): 1, ("tag", "diverged", "missing_document"): 1}
    report.stores = {"a": {"entities": 1, "conflicts": 1}, "teamb": {"entities": 5, "conflicts": 0}}
    tally(report.stores, report.findings)
    for fmt in ("markdown", "html"):
        text = RENDERERS[fmt](report)
        assert "teamb" in text and "a,b" in text, fmt
    prom = RENDERERS["prometheus"](report)
    assert 'auditor_store_diverged{store="teamb"} 1' in prom
    assert 'auditor_store_entities{store="teamb"} 5' in prom
    data = json.loads(RENDERERS["json"](report))
    assert [f["stores"] for f in data["findings"]] == [["a", "b"], ["teamb"]]
    assert [f["store"] for f in data["findings"]] == ["a,b", "teamb"]  # schema v1's joined form
    back = from_dict(data)
    assert [f.finding.stores for f in back.findings] == [("a", "b"), ("teamb",)]
    del data["findings"][0]["stores"]  # a report written before `stores`: read from `store`
    assert from_dict(data).findings[0].finding.stores == ("a", "b")
    assert back.stores == report.stores


def test_configuration_forms_and_their_errors() -> None:
    toml = load_settings(
        env={"PW_B": "s3cr:t"},
        stores=[
            {"name": "teama", "url": "postgresql+psycopg://u:pw@h/a"},
            {"name": "team-b", "url": "mysql+pymysql://u@h/b", "table": "aspects", "password_env": "PW_B"},
        ],
    )
    assert [(s.name, s.table) for s in toml.stores] == [
        ("teama", "metadata_aspect_v2"),
        ("team-b", "aspects"),
    ]
    assert toml.stores[1].url.get_secret_value() == "mysql+pymysql://u:s3cr%3At@h/b"
    shown = repr(toml) + str(toml.describe())
    assert "s3cr" not in shown and "pw@" not in shown
    assert toml.describe()["store.team-b"] == "mysql+pymysql://u:***@h/b"
    env = load_settings(env={"AUDITOR_STORES": "a=postgresql+psycopg://u@h/a b=mysql+pymysql://u@h/b"})
    assert [s.name for s in env.stores] == ["a", "b"]
    flags = load_settings(env={"AUDITOR_STORES": "z=x://h"}, stores=["a=postgresql+psycopg://u@h/a"])
    assert [s.name for s in flags.stores] == ["a"]  # a flag wins over the environment
    single = load_settings(env={}, store_url="postgresql+psycopg://u@h/a")
    assert single.stores == () and "store" in single.describe()
    for bad, said in [
        (["a b=x://h"], "not a simple identifier"),
        (["1a=x://h"], "not a simple identifier"),
        (["a=x://h", "a=y://h"], "given twice"),
        (["a"], "NAME=URL"),
        ([{"name": "a", "url": "x://h", "password_env": "NOPE"}], "NOPE is not set"),
        ([{"name": "a", "url": "x://h", "colour": "red"}], "colour"),
    ]:
        with pytest.raises(ConfigError, match=said):
            load_settings(env={}, stores=bad)
    with pytest.raises(ConfigError, match="both a store URL and a federation"):
        load_settings(env={}, store_url="x://h", stores=["a=y://h"])


def test_a_toml_file_with_stores_tables(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "auditor.toml"
    path.write_text(
        '[search]\nurl = "http://s:9200"\n'
        '[[stores]]\nname = "a"\nurl = "postgresql+psycopg://u@h/a"\n'
        '[[stores]]\nname = "b"\nurl = "mysql+pymysql://u@h/b"\npassword_env = "B_PW"\n',
        encoding="utf-8",
    )
    s = load_settings(path, env={"B_PW": "pw"})
    assert [e.name for e in s.stores] == ["a", "b"] and s.search_url == "http://s:9200"
    path.write_text('[[stores]]\nname = "a"\nurl = "x://h"\n[[stores]]\nname = "a"\nurl = "y://h"\n')
    with pytest.raises(ConfigError, match="'a' is given twice"):
        load_settings(path, env={})


def test_a_federation_refuses_what_only_one_table_can_do() -> None:
    from auditor.platforms.datahub.backends.federated import FederatedStore
    from auditor.platforms.datahub.backends.store import MetadataStore

    store = FederatedStore([("a", MetadataStore("sqlite://"))])
    with pytest.raises(FederationUnsupported, match="needs one aspect table"):
        store.page_rows  # noqa: B018
    with pytest.raises(FederationUnsupported, match="shard plan"):
        next(iter(store.urn_weights()))
    assert isinstance(FederationUnsupported("x"), ConfigError)
    _ = FederatedRows


class _Failing:
    """A member store whose row stream breaks after its first entity (a server gone mid-read)."""

    description = "x://h/db"
    rows_read = resumed = 0

    def stream_entities(self, *args: object, **kwargs: object) -> Iterator[EntityRows]:
        from auditor.errors import BackendUnavailable

        yield rows("urn:li:tag:b1", "k")
        raise BackendUnavailable("metadata store x://h/db failed: OperationalError: gone")


class _Healthy(_Failing):
    def stream_entities(self, *args: object, **kwargs: object) -> Iterator[EntityRows]:
        yield from (rows(f"urn:li:tag:a{i}", "k") for i in range(5))


def test_a_store_that_fails_mid_read_fails_the_merge_naming_it_never_a_smaller_union() -> None:
    from auditor.errors import BackendUnavailable
    from auditor.platforms.datahub.backends.federated import FederatedStore

    store = FederatedStore([("teama", _Healthy()), ("teamb", _Failing())])  # type: ignore[list-item]
    seen: list[str] = []
    with pytest.raises(BackendUnavailable, match="store 'teamb': metadata store x://h/db failed") as raised:
        for entity in store.stream_entities():
            seen.append(entity.urn)
    assert raised.value.exit_code == 3
    # teama's urns sort before teamb's next one, so they came first; then the failure, not an end
    assert seen == [f"urn:li:tag:a{i}" for i in range(5)]
