"""OpenMetadata in a restore drill: its entity tables, compared row by row."""

from __future__ import annotations

from auditor.drill.spec import Column, ColumnKind, TableSpec


def om_entity_table(table: str) -> TableSpec:
    """An OpenMetadata entity table: key `id`, the entity's JSON, updatedAt, deleted."""
    return TableSpec(
        name=table,
        key=("id",),
        columns=(
            Column("id"),
            Column("json", ColumnKind.JSON),
            Column("updatedAt", ColumnKind.INT),
            Column("deleted", ColumnKind.BOOL),
        ),
    )
