"""Prometheus exposition of `auditor watch` (and `auditor probe`): latency, SLI, burn rates."""

from __future__ import annotations

import math
from typing import Any

from auditor.core.watch_model import Outcome, ProbeResult, WatchSnapshot
from auditor.reports.escape import prom_label as _label

QUANTILES = (0.5, 0.95, 0.99)


def _bound(value: float) -> str:
    return "+Inf" if math.isinf(value) else f"{value:g}"


def render(snap: WatchSnapshot) -> str:
    h = snap.histogram
    out = [
        "# HELP auditor_watch_propagation_seconds Time from an MCL's Kafka timestamp to the first read "
        "showing the index reflect it (read at most auditor_watch_resolution_seconds late).",
        "# TYPE auditor_watch_propagation_seconds histogram",
    ]
    out += [f'auditor_watch_propagation_seconds_bucket{{le="{_bound(b)}"}} {n}' for b, n in h.cumulative()]
    out += [
        f"auditor_watch_propagation_seconds_sum {h.sum:.3f}",
        f"auditor_watch_propagation_seconds_count {h.total}",
    ]
    out += [
        "# HELP auditor_watch_propagation_quantile_seconds Latency quantiles since the watch started "
        "(interpolated in the histogram's buckets).",
        "# TYPE auditor_watch_propagation_quantile_seconds gauge",
    ]
    for q in QUANTILES:
        value = h.quantile(q)
        out.append(
            f'auditor_watch_propagation_quantile_seconds{{quantile="{q:g}"}} '
            f"{'NaN' if value is None else f'{value:.3f}'}"
        )
    out += [
        "# HELP auditor_watch_events_total Change-log events by how they were settled.",
        "# TYPE auditor_watch_events_total counter",
    ]
    out += [f'auditor_watch_events_total{{outcome="{o}"}} {snap.outcomes.get(o, 0)}' for o in Outcome.ALL]
    out += [
        "# HELP auditor_watch_check_every 1 in how many consumed events the watch checks (1: all; more "
        "while it is behind a burst).",
        "# TYPE auditor_watch_check_every gauge",
        f"auditor_watch_check_every {snap.every}",
        "# HELP auditor_watch_consumed_per_second Change-log events consumed a second (last check interval).",
        "# TYPE auditor_watch_consumed_per_second gauge",
        f"auditor_watch_consumed_per_second {snap.consumed_per_second:.1f}",
    ]
    share = snap.within_slo
    out += [
        "# HELP auditor_watch_within_slo_ratio Share of settled events reflected within the SLO.",
        "# TYPE auditor_watch_within_slo_ratio gauge",
        f"auditor_watch_within_slo_ratio {'NaN' if share is None else f'{share:.6f}'}",
        "# HELP auditor_watch_slo_seconds The freshness SLO: an event must show within this.",
        "# TYPE auditor_watch_slo_seconds gauge",
        f"auditor_watch_slo_seconds {snap.slo_seconds:g}",
        "# HELP auditor_watch_slo_objective Share of events that must meet the SLO.",
        "# TYPE auditor_watch_slo_objective gauge",
        f"auditor_watch_slo_objective {snap.objective:g}",
        "# HELP auditor_watch_resolution_seconds How often the index is read: the latency's resolution.",
        "# TYPE auditor_watch_resolution_seconds gauge",
        f"auditor_watch_resolution_seconds {snap.resolution_seconds:g}",
        "# HELP auditor_watch_pending_events Events waiting to show in the index (bounded by the cap).",
        "# TYPE auditor_watch_pending_events gauge",
        f"auditor_watch_pending_events {snap.pending}",
        "# HELP auditor_watch_burn_rate Error-budget burn rate over a window "
        "(1 = the budget lasts the SLO period).",
        "# TYPE auditor_watch_burn_rate gauge",
    ]
    alerts = []
    for w, long_rate, short_rate, firing in snap.burn_rates():
        for span, rate in (("long", long_rate), ("short", short_rate)):
            seconds = w.long_seconds if span == "long" else w.short_seconds
            out.append(
                f'auditor_watch_burn_rate{{alert="{_label(w.name)}",window="{span}",'
                f'seconds="{seconds:g}"}} {rate:.4f}'
            )
        alerts.append(
            f'auditor_watch_burn_alert{{alert="{_label(w.name)}",severity="{_label(w.severity)}",'
            f'factor="{w.factor:g}"}} {int(firing)}'
        )
    out += [
        "# HELP auditor_watch_burn_alert 1 when both windows of a multi-window burn-rate alert "
        "exceed its factor.",
        "# TYPE auditor_watch_burn_alert gauge",
        *alerts,
        "# HELP auditor_watch_findings_total Events late past the SLO, by the scan's verdicts.",
        "# TYPE auditor_watch_findings_total counter",
    ]
    out += [
        f'auditor_watch_findings_total{{verdict="{_label(v)}",subkind="{_label(s)}"}} {n}'
        for (v, s), n in sorted(snap.finding_counts.items())
    ]
    out += [
        "# HELP auditor_watch_consumer_time_lag_seconds The MAE group's time lag "
        "(interpolated in a table of log-end points).",
        "# TYPE auditor_watch_consumer_time_lag_seconds gauge",
    ]
    status_lines = []
    for p in snap.partitions:
        labels = f'topic="{_label(p.topic)}",partition="{p.partition}"'
        out.append(f"auditor_watch_consumer_time_lag_seconds{{{labels}}} {p.time_lag_seconds:.3f}")
        status_lines.append(f'auditor_watch_consumer_status{{{labels},status="{_label(p.status.value)}"}} 1')
    out += [
        "# HELP auditor_watch_consumer_status The MAE group's status per partition (Burrow's rules).",
        "# TYPE auditor_watch_consumer_status gauge",
        *status_lines,
        "# HELP auditor_watch_up_seconds Seconds since the watch started.",
        "# TYPE auditor_watch_up_seconds gauge",
        f"auditor_watch_up_seconds {snap.taken_at - snap.started_at:.1f}",
    ]
    if snap.heal is not None:
        out += _heal(snap.heal)
    return "\n".join(out) + "\n"


