"""`metadata_aspect_v2` as DataHub creates it, on MariaDB and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import Engine, inspect, text

from sandbox.database import make_engine
from sandbox.ddl import create_schema, drop_schema
from sandbox.writer import DATAHUB_USER, GmsWriter

pytestmark = pytest.mark.integration

COLUMNS = ["urn", "aspect", "version", "metadata", "systemmetadata", "createdon", "createdby", "createdfor"]


def test_schema_on_both_stores(scratch_databases: dict[str, str]) -> None:
    for url in scratch_databases.values():
        engine = make_engine(url)
        try:
            create_schema(engine)
            create_schema(engine)  # idempotent
            table = inspect(engine)
            assert [c["name"] for c in table.get_columns("metadata_aspect_v2")] == COLUMNS
            assert table.get_pk_constraint("metadata_aspect_v2")["constrained_columns"] == [
                "urn",
                "aspect",
                "version",
            ]
            nullable = {c["name"]: c["nullable"] for c in table.get_columns("metadata_aspect_v2")}
            assert [n for n, ok in nullable.items() if ok] == ["systemmetadata", "createdfor"]
            indexes = {i["name"].lower(): i["column_names"] for i in table.get_indexes("metadata_aspect_v2")}
            assert indexes["timeindex"] == ["createdon"]
            if engine.dialect.name in ("mysql", "mariadb"):
                assert indexes["urnindex"] == ["urn"]
                assert indexes["aspectindex"] == ["aspect"]
                assert indexes["versionindex"] == ["version"]
                with engine.connect() as conn:
                    collation = conn.execute(
                        text(
                            "SELECT TABLE_COLLATION FROM information_schema.TABLES "
                            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'metadata_aspect_v2'"
                        )
                    ).scalar_one()
                assert collation == "utf8mb4_bin"
            with engine.begin() as conn:  # byte-exact, case-sensitive urns, 4-byte UTF-8
                for urn in ("urn:li:tag:A", "urn:li:tag:a", "urn:li:tag:😀"):
                    conn.execute(
                        text(
                            "INSERT INTO metadata_aspect_v2 (urn, aspect, version, metadata, "
                            "createdon, createdby) VALUES (:u, 'tagKey', 0, '{}', "
                            "CURRENT_TIMESTAMP, 'urn:li:corpuser:datahub')"
                        ),
                        {"u": urn},
                    )
                count = conn.execute(text("SELECT COUNT(*) FROM metadata_aspect_v2")).scalar()
            assert count == 3
            drop_schema(engine)
            drop_schema(engine)
            assert not inspect(engine).has_table("metadata_aspect_v2")
        finally:
            engine.dispose()


def test_seed_datahub_user(engine: Engine, writer_for: Callable[[Engine], GmsWriter]) -> None:
    writer = writer_for(engine)
    writer.seed_datahub_user()
    assert writer.seed_datahub_user() == []  # already there: nothing written twice
    assert writer.read_aspect(DATAHUB_USER, "corpUserKey") == {"username": "datahub"}
    assert writer.read_aspect(DATAHUB_USER, "corpUserInfo") == {
        "displayName": "Data Hub",
        "active": True,
        "fullName": "Data Hub",
        "email": "datahub@linkedin.com",
    }
    editable = writer.read_aspect(DATAHUB_USER, "corpUserEditableInfo")
    assert editable is not None and editable["skills"] == [] and editable["teams"] == []
