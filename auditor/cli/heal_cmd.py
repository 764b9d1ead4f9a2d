"""`auditor heal --policy FILE`: one iteration of the heal loop (scan, guards, policy, repair,
verification, journal), for a scheduler to run (docs/heal.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from auditor.cli import app
from auditor.cli.common import JsonFlag, OutFormat, OutFormatOpt, json_on_stdout, run, stdout_console, write
from auditor.cli.exits import exits
from auditor.cli.options import CONNECTION, DEBUG, settings_of, with_options
from auditor.cli.rebuild_cmd import Output
from auditor.exit_codes import ExitCode


@app.command("heal")
@exits(
    {
        ExitCode.OK: "everything persistent healed and verified clean, or nothing to heal",
        ExitCode.PERSISTENT: "a heal still wrong after verification, or divergence left for a person "
        "(no rule heals it, not persistent yet, over the budget, an orphan without prune; a dry run's)",
        ExitCode.USAGE: "usage or configuration error; a policy file refused (the line that is wrong named)",
        ExitCode.INCOMPLETE: None,
        ExitCode.LOCKED: None,
        ExitCode.STORE_SMALLER: "a heal that would delete more than a small share of an index: refused",
        ExitCode.STORE_BEHIND: None,
        ExitCode.OUTDATED: None,
        ExitCode.HEAL_REFUSED: None,
    }
)
@with_options(CONNECTION, DEBUG)
def heal_cmd(
    policy: Annotated[
        Path,
        typer.Option("--policy", envvar="AUDITOR_HEAL_POLICY", help="The heal policy (TOML, docs/heal.md)."),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what the policy would heal; write nothing.")
    ] = False,
    acknowledge: Annotated[
        bool,
        typer.Option(
            "--acknowledge", help="A person has looked at the last failed heal: stop refusing for it."
        ),
    ] = False,
    metrics_file: Annotated[Path | None, typer.Option(help="Also write a Prometheus textfile here.")] = None,
    journal: Annotated[
        Path | None, typer.Option("--journal-dir", help="Where the repairs journal [beside the state file].")
    ] = None,
    fmt: OutFormatOpt = OutFormat.console,
    json_out: JsonFlag = False,
    output: Output = None,
    **opts: Any,
) -> None:
    """Scan, and repair what the policy heals: persistent findings it names, within its budget.

    Each guard that holds refuses the whole heal and pages (exit 11): a systemic divergence, the
    consumer stalled, stopped or rewound, the platform's own reindex running, the store empty or
    far smaller than the index, the release not found, the last heal's verification failed.
    Orphans are reported, not deleted, unless the policy says `prune = true`. The repair is
    journaled: `auditor rebuild undo RUN --apply` takes it back. Without a policy that enables
    healing it only scans.
    """

    def go() -> int:
        from auditor.heal.loop import acknowledge as acknowledged
        from auditor.heal.loop import heal_once
        from auditor.heal.policy import load_policy
        from auditor.heal.report import metrics, render_console, to_json, undo_runs

        parsed = load_policy(policy)
        settings = settings_of(opts)
        if acknowledge:
            n = acknowledged(settings)
            typer.echo(f"{n} failed heal(s) acknowledged", err=True)
        state_dir = Path(settings.state_file).parent
        outcome = heal_once(settings, parsed, dry_run=dry_run, state_dir=state_dir,
                            journal_dir=journal)  # fmt: skip
        if fmt == OutFormat.json or json_out or output:
            write(output, to_json(outcome) + "\n")
        else:
            render_console(outcome, stdout_console())
        if metrics_file:
            write(metrics_file, metrics(outcome, undo_runs(journal or state_dir / "journal")))
        return int(outcome.exit_code)

    run(opts["debug"], go, json_errors=json_on_stdout(fmt, json_out, output))
