"""MariaDB's and MySQL's utf8mb4_bin is PAD SPACE: 'a' = 'a ' there (so DataHub's primary key
holds only one of them), and 'a\\t' sorts before 'a'. The store still hands out each urn's rows
once, in the byte order the index sorts in (the merge-join's order), also when a read resumes
after a lost connection, and an exact-urn read never returns a neighbour's rows ('b' is not
'b '). Same checks on PostgreSQL."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from sqlalchemy import Engine, text

from auditor.core.model import Selection
from auditor.platforms.datahub.backends.store import MetadataStore

pytestmark = pytest.mark.integration

# sorted otherwise under PAD SPACE than by bytes ('a\\t' < 'a' there), or ending in a space
URNS = [
    "urn:li:tag:a",
    "urn:li:tag:a\t",
    "urn:li:tag:a \tb",
    "urn:li:tag:a\x01",
    "urn:li:tag:a\x01\x02",
    "urn:li:tag:a b",
    "urn:li:tag:a!",
    "urn:li:tag:ab",
    "urn:li:tag:b ",
    "urn:li:tag:c\t",
    "urn:li:tag:c",
    "urn:li:tag:c \x1f",
]
ASPECTS = ("tagKey", "tagProperties", "status")


def _seed(engine: Engine, table: str) -> None:
    insert = text(
        f"INSERT INTO {table} (urn, aspect, version, metadata, systemmetadata, createdon, createdby) "
        "VALUES (:urn, :aspect, :version, :metadata, NULL, :at, 'urn:li:corpuser:x')"
    )
    rows = [
        {
            "urn": urn,
            "aspect": aspect,
            "version": version,
            "metadata": json.dumps({"urn": urn, "aspect": aspect, "v": version}),
            "at": datetime(2026, 1, 1, 12, 0, i % 60),
        }
        for i, urn in enumerate(URNS)
        for aspect in ASPECTS
        for version in (0, 1)
    ]
    with engine.begin() as conn:
        conn.execute(insert, rows)


def _own(rows: list[tuple]) -> None:
    for urn, aspect, metadata, *_ in rows:
        value = json.loads(metadata)
        assert (value["urn"], value["aspect"], value["v"]) == (urn, aspect, 0), (urn, aspect, value)


@pytest.mark.parametrize("batch", [1, 2, 5000])
def test_every_urn_once_in_byte_order(engine: Engine, scratch_table: str, batch: int) -> None:
    _seed(engine, scratch_table)
    store = MetadataStore(str(engine.url), scratch_table, engine=engine)
    rows = list(store.stream_rows(("tag",), batch=batch))
    keys = [(r[0], r[1]) for r in rows]
    assert keys == sorted((u, a) for u in URNS for a in ASPECTS)
    _own(rows)
    entities = list(store.stream_entities(("tag",)))
    assert [e.urn for e in entities] == sorted(URNS)
    assert all(set(e.rows) == set(ASPECTS) for e in entities)


@pytest.mark.filterwarnings("ignore:Previous unbuffered result")
def test_a_resumed_read_skips_nothing(engine: Engine, scratch_table: str, monkeypatch) -> None:
    _seed(engine, scratch_table)
    store = MetadataStore(str(engine.url), scratch_table, engine=engine)
    real = store._stream_once
    calls = {"n": 0}

    def flaky(*args, **kwargs):  # the connection drops after every second partition
        from sqlalchemy.exc import OperationalError

        calls["n"] += 1
        for i, part in enumerate(real(*args, **kwargs)):
            if i == 2 and calls["n"] < 40:
                raise OperationalError("SELECT", {}, Exception("Lost connection to server during query"))
            yield part

    monkeypatch.setattr(store, "_stream_once", flaky)
    monkeypatch.setattr("auditor.platforms.datahub.backends.store.RESUME_ATTEMPTS", 100)
    monkeypatch.setattr("auditor.platforms.datahub.backends.store.time.sleep", lambda s: None)
    rows = list(store.stream_rows(("tag",), batch=2))
    assert [(r[0], r[1]) for r in rows] == sorted((u, a) for u in URNS for a in ASPECTS)
    assert store.resumed > 3


def test_the_primary_key_holds_one_of_two_urns_equal_under_pad_space(
    engine: Engine, scratch_table: str
) -> None:
    from sqlalchemy.exc import IntegrityError

    insert = text(
        f"INSERT INTO {scratch_table} (urn, aspect, version, metadata, createdon, createdby) "
        "VALUES (:urn, 'status', 0, '{}', '2026-01-01 12:00:00', 'urn:li:corpuser:x')"
    )
    with engine.begin() as conn:
        conn.execute(insert, {"urn": "urn:li:tag:x"})
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            conn.execute(insert, {"urn": "urn:li:tag:x "})
        return
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(insert, {"urn": "urn:li:tag:x "})


@pytest.mark.parametrize("urn", ["urn:li:tag:a", "urn:li:tag:b ", "urn:li:tag:c\t"])
def test_exact_urn_reads_return_that_urn_only(engine: Engine, scratch_table: str, urn: str) -> None:
    _seed(engine, scratch_table)
    store = MetadataStore(str(engine.url), scratch_table, engine=engine)
    rows = list(store.stream_rows(urns=(urn,)))
    assert {r[0] for r in rows} == {urn} and len(rows) == len(ASPECTS)
    _own(rows)
    assert {u for u, _ in store.fingerprints((urn,))} == {urn}
    assert set(store.versions(urn)) == set(ASPECTS)
    assert all(n == 2 for n, _ in store.versions(urn).values())  # versions 0 and 1, not a neighbour's
    page = store.page_rows(Selection(urns=(urn,)), None, 100)
    assert {u for u, _ in page} == {urn} and len(page) == len(ASPECTS)
    assert store.count_rows(Selection(urns=(urn,))) == len(ASPECTS)
    if urn.endswith(" "):  # the same urn without its space is not in the table
        bare = urn.rstrip(" ")
        assert list(store.stream_rows(urns=(bare,))) == []
        assert store.fingerprints((bare,)) == {} and store.versions(bare) == {}
        assert store.page_rows(Selection(urns=(bare,)), None, 100) == []
        assert store.count_rows(Selection(urns=(bare,))) == 0
