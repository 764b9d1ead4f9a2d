"""`auditor platforms`: the platforms this installation knows, where each comes from, what it can do."""

from __future__ import annotations

import json
from typing import Any

from auditor.cli import app
from auditor.cli.common import JsonFlag, OutFormat, OutFormatOpt, json_on_stdout, run
from auditor.cli.exits import exits
from auditor.exit_codes import ExitCode


@app.command()
@exits(
    {
        ExitCode.OK: "every registered platform loads and provides what it declares",
        ExitCode.USAGE: "one does not (a plug-in that does not import, a name two distributions "
        "register, a capability declared without its methods): each said why",
    }
)
def platforms(fmt: OutFormatOpt = OutFormat.console, json_out: JsonFlag = False) -> None:
    """List the platforms registered by the installed distributions (the entry points of the group
    `auditor.platforms`), each loaded and proven: its title, the distribution it comes from and
    the capabilities it declares. A plug-in installed beside the auditor shows here; one that
    cannot be used is listed with why, and the command exits 2."""

    def go() -> int:
        from auditor import platforms as registry
        from auditor.errors import ConfigError

        rows: list[dict[str, Any]] = []
        for name in registry.names():
            entries = registry.installed().get(name, [])
            row: dict[str, Any] = {"name": name, "distribution": ", ".join(e.distribution for e in entries)}
            try:
                platform = registry.get(name)
            except ConfigError as exc:
                rows.append({**row, "title": None, "capabilities": [], "refused": str(exc)})
                continue
            capabilities = sorted(c.name.lower() for c in platform.capabilities)
            rows.append({**row, "title": platform.title, "capabilities": capabilities, "refused": None})
        if fmt == OutFormat.json or json_out:
            print(json.dumps(rows, indent=2))
        else:
            _table(rows)
        return 2 if any(r["refused"] for r in rows) else 0

    run(False, go, json_errors=json_on_stdout(fmt, json_out))


def _table(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table("platform", "title", "from", "capabilities")
    for r in rows:
        what = (
            ", ".join(r["capabilities"]) if not r["refused"] else f"[red]refused: {escape(r['refused'])}[/]"
        )
        table.add_row(escape(r["name"]), escape(r["title"] or "-"), escape(r["distribution"] or "-"), what)
    Console().print(table)
