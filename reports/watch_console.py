"""The watch's rolling summary and the probe's result on a terminal (and as JSON)."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

from auditor.core.watch_model import Outcome, ProbeResult, WatchSnapshot
from auditor.reports.escape import console_markup


def _s(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.2f}s"


def summary(snap: WatchSnapshot) -> dict[str, Any]:
    """The snapshot as plain data (the JSON lines `--format json` prints)."""
    h = snap.histogram
    return {
        "schema": "watch/1",
        "at": round(snap.taken_at, 3),
        "group": snap.group,
        "slo_seconds": snap.slo_seconds,
        "objective": snap.objective,
        "resolution_seconds": snap.resolution_seconds,
        "latency": {f"p{int(q * 100)}": h.quantile(q) for q in (0.5, 0.95, 0.99)} | {"count": h.total},
        "within_slo": snap.within_slo,
        "events": dict(snap.outcomes),
        "pending": snap.pending,
        # the sample: 1 in `every` consumed events is checked (1: all), at this consume rate
        "sampling": {
            "every": snap.every,
            "consumed_per_second": round(snap.consumed_per_second, 1),
            "behind": snap.behind,
        },
        "burn": [
            {
                "alert": w.name,
                "severity": w.severity,
                "factor": w.factor,
                "long": round(lr, 4),
                "short": round(sr, 4),
                "firing": firing,
            }
            for w, lr, sr, firing in snap.burn_rates()
        ],
        "findings": {f"{v}/{s}": n for (v, s), n in sorted(snap.finding_counts.items())},
        "consumer": [
            {
                "topic": p.topic,
                "partition": p.partition,
                "committed": p.committed,
                "end": p.end,
                "time_lag_seconds": round(p.time_lag_seconds, 3),
                "status": p.status.value,
            }
            for p in snap.partitions
        ],
    } | ({"heal": snap.heal} if snap.heal is not None else {})


def render(snap: WatchSnapshot, console: Console) -> None:
    h = snap.histogram
    share = snap.within_slo
    table = Table(
        title=f"auditor watch ({console_markup(snap.group)}): SLO {snap.slo_seconds:g}s for "
        f"{snap.objective:.2%} of events, resolution {snap.resolution_seconds:g}s",
        title_justify="left",
    )
    for column in ("p50", "p95", "p99", "within SLO", "good", "late", "not checked", "pending"):
        table.add_column(column, justify="right")
    table.add_row(
        _s(h.quantile(0.5)),
        _s(h.quantile(0.95)),
        _s(h.quantile(0.99)),
        "-" if share is None else f"{share:.2%}",
        str(snap.outcomes.get(Outcome.GOOD, 0)),
        str(snap.outcomes.get(Outcome.LATE, 0)),
        str(snap.outcomes.get(Outcome.NOT_CHECKED, 0)),
        f"{snap.pending}/{snap.pending_cap}",
    )
    console.print(table)
    if snap.every > 1:
        console.print(
            f"  [yellow]sampling[/]: 1 in {snap.every} events checked "
            f"({snap.consumed_per_second:,.0f} consumed/s, {snap.behind if snap.behind is not None else '?'} "
            "waiting): the latencies are the sample's"
        )
    burn = Table(show_header=True, box=None)
    for column in ("burn alert", "long", "short", "factor", ""):
        burn.add_column(column)
    for w, lr, sr, firing in snap.burn_rates():
        burn.add_row(
            console_markup(w.name),
            f"{lr:.2f}x",
            f"{sr:.2f}x",
            f"{w.factor:g}x",
            "[red]FIRING[/]" if firing else "ok",
        )
    console.print(burn)
    for p in snap.partitions:
        if p.status.value != "ok" or p.time_lag_seconds > 0:
            console.print(
                f"  MAE {console_markup(p.topic)}[{p.partition}]: {p.status.value}, "
                f"time lag {p.time_lag_seconds:.1f}s"
            )
    for (verdict, subkind), n in sorted(snap.finding_counts.items()):
        console.print(f"  late events: {n} {verdict} ({console_markup(subkind)})")
    if snap.heal is not None:
        _render_heal(snap.heal, console)


def _render_heal(heal: dict[str, Any], console: Console) -> None:
    """The heal queue's line: what the watch handed and how it ended (auditor/heal/queue.py)."""
    urns = heal["urns"]
    refused = ", ".join(f"{g} {n}" for g, n in sorted(heal["refused"].items()) if n)
    console.print(
        f"  heal: {urns['handed']} late entities handed, {heal['queued']} queued, {urns['healed']} healed, "
        f"{urns['converged']} converged, {urns['left']} left to a person in {heal['runs']} heals"
        + (f"; [red]refused[/]: {console_markup(refused)}" if refused else "")
    )


def probe_summary(result: ProbeResult) -> dict[str, Any]:
    return {
        "schema": "probe/1",
        "urn": result.urn,
        "aspect": result.aspect,
        "path": result.path,
        "slo_seconds": result.slo_seconds,
        "latency_seconds": result.latency,
        "publish_seconds": None if result.published_at is None else result.published_at - result.written_at,
        "within_slo": result.within_slo,
        "resolution_seconds": result.resolution_seconds,
        "partition": result.partition,
        "offset": result.offset,
        "notes": list(result.notes),
    }


def render_probe(result: ProbeResult, console: Console) -> None:
    verdict = "[green]within SLO[/]" if result.within_slo else "[red]over SLO[/]"
    publish = None if result.published_at is None else result.published_at - result.written_at
    console.print(
        f"canary {console_markup(result.urn)} {console_markup(result.aspect)} via {result.path}: "
        f"write -> MCL {_s(publish)}, write -> index {_s(result.latency)} "
        f"(SLO {result.slo_seconds:g}s, resolution {result.resolution_seconds:g}s): {verdict}"
    )
    for note in result.notes:
        console.print(f"  {console_markup(note)}")
