"""`auditor rebuild plan|replay|reindex`: repair what a scan found, dry-run unless --apply."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from auditor.cli import app
from auditor.cli.common import (
    DebugOpt,
    JsonFlag,
    OutFormat,
    OutFormatOpt,
    err,
    json_on_stdout,
    run,
    shard_of,
    shard_range,
    since_of,
    stdout_console,
    write,
)
from auditor.cli.exits import exits
from auditor.cli.options import CONNECTION, DEBUG, settings_of, with_options
from auditor.errors import ConfigError
from auditor.exit_codes import ExitCode

rebuild_app = typer.Typer(
    help="Repair what a scan found: replay MCLs through DataHub's own consumer, or reindex "
    "straight from the database. Dry-run by default (prints the plan); writes only with --apply. "
    "Each command's --help lists its exit codes.",
    no_args_is_help=True,
)
app.add_typer(rebuild_app, name="rebuild")

FromReport = Annotated[
    Path | None,
    typer.Option(
        "--from-report", help="A scan's JSON report, or its --findings-out JSON Lines: repair its findings."
    ),
]
Include = Annotated[
    str, typer.Option(help="Verdicts of the report to repair, comma-separated: diverged,invalid,stalled.")
]
EntityType = Annotated[list[str] | None, typer.Option("--entity-type", "-t", help="Only these entity types.")]
Urns = Annotated[list[str] | None, typer.Option("--urn", help="These urns (repeatable).")]
UrnLike = Annotated[str | None, typer.Option(help="SQL LIKE pattern on the urn.")]
Aspects = Annotated[list[str] | None, typer.Option("--aspect", help="Only these aspects (repeatable).")]
Since = Annotated[str | None, typer.Option(help="Rows written since (ISO time or 30m / 6h / 2d).")]
Until = Annotated[str | None, typer.Option(help="Rows written before (ISO time or a duration ago).")]
All = Annotated[bool, typer.Option("--all", help="Every version-0 row (no other filter needed).")]
Apply = Annotated[bool, typer.Option("--apply", help="Write. Without it nothing is written.")]
Rate = Annotated[float | None, typer.Option(help="At most this many rows (entities) per second.")]
Batch = Annotated[int, typer.Option("--batch-size", help="Rows per produced batch / checkpoint.")]
Resume = Annotated[bool, typer.Option("--resume", help="Continue after the last confirmed batch.")]
BreakLock = Annotated[bool, typer.Option("--break-stale-lock", help="Clear a lock left by a killed run.")]
AllowDelete = Annotated[
    int | None,
    typer.Option(
        "--allow-delete",
        min=0,
        metavar="N",
        help="May delete up to N documents (orphans; with --full, what the fresh index lacks of the "
        "live one), whatever their share of an index. Without it a repair that would delete more "
        "than 5% of an index (or 10 documents, whichever is more), or a whole index, is refused, "
        "exit 8: the store may be the wrong database, or one restored without its rows.",
    ),
]
PreferStore = Annotated[
    bool,
    typer.Option(
        "--prefer-store",
        help="Write the store's state over documents that hold a later write than it (the store "
        "is behind: a database restored from an older backup whose state is to win). Without it "
        "they are left as they are.",
    ),
]
Wait = Annotated[float, typer.Option(help="Seconds to wait for the MAE consumer before verifying.")]
AllowStopped = Annotated[
    bool,
    typer.Option(
        "--allow-stopped-consumer",
        help="Produce although the MAE group has no member or does not move (refused otherwise, exit "
        "4): for a consumer you know will start soon. Until it has applied the replay, exit 4.",
    ),
]
Shard = Annotated[
    str | None,
    typer.Option(
        help="Repair shard i of N (i/N) only: its own checkpoint and lock; `auditor rebuild merge` "
        "combines the shards' --json outcomes."
    ),
]
ShardPlanOpt = Annotated[
    Path | None,
    typer.Option(
        envvar="AUDITOR_SHARD_PLAN",
        help="With --shard: shard i's urn range from this plan (`auditor scan --plan-shards N`), "
        "pushed down into every page read; without it shard i is the urns whose crc32 is i mod N.",
    ),
]
Workers = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Run the repair as K shard processes on this machine (a plan of K urn ranges is made, "
        "or --shard-plan's N shards run K at a time), then merge their outcomes.",
    ),
]
Output = Annotated[Path | None, typer.Option("--output", "-o", help="Write the outcome here.")]
JournalDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--journal-dir",
        envvar="AUDITOR_JOURNAL_DIR",
        help="Where --apply journals every write (before-images; `rebuild undo RUN` puts them back). "
        "Default: `journal` beside the state file.",
    ),
]
KeepDays = Annotated[
    float,
    typer.Option(
        "--journal-keep-days",
        envvar="AUDITOR_JOURNAL_KEEP_DAYS",
        help="Journals older than this are deleted when a repair starts (below 0: kept for ever).",
    ),
]

# what each command can return (--workers: the worst shard's); an unknown --urn: no row and no
# document has it (DataHub), no table has the id or name (OpenMetadata)
UNKNOWN = {
    ExitCode.UNKNOWN_URN: "unknown urn: no entity has an --urn (no row and no document has it; "
    "OpenMetadata: no id or fully qualified name): nothing is written"
}
PLAN = {ExitCode.OK: "the plan printed", ExitCode.USAGE: None, ExitCode.INCOMPLETE: None, **UNKNOWN}
WRITES = {
    ExitCode.OK: "applied and verified clean (or a dry run)",
    ExitCode.PERSISTENT: "still wrong after verification, or writes that failed for good (listed)",
    ExitCode.USAGE: None,
    ExitCode.INCOMPLETE: "could not complete: a backend down or failing (the checkpoint is kept: "
    "--resume continues)",
    ExitCode.LOCKED: None,
}
# a repair that deletes (a reindex: an orphan's documents) is refused beyond a small share
DELETES = {
    ExitCode.STORE_SMALLER: "refused, nothing written: it would delete more than a small share of "
    "an index (the store may be the wrong database); --allow-delete N allows N documents"
}


def _findings(path: Path | None, include: str) -> tuple[Any, Any, dict[str, str]]:
    """The report's findings, the verdicts to repair, and the report's own scope. A JSON Lines
    report's are read from the file at each pass, never all held (`reports.jsonl.taking`)."""
    from auditor.cli.scope import report_scope
    from auditor.core.model import Verdict
    from auditor.reports.jsonl import header_of, taking
    from auditor.reports.merge import from_dict

    if path is None:
        return None, frozenset({Verdict.DIVERGED}), {}
    try:
        verdicts = frozenset(Verdict(v.strip()) for v in include.split(",") if v.strip())
    except ValueError as exc:
        raise ConfigError(f"--include: {exc}", hint="diverged, invalid, stalled, in_flight") from None
    try:
        header = header_of(path)
        if header is not None:  # every finding as JSON Lines: read as a stream
            from_dict({**header, "findings": []})  # the header's schema version, checked
            return taking(path, header, verdicts), verdicts, report_scope(header)
        data = json.loads(path.read_text(encoding="utf-8"))
        report = from_dict(data)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"cannot read report {path}: {exc}") from None
    return report.findings, verdicts, report_scope(data)


