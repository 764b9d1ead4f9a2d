"""The HTML report's charts as inline SVG drawn here (no chart library, nothing fetched, no script
needed to see them): verdicts per entity type, lag per partition over the sampling window, and
the trend of findings across past scans."""

from __future__ import annotations

from auditor.core.model import PartitionPosition, Report, RunSummary
from auditor.reports.escape import html_text as text
from auditor.reports.summary import VERDICT_ORDER, eta_text

COLORS = {
    "invalid": "#8e44ad",
    "diverged": "#c0392b",
    "stalled": "#d35400",
    "outdated": "#7f8c8d",
    "store_behind": "#16a085",
    "in_flight": "#2980b9",
}
WIDTH = 760
ROW = 22
LABEL = 190  # room for the label column on the left


def _svg(chart_id: str, height: int, label: str, body: list[str]) -> str:
    return (
        f'<svg class="chart" id="{chart_id}" role="img" aria-label="{text(label)}" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
        ">" + "".join(body) + "</svg>"
    )


def _legend(y: int, names: list[str]) -> list[str]:
    out, x = [], LABEL
    for name in names:
        out.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{COLORS.get(name, "#7f8c8d")}"/>')
        out.append(f'<text x="{x + 14}" y="{y + 9}" class="legend">{text(name)}</text>')
        x += 14 + 8 * len(name) + 18
    return out


def verdicts_chart(report: Report) -> str:
    """One stacked bar per entity type: its findings by verdict (entities scanned at the end)."""
    per_type: dict[str, dict[str, int]] = {}
    for (etype, verdict, _), n in report.counts.items():
        per_type.setdefault(etype, {})[verdict] = per_type.setdefault(etype, {}).get(verdict, 0) + n
    types = sorted(set(per_type) | set(report.entities))
    if not types:
        return '<p class="empty">No entities in scope.</p>'
    widest = max((sum(per_type.get(t, {}).values()) for t in types), default=0) or 1
    span = WIDTH - LABEL - 230
    body = _legend(4, list(VERDICT_ORDER))
    for row, etype in enumerate(types):
        y = 24 + row * ROW
        body.append(f'<text x="{LABEL - 8}" y="{y + 14}" text-anchor="end">{text(etype)}</text>')
        x = float(LABEL)
        found = per_type.get(etype, {})
        for verdict in VERDICT_ORDER:
            n = found.get(verdict, 0)
            if not n:
                continue
            w = max(2.0, span * n / widest)
            body.append(
                f'<rect class="bar" data-type="{text(etype)}" data-verdict="{verdict}" data-count="{n}" '
                f'x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{ROW - 6}" fill="{COLORS[verdict]}">'
                f"<title>{text(etype)}: {n} {verdict}</title></rect>"
            )
            x += w
        total = sum(found.values())
        entities = report.entities.get(etype, 0)
        note = (
            f"{total} finding(s) in {entities:,} entities" if total else f"{entities:,} entities, consistent"
        )
        body.append(f'<text x="{x + 6:.1f}" y="{y + 14}" class="note">{text(note)}</text>')
    height = 24 + len(types) * ROW + 6
    return _svg("chart-verdicts", height, "findings per entity type by verdict", body)


def _partition_label(p: PartitionPosition) -> str:
    # MetadataChangeLog_Versioned_v1 -> Versioned (the full name is in the tooltip)
    return f"{p.topic.removeprefix('MetadataChangeLog_').removesuffix('_v1')}[{p.partition}]"


