"""Prometheus textfile: findings per verdict, consumer lag per partition, scan duration."""

from __future__ import annotations

from auditor.core.model import Report
from auditor.reports.escape import prom_label as _label


def render(report: Report) -> str:
    out = [
        "# HELP auditor_findings Findings of the last drift scan by entity type, verdict and subkind.",
        "# TYPE auditor_findings gauge",
    ]
    for (etype, verdict, subkind), n in sorted(report.counts.items()):
        out.append(
            f'auditor_findings{{entity_type="{_label(etype)}",verdict="{_label(verdict)}",'
            f'subkind="{_label(subkind)}"}} {n}'
        )
    out += ["# HELP auditor_entities Entities read from the metadata store.", "# TYPE auditor_entities gauge"]
    for etype, n in sorted(report.entities.items()):
        out.append(f'auditor_entities{{entity_type="{_label(etype)}"}} {n}')
    if report.stores:  # a federation: a handful of stores, a series each
        for column in ("entities", "conflicts", "findings", "diverged"):
            out += [
                f"# HELP auditor_store_{column} A federation's {column} per metadata store.",
                f"# TYPE auditor_store_{column} gauge",
            ]
            out += [
                f'auditor_store_{column}{{store="{_label(name)}"}} {int(counts.get(column, 0))}'
                for name, counts in report.stores.items()
            ]
    out += [
        "# HELP auditor_consumer_lag_messages MAE consumer lag per change-log partition.",
        "# TYPE auditor_consumer_lag_messages gauge",
    ]
    lag_seconds = []
    for p in report.partitions:
        labels = f'topic="{_label(p.topic)}",partition="{p.partition}",status="{_label(p.health.value)}"'
        out.append(f"auditor_consumer_lag_messages{{{labels}}} {p.lag}")
        if p.position_time is not None and report.finished_at is not None and p.lag:
            seconds = max(0.0, (report.finished_at - p.position_time).total_seconds())
        else:
            seconds = 0.0
        lag_seconds.append(f"auditor_consumer_lag_seconds{{{labels}}} {seconds:.3f}")
    out += [
        "# HELP auditor_consumer_lag_seconds Age of the message at the committed offset.",
        "# TYPE auditor_consumer_lag_seconds gauge",
        *lag_seconds,
    ]
    duration = (report.finished_at - report.started_at).total_seconds() if report.finished_at else 0.0
    out += [
        "# HELP auditor_scan_duration_seconds Wall time of the last scan.",
        "# TYPE auditor_scan_duration_seconds gauge",
        f"auditor_scan_duration_seconds {duration:.3f}",
        "# HELP auditor_scan_complete 1 if the last scan completed.",
        "# TYPE auditor_scan_complete gauge",
        f"auditor_scan_complete {int(report.complete)}",
        "# HELP auditor_store_smaller 1 if the last scan found the store far smaller than the index.",
        "# TYPE auditor_store_smaller gauge",
        f"auditor_store_smaller {int(report.store_smaller is not None)}",
        "# HELP auditor_scan_timestamp_seconds When the last scan finished.",
        "# TYPE auditor_scan_timestamp_seconds gauge",
        f"auditor_scan_timestamp_seconds {report.finished_at.timestamp() if report.finished_at else 0:.0f}",
        "# HELP auditor_kafka_available 1 if consumer offsets were read.",
        "# TYPE auditor_kafka_available gauge",
        f"auditor_kafka_available {int(report.kafka_available)}",
    ]
    return "\n".join(out) + "\n"
