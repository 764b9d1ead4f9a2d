"""`auditor registry [ENTITY]`: what DataHub's own schemas define."""

from __future__ import annotations

from typing import Annotated

import typer

from auditor.cli import app
from auditor.cli.common import (
    run,
)
from auditor.errors import ConfigError


@app.command()
def registry(
    entity_type: Annotated[
        str | None, typer.Argument(help="Show this entity's aspects and searchable fields.")
    ] = None,
) -> None:
    """List the entity types, aspects and search indices DataHub's own schemas define."""

    def go() -> int:
        from rich.console import Console
        from rich.table import Table

        from auditor.core.naming import entity_index
        from auditor.core.registry import Registry

        reg = Registry.load()
        console = Console()
        if entity_type is None:
            table = Table("entity type", "key aspect", "aspects", "index")
            for spec in sorted(reg.entities(), key=lambda e: e.name):
                table.add_row(spec.name, spec.key_aspect, str(len(spec.aspects)), entity_index(spec.name))
            console.print(table)
            return 0
        if not reg.has_entity(entity_type):
            raise ConfigError(f"unknown entity type {entity_type!r}")
        table = Table("aspect", "timeseries", "searchable fields")
        for aspect in reg.entity_aspects(entity_type):
            fields = ", ".join(s.field_name for s in aspect.searchable)
            table.add_row(aspect.name, "yes" if aspect.timeseries else "", fields)
        console.print(table)
        return 0

    run(False, go)
