"""One outcome from the JSON outcomes of a sharded repair (`rebuild replay|reindex --shard i/N`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console

from auditor.exit_codes import ExitCode, worst
from auditor.reports.escape import console_markup, console_text


def _sum(parts: Sequence[dict[str, Any]], key: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in parts:
        for name, n in (part.get(key) or {}).items():
            out[name] = out.get(name, 0) + int(n)
    return out


def merge_outcomes(parts: Sequence[dict[str, Any]], shards: int | None = None) -> dict[str, Any]:
    """The shards' outcomes as one: counts and rows summed, failures and what is still wrong
    listed, each shard's exit code kept. Exit code: the worst of the shards (`exit_codes.worst`:
    3 a shard could not complete, 2 one was refused, 6 one found the target locked, 7 an unknown
    urn, 1 one is still wrong, 0 all applied and verified clean); a shard missing from `shards`
    expected is incomplete (3)."""
    done = [p for p in parts if "error" not in p]
    seen = {str(p.get("shard")) for p in parts}
    missing = [f"{i}/{shards}" for i in range(shards or 0) if f"{i}/{shards}" not in seen]
    incomplete = ExitCode.INCOMPLETE
    codes = [int(p.get("exit_code", incomplete)) for p in parts] + [incomplete] * len(missing)
    caught = [p.get("consumer_caught_up") for p in done if p.get("consumer_caught_up") is not None]
    return {
        "mode": next((p.get("mode") for p in done), None),
        "applied": any(p.get("applied") for p in done),
        "exit_code": int(worst(codes)),
        "shards": [
            {
                k: p.get(k)
                for k in ("shard", "exit_code", "rows", "counts", "checkpoint", "error", "urn_range")
            }
            for p in parts
        ],
        "missing_shards": missing,
        "rows": sum(int(p.get("rows") or 0) for p in done),
        "counts": _sum(done, "counts"),
        "elsewhere": _sum(done, "elsewhere"),
        "failed": [u for p in done for u in p.get("failed") or []],
        "failed_why": {k: v for p in done for k, v in (p.get("failed_why") or {}).items()},
        "consumer_caught_up": all(caught) if caught else None,
        "verified_urns": sum(int(p.get("verified_urns") or 0) for p in done),
        "still_wrong": [f for p in done for f in p.get("still_wrong") or []],
        "waiting": [f for p in done for f in p.get("waiting") or []],
        "checkpoints": [p["checkpoint"] for p in done if p.get("checkpoint")],
        "journals": [p["journal"] for p in done if p.get("journal")],  # one run per shard (rebuild undo)
        "warnings": sorted({w for p in done for w in p.get("warnings") or []}),
    }


def render_console(merged: dict[str, Any], console: Console) -> None:
    """The merged outcome, a line per shard, then what is still wrong."""
    code = merged["exit_code"]
    colour = "green" if code == 0 else "red"
    console.print(
        f"[bold]rebuild {merged.get('mode') or '?'}[/] in {len(merged['shards'])} shards: "
        f"[{colour}]exit {code}[/]",
        highlight=False,
    )
    for shard in merged["shards"]:
        if shard.get("error"):
            what = console_markup(str(shard["error"]))
        else:
            what = (
                ", ".join(f"{k} {v}" for k, v in sorted((shard.get("counts") or {}).items()))
                or "nothing to do"
            )
        console.print(f"  shard {shard['shard']}: exit {shard['exit_code']}  {what}", highlight=False)
    for label in merged["missing_shards"]:
        console.print(f"[red]  shard {label}: no outcome[/]", highlight=False)
    done = ", ".join(f"{k} {v}" for k, v in sorted(merged["counts"].items()))
    if not merged["applied"]:
        done = "dry run (nothing written; add --apply)"
    console.print(f"  {merged['rows']:,} rows in scope; done: {done or 'nothing'}", highlight=False)
    if merged["consumer_caught_up"] is not None:
        caught = "passed" if merged["consumer_caught_up"] else "did NOT pass"
        console.print(f"  the MAE consumer {caught} every offset the replay produced", highlight=False)
    wrong = merged["still_wrong"]
    if wrong or merged["failed"]:
        console.print(f"[red]still wrong after verification of {merged['verified_urns']} entities:[/]")
        for f in wrong[:20]:
            console.print(
                "  " + console_text(f"{f.get('subkind')} {f.get('urn')}"), markup=False, highlight=False
            )
        for urn in merged["failed"][:20]:
            why = merged["failed_why"].get(urn)
            console.print("  write failed: " + console_text(urn + (f" ({why})" if why else "")), markup=False)
    if merged["consumer_caught_up"] is False and merged["applied"]:
        waiting = merged["waiting"]
        console.print(f"[yellow]not verified: {len(waiting)} findings still wait on the MAE consumer[/]")
        for f in waiting[:20]:
            console.print(
                "  " + console_text(f"{f.get('verdict')} {f.get('urn')}"), markup=False, highlight=False
            )
    elif merged["applied"] and code == 0 and not (wrong or merged["failed"]):
        console.print(f"[green]verified: {merged['verified_urns']} entities consistent[/]")
    for path in merged["checkpoints"]:
        console.print(f"  checkpoint {console_markup(path)} (--resume continues)", highlight=False)
    for run in merged.get("journals", []):
        console.print(
            f"  journaled as {console_markup(run)} (auditor rebuild undo {console_markup(run)})",
            highlight=False,
        )
    for w in merged["warnings"]:
        console.print(f"[yellow]warning:[/] {console_markup(w)}", highlight=False)
