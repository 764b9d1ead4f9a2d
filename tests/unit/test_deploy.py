"""deploy/: the alert rules and the dashboard parse, and use only metrics and label values the
tool emits (rendered here from a report with every kind of series)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

from auditor.core.model import (
    Classified,
    Evidence,
    Finding,
    Kind,
    PartitionHealth,
    PartitionPosition,
    Report,
    Selection,
    Verdict,
)
from auditor.reports.prometheus import render

ROOT = Path(__file__).resolve().parents[2]
METRIC = re.compile(r"\b(auditor_[a-z0-9_]+)\b")
MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"')


def emitted() -> tuple[set[str], dict[str, set[str]]]:
    """The metric names a scan writes, and the values each label can take."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    report = Report(started_at=now, scope=Selection(), finished_at=now + timedelta(seconds=5))
    report.counts = {("dataset", v.value, "x"): 1 for v in Verdict}
    report.entities = {"dataset": 1}
    report.partitions = [
        PartitionPosition("MetadataChangeLog_Versioned_v1", i, 5, 9, 0, now, h, None, 1)
        for i, h in enumerate(PartitionHealth)
    ]
    report.findings = [
        Classified(
            Finding("c", Kind.STALE_FIELDS, "urn:li:tag:a", "tag"), Verdict.DIVERGED, "x", Evidence("r")
        )
    ]
    from auditor.heal.guards import NAMES
    from auditor.heal.loop import HealOutcome
    from auditor.heal.report import metrics

    text = render(report) + metrics(HealOutcome("heal-1", now, "p", False, True), 0)
    names = {
        line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")
    }
    values: dict[str, set[str]] = {
        "verdict": {v.value for v in Verdict},
        "status": {h.value for h in PartitionHealth},
        "guard": set(NAMES),
    }
    return names, values


def check_expr(expr: str, names: set[str], values: dict[str, set[str]]) -> None:
    used = set(METRIC.findall(expr))
    assert used, f"no auditor metric in {expr!r}"
    assert used <= names, f"{expr!r} uses metrics the tool does not emit: {used - names}"
    assert expr.count("(") == expr.count(")") and expr.count("{") == expr.count("}"), expr
    for label, op, value in MATCHER.findall(expr):
        if label in values:
            wanted = value.split("|") if op in ("=~", "!~") else [value]
            assert set(wanted) <= values[label], (
                f"{expr!r}: {label} has no value {set(wanted) - values[label]}"
            )


def test_the_alert_rules_parse_and_use_emitted_metrics() -> None:
    names, values = emitted()
    rules = yaml.safe_load((ROOT / "deploy" / "prometheus" / "auditor-alerts.yml").read_text())
    seen = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert {"alert", "expr", "for", "labels", "annotations"} <= set(rule), rule
            assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["for"]
            assert rule["labels"]["severity"] in {"info", "warning", "critical"}
            check_expr(rule["expr"], names, values)
            seen.append(rule["alert"])
    assert len(seen) == len(set(seen)) >= 5


def test_the_dashboard_uses_emitted_metrics() -> None:
    names, values = emitted()
    dashboard = json.loads((ROOT / "deploy" / "grafana" / "auditor-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert len(exprs) >= 8
    for expr in exprs:
        check_expr(expr, names, values)
    documented = set(METRIC.findall((ROOT / "docs" / "metrics.md").read_text()))
    assert documented >= names, f"metrics not in docs/metrics.md: {names - documented}"
