"""The ordering guard's fingerprints: the digest the database computes equals the one computed
from the rows as read, on PostgreSQL and MariaDB, for any text an aspect may hold."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from sqlalchemy import Engine, text

from auditor.backends.store import MetadataStore, row_fingerprint
from auditor.core.model import Selection

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
