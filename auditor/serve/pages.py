"""The console's pages: plain HTML, one small script (copy buttons) allowed by its hash.

Every value from the data (the text asked, urns, field values, error texts, report names) goes
through `reports.escape.html_text` (entities for `& < > " '`, control characters spelled out)
or, in a URL, through `urllib.parse.quote` first. The triage page is drawn from the same
dictionary `/api/triage` returns (`reports.triage_report.to_dict`), so the two cannot disagree.
"""

from __future__ import annotations

import base64
import hashlib
import json
from html import escape as _escape
from typing import Any
from urllib.parse import quote, urlencode

from auditor.reports.escape import html_text as text
from auditor.reports.escape import shell_line

SCRIPT = """
document.querySelectorAll('button.copy').forEach(function (b) {
  b.addEventListener('click', function () {
    var t = document.getElementById(b.getAttribute('data-for')).textContent;
    navigator.clipboard.writeText(t).then(function () { b.textContent = 'copied'; });
  });
});
"""

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px;color:#222}
nav{padding:10px 0;border-bottom:1px solid #ddd;margin-bottom:12px}nav a{margin-right:14px}
input[type=text]{width:75%;font:14px monospace;padding:5px}button{padding:5px 10px}
table{border-collapse:collapse;width:100%;margin:8px 0}td,th{border-bottom:1px solid #eee;padding:4px 6px;
text-align:left;vertical-align:top}code,pre{font:12px/1.4 monospace;white-space:pre-wrap;word-break:break-all}
pre{background:#f6f6f6;padding:6px;margin:4px 0}.ok{color:#176f2c}.broken{color:#b00020;font-weight:bold}
.pending{color:#a15c00}.unchecked{color:#777}.info{color:#0b6f8a}.verdict{font-size:18px;font-weight:bold}
.v-consistent{color:#176f2c}.v-in_flight{color:#a15c00}.v-unknown,.v-diverged,.v-stalled,.v-invalid{color:#b00020}
.error{border:1px solid #b00020;padding:8px 12px;background:#fff3f4}.dim{color:#777}
"""


def csp() -> str:
    """The pages' Content-Security-Policy (a header): nothing loads, only this script runs."""
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )


def layout(title: str, body: list[str], *, watch: bool = False) -> str:
    links = [
        '<a href="/">triage</a>',
        '<a href="/reports">scan reports</a>',
        '<a href="/journal">repair journal</a>',
    ]
    if watch:
        links.append('<a href="/watch">freshness watch</a>')
    links.append('<a href="/readyz">readiness</a>')
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{text(title)}</title><style>{STYLE}</style></head><body>",
            f"<nav>{' '.join(links)}</nav>",
            *body,
            f"<script>{SCRIPT}</script>",
            "</body></html>",
        ]
    )


def attribute(value: str) -> str:
    """Exactly the text, in a quoted attribute (`& < > " '` as entities, nothing else changed):
    the form gives back what was pasted, so asking again asks the same."""
    return _escape(value.replace("\x00", ""), quote=True)


def form(asked: str, about: dict[str, str], what: str) -> list[str]:
    """The paste box; `what`: what the platform takes (Platform.paste_hint)."""
    where = ", ".join(f"{k} {v}" for k, v in about.items() if k in ("platform", "store", "search", "stores"))
    return [
        "<h1>I can't find my dataset</h1>",
        '<form method="get" action="/triage" id="ask">',
        f'<input type="text" name="q" id="q" autofocus placeholder="{text(what)}"',
        f' value="{attribute(asked)}">',
        ' <button type="submit">triage</button></form>',
        f'<p class="dim">Paste {text(what)}. Read-only. Auditing: {text(where)}</p>',
    ]


def _headline(out: dict[str, Any]) -> str:
    verdict, first = out["verdict"], out["first_break"]
    if verdict == "consistent":
        said = "every boundary holds: the index agrees with the rows"
    elif verdict == "unknown":
        said = "unknown: neither the table nor the index knows it"
    else:
        where = f" at {first['boundary']}" if first else ""
        label = "in flight" if verdict == "in_flight" else "first break"
        sub = f"/{out['subkind']}" if out.get("subkind") else ""
        said = f"{label}{where}: {verdict}{sub}"
    return (
        f'<p class="verdict v-{text(verdict)}" id="verdict" data-verdict="{text(verdict)}">{text(said)}</p>'
    )


def _facts(facts: dict[str, Any]) -> str:
    if not facts:
        return ""
    body = json.dumps(facts, indent=1, ensure_ascii=False, default=str)
    return f"<details><summary>facts</summary><pre>{_block(body)}</pre></details>"


def _block(value: str) -> str:
    """Multi-line text for a <pre>: each line escaped on its own (newlines kept)."""
    return "\n".join(text(line) for line in value.split("\n"))


def triage(out: dict[str, Any], about: dict[str, str], what: str) -> list[str]:
    """The triage page's body from `to_dict(result)`."""
    body = form(out["asked"], about, what)
    body.append(f'<h2 id="urn"><code>{text(out["urn"])}</code></h2>')
    if out["read_as"]:
        body.append(f'<p class="dim" id="read-as">read as: {text(", ".join(out["read_as"]))}</p>')
    body.append(_headline(out))
    body.append('<table id="boundaries"><thead><tr><th></th><th>boundary</th><th>what was seen</th>')
    body.append("</tr></thead><tbody>")
    first = (out["first_break"] or {}).get("boundary")
    for b in out["boundaries"]:
        status = b["status"]
        mark = {"ok": "ok", "broken": "BROKEN", "pending": "pending", "unchecked": "--", "info": "info"}
        problems = "".join(f"<li>{text(p)}</li>" for p in b["problems"])
        row = "first-break" if b["boundary"] == first else ""
        body.append(
            f'<tr class="{row}" data-boundary="{text(b["boundary"])}" data-status="{text(status)}">'
            f'<td class="{text(status)}">{text(mark.get(status, status))}</td>'
            f"<td>{text(b['boundary'])}</td><td>{text(b['detail'])}"
            + (f"<ul>{problems}</ul>" if problems else "")
            + _facts(b["facts"])
            + "</td></tr>"
        )
    body.append("</tbody></table>")
    if out["repair"]:
        body.append('<h2>To repair</h2><div id="repair">')
        for i, command in enumerate(out["repair"]):
            body.append(
                f'<pre id="cmd-{i}" class="command">{text(shell_line(command))}</pre>'
                f'<button class="copy" data-for="cmd-{i}" type="button">copy</button>'
            )
        body.append('</div><p class="dim">Run it where the credentials are: this console never writes.</p>')
    if out["near_matches"]:
        body.append('<h2>Near matches</h2><ul id="near">')
        for m in out["near_matches"]:
            href = "/triage?" + urlencode({"q": m["urn"]}, quote_via=quote)
            body.append(
                f'<li><a href="{text(href)}">{text(m["urn"])}</a> '
                f'<span class="dim">({text(m["how"])}; in the {text(m["where"])})</span></li>'
            )
        body.append("</ul>")
    if out["findings"]:
        evidence = json.dumps(out["findings"], indent=1, ensure_ascii=False, default=str)
        body.append(
            f'<h2>Evidence</h2><details id="evidence" open><summary>{len(out["findings"])} '
            f"finding(s), as the scan reports them</summary><pre>{_block(evidence)}</pre></details>"
        )
    for line in out["unchecked"]:
        body.append(f'<p class="unchecked">not checked: {text(line)}</p>')
    for line in out["warnings"]:
        body.append(f'<p class="pending">warning: {text(line)}</p>')
    api = "/api/triage?" + urlencode({"q": out["asked"]}, quote_via=quote)
    body.append(
        f'<p class="dim">checked at {text(out["checked_at"])} in {out["seconds"]:.2f} s; '
        f"exit code {int(out['exit_code'])} (as <code>auditor triage</code>); "
        f'<a href="{text(api)}">as JSON</a></p>'
    )
    return body


def error(title: str, message: str, hint: str | None, asked: str | None, about: dict[str, str],
          what: str) -> list[str]:  # fmt: skip
    body = form(asked or "", about, what) if asked is not None else []
    body.append(f'<div class="error" id="error"><h2>{text(title)}</h2><p>{text(message)}</p>')
    if hint:
        body.append(f"<p>hint: {text(hint)}</p>")
    body.append("</div>")
    return body
