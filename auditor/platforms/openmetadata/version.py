"""Which OpenMetadata release the database is at: its migration level in `SERVER_CHANGE_LOG`.

One row per applied migration (MigrationHistoryTable): `version` is the migration folder's
(`1.9.0`, `1.12.1`, `1.12.1-collate`, `2.0.0-baseline`). The server's own MAX(version) is a
string maximum (`1.9.x` above `1.10.x`): each row is parsed here and compared as numbers; where
the table has a `status` column, rows that did not complete are left out. It is the schema level,
not the exact build (a patch release without a migration adds no row). `--platform-version`
overrides it; the report's `sources.platform_version` says which and how.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_VERSION = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")


def release_key(text: str) -> tuple[int, ...] | None:
    """`1.12.1-collate` -> (1, 12, 1); None for what is no release number."""
    match = _VERSION.match(text or "")
    if match is None:
        return None
    parts = tuple(int(p) for p in match.group(1).split("."))
    return parts + (0,) * (3 - len(parts))


def migration_level(rows: Iterable[tuple[Any, Any]]) -> str | None:
    """The highest completed migration among (version, status) rows (None: none readable)."""
    best: tuple[tuple[int, ...], str] | None = None
    for version, status in rows:
        if status is not None and str(status).upper() not in ("COMPLETED", "SUCCESS", ""):
            continue
        key = release_key(str(version))
        if key is not None and (best is None or key > best[0]):
            best = (key, str(version).strip())
    return None if best is None else best[1]


def describe(level: str | None, override: str | None) -> tuple[str, list[str]]:
    """The report's `platform_version` and the warnings it brings."""
    if override:
        said = f"{override} (--platform-version)"
        warnings = []
        if level and release_key(override) != release_key(level):
            warnings.append(
                f"--platform-version {override}, but SERVER_CHANGE_LOG's migrations reach {level}: "
                "is the flag right?"
            )
        return said, warnings
    if level is None:
        return "unknown (no SERVER_CHANGE_LOG rows)", [
            "OpenMetadata's release was not found (no readable SERVER_CHANGE_LOG row): judged by the "
            "newest rules the auditor knows; --platform-version names it"
        ]
    return f"{level} (SERVER_CHANGE_LOG, the migration level)", []
