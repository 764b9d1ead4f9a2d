"""OpenMetadata's release from SERVER_CHANGE_LOG: parsed as numbers, unfinished rows left out."""

from __future__ import annotations

from auditor.platforms.openmetadata.version import describe, migration_level, release_key


def test_the_migration_level_is_a_numeric_maximum_of_completed_rows() -> None:
    rows = [("1.9.0", None), ("1.10.0", None), ("1.12.1-collate", None), ("2.0.0-baseline", "FAILED")]
    assert migration_level(rows) == "1.12.1-collate"
    assert (
        migration_level([("1.9.0", "COMPLETED"), ("1.10.2", "COMPLETED"), ("1.11.0", "STARTED")]) == "1.10.2"
    )
    assert migration_level([("x", None)]) is None and migration_level([]) is None
    assert release_key("1.12") == (1, 12, 0) and release_key("v2.0.0-baseline") == (2, 0, 0)


def test_what_the_report_says_of_it() -> None:
    said, warnings = describe("1.12.1", None)
    assert said == "1.12.1 (SERVER_CHANGE_LOG, the migration level)" and warnings == []
    said, warnings = describe("1.12.1", "1.8.0")
    assert said == "1.8.0 (--platform-version)" and "migrations reach 1.12.1" in warnings[0]
    said, warnings = describe(None, None)
    assert said.startswith("unknown") and "--platform-version" in warnings[0]
