"""`auditor registry [ENTITY]`: what DataHub's own schemas define."""

from __future__ import annotations

from typing import Annotated

import typer

from auditor.cli import app
from auditor.cli.common import (
    run,
)
from auditor.cli.exits import exits
from auditor.exit_codes import ExitCode


@app.command()
@exits({ExitCode.OK: "listed", ExitCode.USAGE: "an entity type the schemas do not define"})
def registry(
    entity_type: Annotated[
        str | None, typer.Argument(help="Show this entity's aspects and searchable fields.")
    ] = None,
) -> None:
    """List the entity types, aspects and search indices DataHub's own schemas define."""

    def go() -> int:
        from rich.console import Console
        from rich.table import Table

        from auditor import platforms

        header, rows = platforms.get(platforms.DEFAULT).schema_table(entity_type)
        table = Table(*header)
        for row in rows:
            table.add_row(*row)
        Console().print(table)
        return 0

    run(False, go)