def _behind(findings: Any) -> list[str]:
    """A JSON Lines report's indices behind, one sentence each (none for another report)."""
    from auditor.reports.jsonl import ReportFindings, behind_notes

    return behind_notes(findings.behind) if isinstance(findings, ReportFindings) else []


def _go(mode: str, opts: dict[str, Any]) -> None:
    def go() -> int:
        from auditor.api import rebuild
        from auditor.core.model import Selection
        from auditor.rebuild.request import RebuildRequest
        from auditor.reports.rebuild_report import render_console, to_json

        settings = settings_of(opts)
        shard = shard_of(opts.get("shard"))
        # with --workers the plan's ranges go to the shards (auditor.api.rebuild_in_shards, which
        # refuses --shard beside it)
        urn_range = None if opts.get("workers") else shard_range(opts.get("shard_plan"), shard)
        findings, verdicts, scope = _findings(opts["from_report"], opts["include"])
        if scope:  # the report's index prefix, topics and group, unless others were given
            from auditor.cli.scope import with_report_scope

            settings = with_report_scope(settings, scope, opts["from_report"])
        filters = (
            opts["entity_type"],
            opts["urn"],
            opts["urn_like"],
            opts["aspect"],
            opts["since"],
            opts["until"],
        )
        selection = None
        if findings is None:
            if not (any(filters) or opts["all_rows"]):
                raise ConfigError("nothing selected", hint="pass --from-report scan.json, filters, or --all")
            selection = Selection(
                entity_types=tuple(opts["entity_type"] or ()),
                urn_like=opts["urn_like"],
                since=since_of(opts["since"]),
                urns=tuple(opts["urn"] or ()),
                aspects=tuple(opts["aspect"] or ()),
                until=since_of(opts["until"]),
            )
        request = RebuildRequest(
            mode,
            findings=findings,
            selection=selection,
            include=verdicts,
            apply=opts["apply"] and mode != "plan",
            rate=opts.get("rate"),
            batch=opts.get("batch_size") or 1000,
            resume=opts.get("resume", False),
            break_stale_lock=opts.get("break_stale_lock", False),
            wait_seconds=opts.get("wait") or 300.0,
            allow_stopped_consumer=opts.get("allow_stopped_consumer", False),
            full=opts.get("full", False),
            replace_concrete=opts.get("replace_concrete_index", False),
            allow_delete=opts.get("allow_delete"),
            leave_out_invalid=opts.get("leave_out_invalid", False),
            prefer_store=opts.get("prefer_store", False),
            shard=shard,
            urn_range=urn_range,
            journal_dir=opts.get("journal_dir"),
            journal_keep_days=opts.get("journal_keep_days", 30.0),
            progress=(lambda what, n: err.print(f"  {what}: {n:,}", highlight=False))
            if err.is_terminal
            else None,
        )
        if opts.get("workers"):  # the shards' merged outcome has no notes: said here, once
            for note in _behind(findings):
                err.print(note, markup=False, highlight=False)
            return _in_shards(settings, request, opts)
        outcome = rebuild(settings, request)
        outcome.notes[:0] = _behind(findings)  # once per index, before the repair's own
        if _as_json(opts):
            write(opts["output"], to_json(outcome) + "\n")
        else:
            render_console(outcome, stdout_console())
        return outcome.exit_code

    run(
        opts["debug"],
        go,
        json_errors=json_on_stdout(opts.get("fmt"), opts.get("json_out", False), opts.get("output")),
    )


