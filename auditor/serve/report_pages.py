"""The list of scan reports: newest first, their verdict counts, the change since the run before,
and the trend chart the HTML report draws (reports/html_charts.py), over the listed runs."""

from __future__ import annotations

from urllib.parse import quote

from auditor.reports.escape import html_text as text
from auditor.serve.reports_dir import Entry, trend

RESULT = {
    0: "clean",
    1: "diverged",
    2: "usage error",
    3: "incomplete",
    4: "consumer stalled",
    5: "outdated documents",
    8: "store far smaller than the index",
}
CHART_STYLE = (
    "<style>svg .axis{stroke:#999}svg .note{font:11px sans-serif;fill:#555}"
    "svg .legend{font:11px sans-serif}</style>"
)


def _persistent(e: Entry) -> int:
    return sum(n for k, n in e.counts.items() if not k.startswith("in_flight"))


def listing(entries: list[Entry]) -> list[str]:
    from auditor.reports.html_charts import trend_chart

    body = ["<h1>Scan reports</h1>"]
    if not entries:
        return [*body, '<p id="no-reports">No JSON reports in the folder yet.</p>']
    body += [CHART_STYLE, '<div id="trend">', trend_chart(trend(entries)), "</div>"]
    body.append('<table id="reports"><thead><tr><th>scan</th><th>result</th><th>findings</th>')
    body.append("<th>persistent</th><th>since the run before</th></tr></thead><tbody>")
    readable = [e for e in entries if e.report is not None]
    for e in entries:
        href = "/reports/" + quote(e.name, safe="")
        if e.report is None:
            why = text(e.error or "")
            body.append(f'<tr class="unreadable"><td>{text(e.name)}</td><td colspan="4">{why}</td></tr>')
            continue
        at = readable.index(e)
        before = readable[at + 1] if at + 1 < len(readable) else None
        delta = "" if before is None else f"{_persistent(e) - _persistent(before):+d}"
        counts = ", ".join(f"{text(k)} {n}" for k, n in sorted(e.counts.items())) or "none"
        code = e.report.exit_code
        when = text(e.started_at.isoformat(timespec="seconds"))
        body.append(
            f'<tr data-name="{text(e.name)}" data-exit="{code}"><td><a href="{text(href)}">'
            f'{when}</a> <span class="dim">{text(e.name)}</span></td>'
            f"<td>{text(RESULT.get(code, str(code)))}</td><td>{counts}</td>"
            f"<td>{_persistent(e)}</td><td>{text(delta)}</td></tr>"
        )
    body.append("</tbody></table>")
    return body
