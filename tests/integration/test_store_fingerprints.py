"""The ordering guard's fingerprints: the digest the database computes equals the one computed
from the rows as read, on PostgreSQL and MariaDB, for any text an aspect may hold."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from sqlalchemy import Engine, text

from auditor.core.model import Selection
from auditor.platforms.datahub.backends.store import MetadataStore, row_fingerprint

pytestmark = pytest.mark.integration

VALUES = [
    {"name": "plain"},
    {"description": 'naïve café — 数据 😀 \u2028 tab\t quote" backslash\\'},
    {"fields": [{"fieldPath": "a" * 5000}]},
]


def test_the_database_digest_is_the_rows_own(engine: Engine, scratch_table: str) -> None:
    table = scratch_table
    insert = text(
        f"INSERT INTO {table} (urn, aspect, version, metadata, systemmetadata, createdon, createdby) "
        "VALUES (:urn, :aspect, :version, :metadata, :sm, :at, 'urn:li:corpuser:x')"
    )
    rows = []
    for i, value in enumerate(VALUES):
        for version in (0, 1):
            rows.append(
                {
                    "urn": f"urn:li:dataset:(urn:li:dataPlatform:hive,fp {i} ü,PROD)",
                    "aspect": "datasetProperties",
                    "version": version,
                    "metadata": json.dumps(value, ensure_ascii=False),
                    "sm": None if i == 1 else json.dumps({"runId": f"r{i}", "lastObserved": i}),
                    "at": datetime(2026, 1, 1, 12, 0, i, 123456),
                }
            )
    with engine.begin() as conn:
        conn.execute(insert, rows)
    store = MetadataStore(engine.url.render_as_string(hide_password=False), table, engine=engine)
    read = store.page_rows(Selection(), None, 100)
    assert len(read) == len(VALUES)  # version 0 only
    prints = store.fingerprints(tuple(u for u, _ in read))
    assert prints == {(u, r.aspect): row_fingerprint(r) for u, r in read}
    # a change to the text, to the system metadata or to createdon changes the fingerprint
    urn = read[0][0]
    with engine.begin() as conn:
        conn.execute(
            text(f"UPDATE {table} SET systemmetadata = '{{}}' WHERE urn = :u AND version = 0"), {"u": urn}
        )
    assert store.fingerprints((urn,))[(urn, "datasetProperties")] != row_fingerprint(read[0][1])
    assert store.versions(urn) == {"datasetProperties": (2, "urn:li:corpuser:x")}


def test_the_digest_of_a_page_and_of_urns_is_the_rows_own(engine: Engine, scratch_table: str) -> None:
    """One value for many rows (what the guards compare first): equal to the rows' own as read,
    on both databases, for any text; and it moves with a rewrite or a delete among them."""
    from auditor.core.records import rows_digest

    table = scratch_table
    insert = text(
        f"INSERT INTO {table} (urn, aspect, version, metadata, systemmetadata, createdon, createdby) "
        "VALUES (:urn, :aspect, 0, :metadata, :sm, :at, 'urn:li:corpuser:x')"
    )
    rows = [
        {
            "urn": f"urn:li:dataset:(urn:li:dataPlatform:hive,dg {i % 3} ü 😀,PROD)",
            "aspect": aspect,
            "metadata": json.dumps(VALUES[i % len(VALUES)], ensure_ascii=False),
            "sm": None if i % 2 else json.dumps({"runId": f"r{i}"}),
            "at": datetime(2026, 1, 1, 12, 0, i, 1000 * i),
        }
        for i, aspect in enumerate(["status", "datasetProperties", "globalTags"] * 3)
        if i < 9
    ]
    with engine.begin() as conn:
        conn.execute(insert, [dict(r) for r in {(r["urn"], r["aspect"]): r for r in rows}.values()])
    store = MetadataStore(engine.url.render_as_string(hide_password=False), table, engine=engine)
    page = store.page_rows(Selection(), None, 100)
    first, last = (page[0][0], page[0][1].aspect), (page[-1][0], page[-1][1].aspect)
    urns = tuple(sorted({u for u, _ in page}))
    assert store.page_digest(Selection(), first, last, (), len(page)) == rows_digest(page)
    assert store.urns_digest(urns) == rows_digest(page)
    part = page[1:4]  # a page inside the table: its own key range only
    bounds = ((part[0][0], part[0][1].aspect), (part[-1][0], part[-1][1].aspect))
    assert store.page_digest(Selection(), *bounds, (), len(part)) == rows_digest(part)
    listed = Selection(urns=urns[:2])
    mine = [r for r in page if r[0] in urns[:2]]
    ends = (mine[0][0], mine[0][1].aspect), (mine[-1][0], mine[-1][1].aspect)
    assert store.page_digest(listed, *ends, urns[:2], len(mine)) == rows_digest(mine)
    urn, aspect = page[2][0], page[2][1].aspect
    with engine.begin() as conn:  # the same text written again later: createdon moves the digest
        conn.execute(
            text(f"UPDATE {table} SET createdon = :at WHERE urn = :u AND aspect = :a AND version = 0"),
            {"at": datetime(2026, 6, 1), "u": urn, "a": aspect},
        )
    assert store.page_digest(Selection(), first, last, (), len(page)) != rows_digest(page)
    assert store.urns_digest(urns) != rows_digest(page)
    store_now = store.page_rows(Selection(), None, 100)
    with engine.begin() as conn:  # a row deleted: the count moves
        conn.execute(text(f"DELETE FROM {table} WHERE urn = :u AND aspect = :a"), {"u": urn, "a": aspect})
    assert store.page_digest(Selection(), first, last, (), len(page)) != rows_digest(store_now)