def lag_chart(partitions: list[PartitionPosition]) -> str:
    """Per partition: the lag when the sampling window opened and when it closed, the rate."""
    if not partitions:
        return '<p class="empty">Kafka was not sampled: no consumer positions.</p>'
    widest = max(max(p.lag, p.first_lag or 0) for p in partitions) or 1
    span = WIDTH - LABEL - 230
    body = [
        f'<rect x="{LABEL}" y="4" width="10" height="10" fill="#95a5a6"/>',
        f'<text x="{LABEL + 14}" y="13" class="legend">lag at window start</text>',
        f'<rect x="{LABEL + 150}" y="4" width="10" height="10" fill="#2c3e50"/>',
        f'<text x="{LABEL + 164}" y="13" class="legend">lag at window end</text>',
    ]
    for row, p in enumerate(partitions):
        y = 24 + row * ROW
        label = text(_partition_label(p))
        title = f"<title>{text(p.topic)}</title>"
        body.append(f'<text x="{LABEL - 8}" y="{y + 14}" text-anchor="end">{label}{title}</text>')
        before = p.first_lag
        if before is not None:
            w = max(1.0, span * before / widest) if before else 0.0
            body.append(
                f'<rect class="lag-start" data-partition="{p.partition}" data-lag="{before}" x="{LABEL}" '
                f'y="{y + 2}" width="{w:.1f}" height="8" fill="#95a5a6"><title>{label}: lag {before} '
                "at window start</title></rect>"
            )
        w = max(1.0, span * p.lag / widest) if p.lag else 0.0
        body.append(
            f'<rect class="lag-end" data-partition="{p.partition}" data-lag="{p.lag}" x="{LABEL}" '
            f'y="{y + 11}" width="{w:.1f}" height="8" fill="#2c3e50"><title>{label}: lag {p.lag} '
            "at window end</title></rect>"
        )
        rate = f"{p.rate:.1f}/s" if p.rate else "0/s"
        note = f"{p.health.value}, lag {p.lag:,}, {rate}, ETA {eta_text(p.eta_seconds)}"
        body.append(f'<text x="{LABEL + span + 8}" y="{y + 14}" class="note">{text(note)}</text>')
    height = 24 + len(partitions) * ROW + 6
    return _svg("chart-lag", height, "consumer lag per partition over the sampling window", body)


def trend_chart(trend: list[RunSummary]) -> str:
    """Findings per verdict across the scope's past scans (from the state file), oldest left."""
    if len(trend) < 2:
        return '<p class="empty">The trend appears after two scans with a state file.</p>'
    height, top, bottom = 220, 24, 190
    left, right = 60, WIDTH - 20
    series = [v for v in VERDICT_ORDER if any(r.verdicts.get(v) for r in trend)] or ["diverged"]
    peak = max((r.verdicts.get(v, 0) for r in trend for v in series), default=0) or 1
    step = (right - left) / (len(trend) - 1)

    def y_of(n: int) -> float:
        return bottom - (bottom - top) * n / peak

    body = _legend(4, series)
    body.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" class="axis"/>')
    body.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" class="axis"/>')
    body.append(f'<text x="{left - 6}" y="{top + 4}" text-anchor="end" class="note">{peak}</text>')
    body.append(f'<text x="{left - 6}" y="{bottom}" text-anchor="end" class="note">0</text>')
    for verdict in series:
        points = [(left + i * step, y_of(r.verdicts.get(verdict, 0))) for i, r in enumerate(trend)]
        line = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        color = COLORS.get(verdict, "#7f8c8d")
        body.append(
            f'<polyline class="series" data-verdict="{verdict}" points="{line}" fill="none" '
            f'stroke="{color}" stroke-width="2"/>'
        )
        for (x, y), run in zip(points, trend, strict=True):
            n = run.verdicts.get(verdict, 0)
            when = run.started_at.isoformat(timespec="minutes")
            body.append(
                f'<circle class="point" data-verdict="{verdict}" data-count="{n}" cx="{x:.1f}" cy="{y:.1f}" '
                f'r="3" fill="{color}"><title>{text(when)}: {n} {verdict} (exit {run.exit_code})</title>'
                "</circle>"
            )
    first = trend[0].started_at.isoformat(timespec="seconds")
    last = trend[-1].started_at.isoformat(timespec="seconds")
    body.append(f'<text x="{left}" y="{bottom + 18}" class="note">{text(first)}</text>')
    body.append(f'<text x="{right}" y="{bottom + 18}" text-anchor="end" class="note">{text(last)}</text>')
    return _svg("chart-trend", height, f"findings per verdict over the last {len(trend)} scans", body)
