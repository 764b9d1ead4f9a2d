"""Renderers: JSON round-trips (and merges), Markdown and Prometheus say what the report holds."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

from rich.console import Console

from auditor.core.model import (
    Classified,
    Evidence,
    Finding,
    Kind,
    Observation,
    PartitionHealth,
    PartitionPosition,
    RepairKind,
    Report,
    Selection,
    Verdict,
)
from auditor.reports import RENDERERS
from auditor.reports import console as console_report
from auditor.reports.merge import from_dict, merge

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def report(
    shard: tuple[int, int] | None = None, urn: str = "urn:li:dataset:(urn:li:dataPlatform:hive,a b,PROD)"
) -> Report:
    r = Report(started_at=T0, finished_at=T0 + timedelta(seconds=3), scope=Selection(shard=shard))
    r.sources = {"store": "mysql+pymysql://datahub:***@h/db"}
    r.entities = {"dataset": 10}
    diverged = Classified(
        Finding(
            "index.missing-document",
            Kind.MISSING_DOCUMENT,
            urn,
            "dataset",
            "datasetindex_v2",
            None,
            T0,
            {"platform": "datahub"},
            repairs=(RepairKind.REPLAY_ASPECT,),
        ),
        Verdict.DIVERGED,
        "event_never_published",
        Evidence(
            "no MCL for this change exists on the topic",
            partition=2,
            mcl_found=False,
            observed=Observation(
                T0 + timedelta(seconds=1),
                T0 + timedelta(seconds=1.5),
                T0 + timedelta(seconds=4.5),
                T0 + timedelta(seconds=4.75),
            ),
        ),
    )
    flight = Classified(
        Finding(
            "index.stale-fields",
            Kind.STALE_FIELDS,
            "urn:li:tag:x",
            "tag",
            "tagindex_v2",
            "tagProperties",
            T0,
            {"platform": "datahub", "fields": [{"field": "name", "expected": "x", "actual": "y"}]},
        ),
        Verdict.IN_FLIGHT,
        "in_flight",
        Evidence("its MCL waits", partition=1, eta_seconds=42.0),
    )
    r.findings = [diverged, flight]
    r.counts = {("dataset", "diverged", "event_never_published"): 1, ("tag", "in_flight", "in_flight"): 1}
    r.partitions = [
        PartitionPosition("MetadataChangeLog_Versioned_v1", 1, 5, 9, 0, T0, PartitionHealth.LAGGING, 2.0, 1)
    ]
    r.kafka_available = True
    return r


def test_json_round_trip_and_exit_code() -> None:
    text = RENDERERS["json"](report())
    data = json.loads(text)
    assert data["exit_code"] == 1
    assert data["findings"][0]["subkind"] == "event_never_published"
    back = from_dict(data)
    assert back.counts == report().counts
    assert back.findings[1].evidence.eta_seconds == 42.0
    assert RENDERERS["json"](back) == text


def test_observation_times_are_reported_in_order() -> None:
    r = report()
    r.reobserved = {
        "candidates": 2,
        "entities": 2,
        "converged": 1,
        "unsettled": 0,
        "rounds": 1,
        "seconds": 3.8,
    }
    back = from_dict(json.loads(RENDERERS["json"](r)))
    assert back.findings[0].evidence.observed == r.findings[0].evidence.observed
    assert back.reobserved == r.reobserved
    order = "read rows 00:00:01.000 → offsets 00:00:01.500 → docs 00:00:04.500 → rows again 00:00:04.750"
    assert order in RENDERERS["markdown"](r)
    out = io.StringIO()
    console_report.render(r, Console(file=out, width=200))
    assert order in out.getvalue()
    assert "re-read 2 entities in causal order" in out.getvalue()


def test_merge_adds_shards_and_flags_missing_ones() -> None:
    a, b = report((0, 2)), report((1, 2), urn="urn:li:dataset:(urn:li:dataPlatform:hive,z,PROD)")
    merged = merge([a, b])
    assert merged.entities == {"dataset": 20}
    assert merged.counts[("dataset", "diverged", "event_never_published")] == 2
    assert merged.complete and merged.exit_code == 1
    partial = merge([a])
    assert not partial.complete and partial.exit_code == 3


def test_markdown_and_console_name_the_findings_and_the_fix() -> None:
    md = RENDERERS["markdown"](report())
    assert "event_never_published" in md and "RestoreIndices" in md and "ETA 42s" in md
    buffer = io.StringIO()
    console_report.render(report(), Console(file=buffer, width=200))
    out = buffer.getvalue()
    assert "persistent divergence found" in out and "lagging" in out and "***" in out


def test_prometheus_textfile() -> None:
    text = RENDERERS["prometheus"](report())
    assert (
        'auditor_findings{entity_type="dataset",verdict="diverged",subkind="event_never_published"} 1' in text
    )
    assert (
        'auditor_consumer_lag_messages{topic="MetadataChangeLog_Versioned_v1",'
        'partition="1",status="lagging"} 4' in text
    )
    assert "auditor_scan_duration_seconds 3.000" in text


def test_the_configured_consumer_group_is_named_not_datahubs_default() -> None:
    r = report()
    r.consumer_group = "my-mae-group"
    stalled = r.findings[1]
    r.findings.append(Classified(stalled.finding, Verdict.STALLED, "stalled", Evidence("waits")))
    out = io.StringIO()
    console_report.render(r, Console(file=out, width=200))
    for text in (out.getvalue(), RENDERERS["markdown"](r)):
        assert "my-mae-group" in text and "generic-mae-consumer-job-client" not in text
    assert "restart the MAE consumer (group my-mae-group)" in out.getvalue()