# the options plan, replay and reindex share (auditor.cli.options: declared once)
SELECTION = {
    "from_report": (FromReport, None),
    "include": (Include, "diverged"),
    "entity_type": (EntityType, None),
    "urn": (Urns, None),
    "urn_like": (UrnLike, None),
    "aspect": (Aspects, None),
    "since": (Since, None),
    "until": (Until, None),
    "all_rows": (All, False),
}
WRITING = {
    "apply": (Apply, False),
    "rate": (Rate, None),
    "resume": (Resume, False),
    "break_stale_lock": (BreakLock, False),
    "allow_delete": (AllowDelete, None),
    "prefer_store": (PreferStore, False),
    "shard": (Shard, None),
    "shard_plan": (ShardPlanOpt, None),
    "workers": (Workers, None),
    "journal_dir": (JournalDirOpt, None),
    "journal_keep_days": (KeepDays, 30.0),
}
OUTCOME = {"fmt": (OutFormatOpt, OutFormat.console), "json_out": (JsonFlag, False), "output": (Output, None)}


def _as_json(opts: dict[str, Any]) -> bool:
    """-f json, --json or a file to write (always JSON, for `rebuild merge`)."""
    return bool(opts.get("json_out") or opts.get("output") or opts.get("fmt") == OutFormat.json)


@rebuild_app.command("plan")
@exits(PLAN)
@with_options(SELECTION, {"rate": (Rate, None)}, OUTCOME, CONNECTION, DEBUG)
def plan_cmd(**opts: Any) -> None:
    """What would be done, where and how many (nothing is written)."""
    _go("plan", {**opts, "apply": False})