def _heal(heal: dict[str, Any]) -> list[str]:
    """The heal queue's counters (`auditor watch --heal-policy`, docs/heal.md)."""
    return [
        "# HELP auditor_watch_heal_urns_total Late entities handed to the heal queue, and how each ended.",
        "# TYPE auditor_watch_heal_urns_total counter",
        *(f'auditor_watch_heal_urns_total{{outcome="{_label(o)}"}} {n}' for o, n in heal["urns"].items()),
        "# HELP auditor_watch_heal_refused_total Heals of late entities a guard refused, by guard.",
        "# TYPE auditor_watch_heal_refused_total counter",
        *(f'auditor_watch_heal_refused_total{{guard="{_label(g)}"}} {n}' for g, n in heal["refused"].items()),
        "# HELP auditor_watch_heal_runs_total Heals the queue ran (one scan of its due entities each).",
        "# TYPE auditor_watch_heal_runs_total counter",
        f"auditor_watch_heal_runs_total {heal['runs']}",
        "# HELP auditor_watch_heal_queued Late entities waiting for their re-check.",
        "# TYPE auditor_watch_heal_queued gauge",
        f"auditor_watch_heal_queued {heal['queued']}",
    ]


def render_probe(result: ProbeResult) -> str:
    latency = result.latency
    lines = [
        "# HELP auditor_probe_latency_seconds The canary's write-to-index time (NaN: not reflected).",
        "# TYPE auditor_probe_latency_seconds gauge",
        f"auditor_probe_latency_seconds {'NaN' if latency is None else f'{latency:.3f}'}",
        "# HELP auditor_probe_publish_seconds The canary's write-to-MCL time (NaN: MCL not seen).",
        "# TYPE auditor_probe_publish_seconds gauge",
    ]
    publish = None if result.published_at is None else result.published_at - result.written_at
    lines.append(f"auditor_probe_publish_seconds {'NaN' if publish is None else f'{publish:.3f}'}")
    lines += [
        "# HELP auditor_probe_within_slo 1 if the canary showed in the index within the SLO.",
        "# TYPE auditor_probe_within_slo gauge",
        f"auditor_probe_within_slo {int(result.within_slo)}",
        "# HELP auditor_probe_timestamp_seconds When the probe wrote the canary.",
        "# TYPE auditor_probe_timestamp_seconds gauge",
        f"auditor_probe_timestamp_seconds {result.written_at:.0f}",
    ]
    return "\n".join(lines) + "\n"
