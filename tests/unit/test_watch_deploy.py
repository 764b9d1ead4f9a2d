"""deploy/prometheus/auditor-watch-alerts.yml parses and uses only what the watch emits; every
metric the watch and the probe emit is in docs/watch.md."""

from __future__ import annotations

import re
import time
from pathlib import Path

import yaml
from test_deploy import MATCHER, METRIC, check_expr

from auditor.core.lag_table import GroupStatus
from auditor.core.slo import GOOGLE_30D, BurnRate, LatencyHistogram
from auditor.core.watch_model import Outcome, PartitionWatch, ProbeResult, WatchSnapshot
from auditor.reports.watch_metrics import render, render_probe

ROOT = Path(__file__).resolve().parents[2]


def snapshot() -> WatchSnapshot:
    now = time.time()
    h = LatencyHistogram()
    h.observe(1.5)
    burn = BurnRate(0.99, GOOGLE_30D)
    burn.record(now, False)
    return WatchSnapshot(
        taken_at=now,
        started_at=now - 10,
        slo_seconds=60,
        objective=0.99,
        resolution_seconds=1,
        histogram=h,
        burn=burn,
        outcomes=dict.fromkeys(Outcome.ALL, 1),
        pending=1,
        pending_cap=10,
        consumed=4,
        group="g",
        mae_group="m",
        partitions=[PartitionWatch("t", 0, 1, 2, 3.0, GroupStatus.STALL)],
        finding_counts={("stalled", "missing_document"): 1},
    )


def emitted() -> tuple[set[str], dict[str, set[str]]]:
    text = render(snapshot()) + render_probe(ProbeResult("u", "a", "store", 60, 0.0, 0.1, 1.0, 0.5))
    series = [line for line in text.splitlines() if line and not line.startswith("#")]
    names = {line.split("{")[0].split(" ")[0] for line in series}
    names |= {n.rsplit("_", 1)[0] for n in names if n.endswith(("_bucket", "_sum", "_count"))}
    values: dict[str, set[str]] = {}
    for line in series:
        for label, _, value in MATCHER.findall(line.split(" ")[0]):
            values.setdefault(label, set()).add(value)
    values["outcome"] = set(Outcome.ALL)
    values["status"] = {s.value for s in GroupStatus}
    return names, values


def test_the_watch_alert_rules_parse_and_use_emitted_metrics() -> None:
    names, values = emitted()
    rules = yaml.safe_load((ROOT / "deploy" / "prometheus" / "auditor-watch-alerts.yml").read_text())
    seen = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert {"alert", "expr", "for", "labels", "annotations"} <= set(rule), rule
            assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["for"]
            assert rule["labels"]["severity"] in {"info", "warning", "critical"}
            check_expr(rule["expr"], names, values)
            seen.append(rule["alert"])
    assert len(seen) == len(set(seen)) >= 5


def test_every_watch_metric_is_documented() -> None:
    names, _ = emitted()
    documented = set(METRIC.findall((ROOT / "docs" / "watch.md").read_text()))
    assert names - {n for n in names if n.endswith(("_bucket", "_sum", "_count"))} <= documented, (
        names - documented
    )