@rebuild_app.command("replay")
@exits(
    {
        **WRITES,
        ExitCode.STALLED: "the MAE consumer has no member or does not move: refused before producing "
        "(`rebuild reindex` needs no consumer); or, produced, it had not applied the replay by --wait "
        "(what waits is listed, nothing called consistent)",
        **UNKNOWN,
    }
)
@with_options(SELECTION, WRITING, OUTCOME, CONNECTION, DEBUG)
def replay_cmd(
    batch_size: Batch = 1000, wait: Wait = 300.0, allow_stopped_consumer: AllowStopped = False, **opts: Any
) -> None:
    """Produce one RESTATE MCL per selected row (forceIndexing) for DataHub's consumer to apply.

    Keyset-paged, every delivery confirmed, checkpointed per batch, order-guarded (a row written
    meanwhile is produced again after its newer write). Then waits for the MAE group to pass
    what it produced and re-audits the touched entities with the scan's own checks.
    """
    more = {"batch_size": batch_size, "wait": wait, "allow_stopped_consumer": allow_stopped_consumer}
    _go("replay", {**opts, **more})


@rebuild_app.command("reindex")
@exits({**WRITES, **UNKNOWN, **DELETES})
@with_options(SELECTION, WRITING, OUTCOME, CONNECTION, DEBUG)
def reindex_cmd(
    batch_size: Batch = 500,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="A fresh index per entity type (the live one's mappings and settings), loaded, caught "
            "up, verified, then swapped in with one atomic alias change; the old index is kept (a live "
            "index that is not an alias is refused: see --replace-concrete-index). A malformed row does "
            "not hold the swap: its document is carried over (see --leave-out-invalid) and it is reported "
            "invalid (exit 1). A "
            "fresh index not swapped in is deleted.",
        ),
    ] = False,
    replace_concrete_index: Annotated[
        bool,
        typer.Option(
            help="--full: a live index that is not an alias (as a fresh install creates them) is removed "
            "in the swap, a copy of it kept first for `rebuild undo` (room for it needed); without it, "
            "such an index is left alone and --full refused."
        ),
    ] = False,
    leave_out_invalid: Annotated[
        bool,
        typer.Option(
            help="--full: the document of a malformed row is left out of the new index instead of "
            "carried over (the row is reported invalid either way)."
        ),
    ] = False,
    **opts: Any,
) -> None:
    """Write the selected entities' documents straight from their rows (clears leftovers).

    Entity docs replace the stored ones in every field the rules derive (DataHub: a field no rule
    derives, a plugin's aspect or a newer release's field, keeps its stored value and is named in
    the report); system-metadata docs and edges are rewritten; the
    projections of an entity whose rows are gone are deleted (re-checked first). Bulk writes
    sized in bytes, every item checked, 429/503 retried; then a refresh and a re-audit.
    """
    more = {
        "batch_size": batch_size,
        "full": full,
        "replace_concrete_index": replace_concrete_index,
        "leave_out_invalid": leave_out_invalid,
    }
    _go("reindex", {**opts, **more})


