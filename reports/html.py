"""The HTML report: one self-contained file to share in an incident channel.

Nothing is fetched (no fonts, scripts or images from anywhere); the charts are inline SVG
(html_charts.py) and readable without script; a small inline script filters and sorts the
findings table. Every text from the data is escaped, and the page's Content-Security-Policy
allows only that one script (by its hash) and no other source: markup that slipped through
would still not run.
"""

from __future__ import annotations

import base64
import hashlib
import json

from auditor.core.model import Classified, Report, Verdict
from auditor.reports.commands import finding_rebuild
from auditor.reports.escape import html_text as text
from auditor.reports.html_charts import lag_chart, trend_chart, verdicts_chart
from auditor.reports.json_report import plain
from auditor.reports.summary import (
    STORE_COLUMNS,
    VERDICT_ORDER,
    by_store,
    describe,
    eta_text,
    observed_text,
    reobservation_text,
    repair_commands,
    sorted_findings,
    totals,
    weak_evidence_text,
)

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1180px;
color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.result{font-size:16px;font-weight:600}.exit-0{color:#1e8449}.exit-1,.exit-3,.exit-8{color:#c0392b}
.exit-4{color:#d35400}
code,pre{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}pre{white-space:pre-wrap;
word-break:break-all;background:#f6f8fa;padding:6px;margin:4px 0}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #eee;padding:4px 6px;
text-align:left;vertical-align:top}th{background:#fafafa;cursor:pointer;user-select:none;
white-space:nowrap}th[aria-sort=ascending]::after{content:" \\25B2"}
th[aria-sort=descending]::after{content:" \\25BC"}td.urn{word-break:break-all;min-width:260px;max-width:420px}
td.repair{max-width:300px;word-break:break-all}
.verdict-diverged,.verdict-invalid{color:#c0392b;font-weight:600}.verdict-stalled{color:#d35400}
.verdict-in_flight{color:#2980b9}.verdict-outdated{color:#7f8c8d}.verdict-store_behind{color:#16a085}
.chart text{font-size:12px;fill:#333}.chart .note{fill:#666}
.chart .axis{stroke:#999}.legend{font-size:11px}.empty{color:#777}
.filters{display:flex;gap:12px;align-items:center;margin:8px 0;flex-wrap:wrap}
.filters input{width:320px;padding:4px}table.counts{width:auto;min-width:320px}
ul.warnings li{color:#9a5b00}
"""

SCRIPT = """
(function () {
  var table = document.getElementById("findings");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var search = document.getElementById("filter-text");
  var verdict = document.getElementById("filter-verdict");
  var etype = document.getElementById("filter-type");
  var shown = document.getElementById("shown");
  function apply() {
    var needle = search.value.toLowerCase();
    var count = 0;
    rows.forEach(function (row) {
      var ok = (!needle || row.textContent.toLowerCase().indexOf(needle) >= 0) &&
        (!verdict.value || row.dataset.verdict === verdict.value) &&
        (!etype.value || row.dataset.type === etype.value);
      row.hidden = !ok;
      if (ok) { count += 1; }
    });
    shown.textContent = String(count);
  }
  [search, verdict, etype].forEach(function (el) {
    el.addEventListener("input", apply);
    el.addEventListener("change", apply);
  });
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
    th.addEventListener("click", function () {
      var down = th.getAttribute("aria-sort") === "ascending";
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) {
        other.removeAttribute("aria-sort");
      });
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
      var numeric = th.dataset.kind === "number";
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.sort || a.cells[col].textContent;
        var y = b.cells[col].dataset.sort || b.cells[col].textContent;
        var order = numeric ? Number(x) - Number(y) : (x < y ? -1 : x > y ? 1 : 0);
        return down ? -order : order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
  apply();
})();
"""


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


HEADLINE = {
    0: "No persistent divergence",
    1: "Persistent divergence found",
    3: "Incomplete: the scan could not finish",
    4: "The MAE consumer is stalled",
    8: "The store is far smaller than the index",
}


def _header(report: Report) -> list[str]:
    code = report.exit_code
    when = report.started_at.isoformat(timespec="seconds")
    out = [
        f"<h1>Drift scan {text(when)}</h1>",
        f'<p class="result exit-{code}" id="result">{text(HEADLINE.get(code, "exit " + str(code)))} '
        f"(exit code {code})</p>",
        "<ul>",
    ]
    if report.store_smaller is not None:  # the systemic cause first: its orphans follow from it
        out.insert(-1, f'<p class="result exit-8" id="store-smaller">{text(report.store_smaller.text)}.</p>')
    out += [f"<li>{text(name)}: <code>{text(value)}</code></li>" for name, value in report.sources.items()]
    if note := weak_evidence_text(report):
        out.append(f"<li>{note}</li>")
    if report.finished_at:
        seconds = (report.finished_at - report.started_at).total_seconds()
        out.append(f"<li>took {seconds:.1f} s</li>")
    if line := reobservation_text(report):
        out.append(f"<li>{text(line)}</li>")
    out.append("</ul>")
    counts = totals(report)
    if counts:
        out.append('<table class="counts" id="totals"><thead><tr><th>verdict</th><th>findings</th></tr>')
        out.append("</thead><tbody>")
        out += [f"<tr><td>{text(k)}</td><td>{n}</td></tr>" for k, n in sorted(counts.items())]
        out.append("</tbody></table>")
    if report.stores:
        out.append('<table class="counts" id="stores"><thead><tr><th>store</th>')
        out += [f"<th>{text(column)}</th>" for column in STORE_COLUMNS]
        out.append("</tr></thead><tbody>")
        for name, values in by_store(report):
            out.append(f"<tr><td>{text(name)}</td>" + "".join(f"<td>{v}</td>" for v in values) + "</tr>")
        out.append("</tbody></table>")
    if report.warnings:
        out.append('<h2>Warnings</h2><ul class="warnings">')
        out += [f"<li>{text(w)}</li>" for w in report.warnings]
        out.append("</ul>")
    return out


def _finding_row(c: Classified) -> str:
    f = c.finding
    evidence = json.dumps(plain(c.evidence), indent=1, ensure_ascii=True, default=str)
    details = json.dumps(plain(dict(f.details)), indent=1, ensure_ascii=True, default=str)
    repair = finding_rebuild(c)
    if repair is None:
        repair_cell = text("restart the MAE consumer" if c.verdict == Verdict.STALLED else "-")
    else:
        repair_cell = f"<code>{text(repair)}</code>"
    eta = c.evidence.eta_seconds
    eta_cell = (
        f'<td data-sort="{-1 if eta is None else eta}">{text("" if eta is None else eta_text(eta))}</td>'
    )
    changed = f.changed_at.isoformat(timespec="seconds") if f.changed_at else ""
    rank = VERDICT_ORDER.index(c.verdict.value) if c.verdict.value in VERDICT_ORDER else 9
    seen = observed_text(c)
    return (
        f'<tr data-verdict="{text(c.verdict.value)}" data-type="{text(f.entity_type)}">'
        f'<td class="verdict-{text(c.verdict.value)}" data-sort="{rank}">{text(c.verdict.value)}</td>'
        f"<td>{text(c.subkind)}</td><td>{text(f.entity_type)}</td>"
        f'<td class="urn">{text(f.urn)}'
        + (f'<br><span class="store">store {text(",".join(f.stores))}</span>' if f.stores else "")
        + f"</td><td>{text(f.aspect or '')}</td>"
        f"<td>{text(changed)}</td>"
        f"{eta_cell}"
        f"<td>{text(c.evidence.reason)}"
        f"<details><summary>evidence</summary><pre>{text(describe(c))}</pre>"
        + (f"<pre>{text(seen)}</pre>" if seen else "")
        + f"<pre>{escape_block(details)}</pre><pre>{escape_block(evidence)}</pre></details></td>"
        f'<td class="repair">{repair_cell}</td></tr>'
    )


def escape_block(value: str) -> str:
    """Multi-line text for a <pre>: each line escaped, the line breaks kept."""
    return "\n".join(text(line) for line in value.splitlines())


def _findings(report: Report) -> list[str]:
    findings = sorted_findings(report.findings)
    if not findings:
        return [
            "<h2>Findings</h2>",
            '<p class="empty" id="no-findings">None: every entity is consistent.</p>',
        ]
    verdicts = sorted({c.verdict.value for c in findings})
    types = sorted({c.finding.entity_type for c in findings})
    out = [
        "<h2>Findings</h2>",
        '<div class="filters"><label>filter <input id="filter-text" type="search" '
        'placeholder="urn, aspect, reason ..."></label>',
        '<label>verdict <select id="filter-verdict"><option value="">all</option>',
    ]
    out += [f'<option value="{text(v)}">{text(v)}</option>' for v in verdicts]
    out.append('</select></label><label>entity type <select id="filter-type"><option value="">all</option>')
    out += [f'<option value="{text(t)}">{text(t)}</option>' for t in types]
    more = f" ({report.findings_dropped} more counted, not kept in detail)" if report.findings_dropped else ""
    out.append(
        f'</select></label><span><span id="shown">{len(findings)}</span> of {len(findings)} shown{more}'
        "</span></div>"
    )
    heads = [
        ("verdict", "number"),
        ("why", "text"),
        ("entity type", "text"),
        ("urn", "text"),
        ("aspect", "text"),
        ("changed", "text"),
        ("ETA", "number"),
        ("evidence", "text"),
        ("repair", "text"),
    ]
    out.append('<table id="findings"><thead><tr>')
    out += [f'<th data-kind="{kind}">{name}</th>' for name, kind in heads]
    out.append("</tr></thead><tbody>")
    out += [_finding_row(c) for c in findings]
    out.append("</tbody></table>")
    return out


def render(report: Report) -> str:
    when = report.started_at.isoformat(timespec="seconds")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_csp()}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>auditor drift scan {text(when)}</title><style>{STYLE}</style></head><body>",
        *_header(report),
        "<h2>Verdicts per entity type</h2>",
        verdicts_chart(report),
        f"<h2>MAE consumer <code>{text(report.consumer_group)}</code>: lag over the sampling window</h2>",
        lag_chart(report.partitions),
        "<h2>Trend across past scans</h2>",
        trend_chart(report.trend),
        *_findings(report),
    ]
    commands = repair_commands(report)
    if commands:
        parts += ["<h2>To repair</h2>", '<pre id="commands">', *[text(c) for c in commands], "</pre>"]
    parts += [f"<script>{SCRIPT}</script>", "</body></html>"]
    return "\n".join(parts) + "\n"
