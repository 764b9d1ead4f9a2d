"""`auditor watch`: how stale search is, continuously: propagation latency, SLI, burn-rate alerts."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from auditor.cli import app
from auditor.cli.common import (
    ConsumerGroupOpt,
    OutFormat,
    OutFormatOpt,
    json_on_stdout,
    run,
    stdout_console,
    write,
)
from auditor.cli.exits import exits
from auditor.cli.options import DEBUG, SOURCES, settings_of, with_options
from auditor.exit_codes import ExitCode

HEAL_EVERY = 60.0  # seconds between heals, with --heal-policy
HEAL_BATCH = 100  # late entities re-checked per heal

CODES = {
    ExitCode.OK: "no burn-rate alert firing",
    ExitCode.PERSISTENT: "a burn-rate alert is firing",
    ExitCode.USAGE: "usage or configuration error (the MAE group as --group, say)",
    ExitCode.INCOMPLETE: "a backend failed",
}


@app.command()
@exits(CODES, "Exit codes (with --duration, or on Ctrl-C):")
@with_options(SOURCES, DEBUG)
def watch(
    group: Annotated[
        str,
        typer.Option(help="The watch's own consumer group (never the MAE consumer's: refused)."),
    ] = "auditor-watch",
    topic: Annotated[
        list[str] | None,
        typer.Option(help="Change-log topic to tail (repeat; default: the versioned MCL topic)."),
    ] = None,
    mae_group: ConsumerGroupOpt = None,  # the MAE consumer's group, sampled for verdicts
    slo: Annotated[float, typer.Option(help="Seconds an event may take to show in the index.")] = 60.0,
    objective: Annotated[
        float, typer.Option(help="Share of events that must show within --slo (the SLO's target).")
    ] = 0.99,
    interval: Annotated[
        float, typer.Option(help="Seconds between reads of the index: the latency's resolution.")
    ] = 1.0,
    pending_cap: Annotated[
        int, typer.Option(help="Events followed at once; more are counted 'not_checked' (memory bound).")
    ] = 100_000,
    max_reads: Annotated[
        int,
        typer.Option(help="Events read per --interval (two docs each), oldest first: the load on search."),
    ] = 2000,
    check_every: Annotated[
        int,
        typer.Option(
            min=0,
            max=4096,
            help="Check 1 in K events (1: every event). 0: every event while the watch keeps up, "
            "a sample of 1 in 2, 4, ... 64 while a burst leaves it behind (said in the output and "
            "the metrics).",
        ),
    ] = 0,
    give_up: Annotated[
        float,
        typer.Option(
            help="Seconds a late event is still followed for its latency; with --heal-policy, also "
            "how long a queued entity is re-checked (from its first re-check) before it is given up."
        ),
    ] = 3600.0,
    window_scale: Annotated[
        float,
        typer.Option(help="Scale the burn-rate windows (1 h/5 m, 6 h/30 m, 3 d/6 h); tests use 0.001."),
    ] = 1.0,
    bucket_seconds: Annotated[
        float | None, typer.Option(help="Width of the burn-rate ring's buckets (default 60 s x scale).")
    ] = None,
    from_beginning: Annotated[
        bool, typer.Option(help="A new group starts at the topics' beginning instead of their end.")
    ] = False,
    duration: Annotated[
        float | None, typer.Option(help="Stop after this many seconds (default: until interrupted).")
    ] = None,
    every: Annotated[float, typer.Option(help="Seconds between summaries and metric writes.")] = 10.0,
    metrics_file: Annotated[
        Path | None, typer.Option(help="Prometheus textfile, rewritten atomically every --every seconds.")
    ] = None,
    metrics_addr: Annotated[
        str | None, typer.Option(help="Serve GET /metrics on HOST:PORT (e.g. 0.0.0.0:9464).")
    ] = None,
    heal_policy: Annotated[
        Path | None,
        typer.Option(
            help="Heal what it sees late past --slo by this policy (docs/heal.md): each late entity is "
            "queued, re-checked by a scan of it after the policy's persistence time, and healed only "
            "if that scan proves it diverged, under the policy's guards and budgets."
        ),
    ] = None,
    heal_every: Annotated[
        float | None,
        typer.Option(
            help="With --heal-policy: at most one heal (one re-check scan) per this many seconds "
            f"[default: {HEAL_EVERY:.0f}]."
        ),
    ] = None,
    heal_batch: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="With --heal-policy: at most this many late entities re-checked per heal "
            f"[default: {HEAL_BATCH}].",
        ),
    ] = None,
    fmt: OutFormatOpt = OutFormat.console,
    json_lines: Annotated[
        bool, typer.Option("--json", help="The same as -f json: a JSON line per summary (schema watch/1).")
    ] = False,
    **opts: Any,
) -> None:
    """Tail the change-log topics in a consumer group of the watch's own and time each event
    until search shows it: the aspect's fields in its entity doc and its system-metadata doc,
    read as a search sees them (at the last refresh), every --interval seconds.

    Latency counts from the MCL's Kafka timestamp (set when GMS produced it). Events not shown
    within --slo are late: they burn the error budget and become findings with the scan's
    verdicts (in_flight, stalled, diverged). Metrics: p50/p95/p99, the share within the SLO and
    the multi-window burn rates (page at 14.4x over 1 h and 5 m, 6x over 6 h and 30 m; ticket at
    1x over 3 d and 6 h). Offsets are committed only once the events below are settled: a
    restart resumes without losing or double-counting. An MCL never published is not seen
    here: `auditor scan` reports it (event_never_published). See docs/watch.md.

    With --heal-policy, each late entity is queued and re-checked by a scan of it after the
    policy's persistence time; what that scan proves diverged is healed (docs/heal.md).
    """

    def go() -> int:
        _heal_knobs_need_policy(heal_policy, heal_every, heal_batch)
        from auditor.core.slo import GOOGLE_30D, scaled
        from auditor.core.watch_model import WatchConfig
        from auditor.reports.watch_console import render, summary
        from auditor.reports.watch_metrics import render as metrics
        from auditor.watch.expose import MetricsServer

        settings = settings_of({**opts, "consumer_group": mae_group})
        from auditor.api import platform_of
        from auditor.platforms.base import Capability

        platform = platform_of(settings)
        platform.require(Capability.WATCH)  # (a platform from the config or env)
        if not 0 < objective < 1:
            from auditor.errors import ConfigError

            raise ConfigError(f"--objective {objective}: a share between 0 and 1, e.g. 0.99")
        cfg = WatchConfig(
            slo_seconds=slo,
            objective=objective,
            check_interval=interval,
            pending_cap=pending_cap,
            give_up_seconds=give_up,
            max_reads=max_reads,
            every=check_every,
            bucket_seconds=bucket_seconds or 60.0 * window_scale,
            windows=scaled(GOOGLE_30D, window_scale),
            index_prefix=settings.index_prefix,
            mae_group=mae_group or settings.mae_consumer_group,
            sample_interval=min(5.0, max(interval, 0.5)),
            commit_interval=min(5.0, max(interval, 0.5)),
            visibility_seconds=settings.index_visibility_seconds,
        )
        server = MetricsServer(metrics_addr) if metrics_addr else None
        console = stdout_console()
        stopping: list[bool] = []
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
        queue = _heal_queue(settings, heal_policy, heal_every, heal_batch, give_up)

        def show(snap: Any) -> None:
            if queue is not None:
                snap.heal = queue.summary()
            text = metrics(snap)
            if metrics_file:
                write(metrics_file, text)
            if server:
                server.publish(text)
            if json_lines or fmt == OutFormat.json:
                sys.stdout.write(json.dumps(summary(snap)) + "\n")
                sys.stdout.flush()
            else:
                render(snap, console)

        try:
            with platform.open_watch(
                settings, cfg, group, topic or (), "earliest" if from_beginning else "latest"
            ) as w:
                if queue is not None:
                    w.listen(queue.hand)
                    queue.run()
                try:
                    snap = w.run(duration, every, show, stop=lambda: bool(stopping))
                except KeyboardInterrupt:
                    w.commit()
                    snap = w.snapshot()
                if queue is not None:
                    queue.stop(timeout=60.0)
                show(snap)
        finally:
            if queue is not None:
                queue.stop(timeout=0)
            if server:
                server.close()
        return 1 if any(firing for *_, firing in snap.burn_rates()) else 0

    run(opts["debug"], go, json_errors=json_on_stdout(fmt, json_lines))


def _heal_knobs_need_policy(policy: Path | None, every: float | None, batch: int | None) -> None:
    """--heal-every and --heal-batch without --heal-policy would be accepted and do nothing: refused."""
    given = [name for name, v in (("--heal-every", every), ("--heal-batch", batch)) if v is not None]
    if policy is None and given:
        from auditor.errors import ConfigError

        raise ConfigError(
            f"{' and '.join(given)} without --heal-policy: the watch heals nothing without a policy",
            hint="add --heal-policy FILE (docs/heal.md), or leave the heal options out",
        )


def _heal_queue(
    settings: Any, policy: Path | None, every: float | None, batch: int | None, give_up: float
) -> Any:
    """The heal queue of --heal-policy (None: not asked). A policy that enables no healing is
    refused: the watch would queue and re-scan entities only to leave every one of them."""
    if policy is None:
        return None
    from auditor.errors import ConfigError
    from auditor.heal.policy import load_policy
    from auditor.heal.queue import HealQueue

    parsed = load_policy(policy)
    if not parsed.enabled:
        raise ConfigError(
            f"--heal-policy {policy}: the policy does not enable healing",
            hint="[heal] enabled = true in the policy, or no --heal-policy",
        )

    def say(text: str) -> None:
        sys.stderr.write(text + "\n")

    state_dir = Path(settings.state_file).parent
    return HealQueue(
        settings,
        parsed,
        every=HEAL_EVERY if every is None else every,
        batch=HEAL_BATCH if batch is None else batch,
        give_up=give_up,
        state_dir=state_dir,
        log=say,
    )