@rebuild_app.command("after-restore")
@exits(
    {
        ExitCode.OK: "nothing behind, a dry run, or repaired and the final scan clean",
        ExitCode.PERSISTENT: "the repair or the final scan left something wrong",
        ExitCode.USAGE: None,
        ExitCode.INCOMPLETE: None,
        ExitCode.STALLED: "a replay refused (the MAE consumer has no member or does not move: --mode "
        "reindex needs none), or not applied by --wait",
        ExitCode.LOCKED: None,
        ExitCode.STORE_SMALLER: "the first scan found the store far smaller than the index: nothing repaired",
    }
)
@with_options(CONNECTION)
def after_restore_cmd(
    mode: Annotated[str, typer.Option(help="replay (through DataHub's consumer) or reindex.")] = "replay",
    since: Since = None,
    apply: Apply = False,
    rate: Rate = None,
    wait: Wait = 300.0,
    evidence: Annotated[Path, typer.Option(help="Write the evidence here: PATH.json and PATH.md.")] = Path(
        "after-restore"
    ),
    debug: DebugOpt = False,
    **opts: Any,
) -> None:
    """After restoring a search cluster (or a database): find how far search is behind, repair it.

    Scans (the restore detection gives the window; so does the system-metadata index's newest
    lastUpdated against the table's newest write), repairs the rows written in the window
    (replay by default, reindex on request; --since overrides the window), scans again, and
    writes the evidence: what was behind, the window, what was done and when, the server
    versions and the final audit's counts.
    """

    def go() -> int:
        from auditor.api import after_restore
        from auditor.reports.evidence import to_json, to_markdown

        if mode not in ("replay", "reindex"):
            raise ConfigError(f"--mode {mode!r}: use replay or reindex")
        settings = settings_of(opts)
        found = after_restore(
            settings, mode=mode, apply=apply, since=since_of(since), rate=rate, wait_seconds=wait
        )
        write(evidence.with_suffix(".json"), to_json(found))
        write(evidence.with_suffix(".md"), to_markdown(found))
        console = stdout_console()
        console.print(to_markdown(found), markup=False, highlight=False)
        if found.outcome is None:
            return 0
        if not apply:
            return 0
        if found.outcome.exit_code == ExitCode.STALLED:  # the replay waits on the consumer
            return int(ExitCode.STALLED)
        return 1 if found.final_exit_code not in (0, 4) or found.outcome.exit_code else 0

    run(debug, go)


def _in_shards(settings: Any, request: Any, opts: dict[str, Any]) -> int:
    """`--workers K`: `auditor.api.rebuild_in_shards`, its merged outcome rendered."""
    from auditor.api import rebuild_in_shards
    from auditor.reports.rebuild_merge import render_console

    def started(run: Any) -> None:
        if err.is_terminal:
            err.print(f"  shard {run.label} started (log {run.log})", highlight=False, markup=False)

    merged = rebuild_in_shards(
        settings, request, int(opts["workers"]), shard_plan=opts.get("shard_plan"), started=started
    )
    if _as_json(opts):
        write(opts["output"], json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
    else:
        render_console(merged, stdout_console())
    return int(merged["exit_code"])


@rebuild_app.command("merge")
@exits(
    {
        ExitCode.OK: "every shard applied and verified clean",
        ExitCode.PERSISTENT: "a shard still wrong after verification",
        ExitCode.USAGE: "a file is not a rebuild outcome, or a usage error",
        ExitCode.INCOMPLETE: "a shard could not complete, or has no outcome",
        ExitCode.STORE_SMALLER: "a shard refused to delete more than a small share of an index",
        ExitCode.STALLED: "a replay shard refused, or not applied, as its MAE consumer does not move",
    },
    "Exit codes (the worst shard's):",
)
def merge_cmd(
    outcomes: Annotated[
        list[Path], typer.Argument(help="The --json outcomes of `rebuild replay|reindex --shard i/N`.")
    ],
    shards: Annotated[
        int | None, typer.Option(help="N: a shard of 0..N-1 with no outcome makes the merge exit 3.")
    ] = None,
    fmt: OutFormatOpt = OutFormat.console,
    json_out: JsonFlag = False,
    output: Output = None,
    debug: DebugOpt = False,
) -> None:
    """One outcome from a sharded repair's: counts summed, what is still wrong listed per urn."""

    def go() -> int:
        from auditor.reports.rebuild_merge import merge_outcomes, render_console

        parts = []
        for path in outcomes:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"cannot read outcome {path}: {exc}") from None
            if not isinstance(data, dict) or "counts" not in data:
                raise ConfigError(f"{path} is not a rebuild outcome (`auditor rebuild ... --json`)")
            parts.append(data)
        merged = merge_outcomes(parts, shards)
        if _as_json({"fmt": fmt, "json_out": json_out, "output": output}):
            write(output, json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
        else:
            render_console(merged, stdout_console())
        return int(merged["exit_code"])

    run(debug, go, json_errors=json_on_stdout(fmt, json_out, output))
