"""The journal's pages: the repairs' runs (what each wrote, verified or not, undone or not) and
one run's documents a page at a time, with the `rebuild undo` command to copy (a dry run first,
then `--apply`). The console never runs it: an undo writes, and writes stay with the CLI.

Every value from the journal (run ids, index names, document ids, urns, reasons) goes through
`reports.escape.html_text`, or `urllib.parse.quote` first in a URL.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from auditor.rebuild.journal_survey import Change, Survey
from auditor.reports.escape import html_text as text
from auditor.reports.escape import shell_line
from auditor.serve.journal_dir import PAGE

KINDS = ("created", "rewritten", "deleted", "not written", "unconfirmed")


def _href(run: str, page: int = 0, size: int = PAGE) -> str:
    asked = {k: v for k, v in (("page", page), ("size", size)) if v and (k, v) != ("size", PAGE)}
    return "/journal/" + quote(run, safe="") + ("?" + urlencode(asked) if asked else "")


def what(s: Survey) -> str:
    h = s.header
    if h.get("undoes"):
        return f"undo of {h['undoes']}"
    return f"{h.get('mode') or '?'}{' --full' if h.get('full') else ''}"


def verified(s: Survey) -> str:
    if s.header.get("undoes"):
        return "n/a (an undo)"
    if s.verified is None:
        return "not recorded" if s.ended else "no (did not finish)"
    return (
        "yes"
        if s.verified.get("ok")
        else f"no: {s.verified.get('why') or 'exit ' + str(s.verified.get('exit_code'))}"
    )


def state(s: Survey) -> str:
    if s.torn:
        return f"torn: {s.torn}"
    return "ended" if s.ended else "not closed (killed, or still running)"


def counts(s: Survey) -> str:
    shown = [f"{s.kinds[k]} {k}" for k in KINDS if s.kinds.get(k)]
    if s.swaps:
        shown.append(f"{len(s.swaps)} alias swap(s)")
    return ", ".join(shown) or "nothing"


def listing(runs: list[Survey], folder: Path) -> list[str]:
    body = ["<h1>Repair journal</h1>", f'<p class="dim">{text(str(folder))}, newest first</p>']
    if not runs:
        return [*body, '<p id="no-runs">No journaled runs: an applied repair journals its writes here.</p>']
    body.append('<table id="runs"><thead><tr><th>run</th><th>when</th><th>what</th><th>platform</th>')
    body.append("<th>documents</th><th>verified</th><th>undone</th><th>journal</th></tr></thead><tbody>")
    for s in runs:
        undone = ", ".join(s.undone_by) or "no"
        body.append(
            f'<tr data-run="{text(s.run)}"><td><a href="{text(_href(s.run))}">{text(s.run)}</a></td>'
            f"<td>{text(str(s.header.get('at') or ''))}</td><td>{text(what(s))}</td>"
            f"<td>{text(str(s.header.get('platform') or ''))}</td>"
            f'<td class="counts">{text(counts(s))}</td><td class="verified">{text(verified(s))}</td>'
            f'<td class="undone">{text(undone)}</td><td>{text(state(s))}</td></tr>'
        )
    body.append("</tbody></table>")
    return body


def undo_commands(run: str, journal_dir: Path | None) -> list[str]:
    """The exact commands: the dry run, then the one that writes."""
    base = ["auditor", "rebuild", "undo", run]
    if journal_dir is not None:
        base += ["--journal-dir", str(journal_dir)]
    return [shlex.join(base), shlex.join([*base, "--apply"])]


def _before(c: Change) -> str:
    if not c.found:
        return "absent"
    size = f"{c.before_bytes} bytes" if c.before_bytes is not None else "parsed source"
    return size + (f", seq_no {c.before_version[0]} term {c.before_version[1]}" if c.before_version else "")


def _after(c: Change) -> str:
    said = c.kind
    if c.status is not None:
        said += f" ({c.status}"
        said += f", seq_no {c.version[0]} term {c.version[1]})" if c.version else ")"
    return said


def run_page(s: Survey, page: int, size: int, journal_dir: Path | None) -> list[str]:
    body = [f'<h1>Run <code id="run">{text(s.run)}</code></h1>', '<table id="facts"><tbody>']
    target = ", ".join(f"{k} {v}" for k, v in sorted((s.header.get("target") or {}).items()))
    facts: list[tuple[str, Any]] = [
        ("when", s.header.get("at") or ""),
        ("what", what(s)),
        ("platform", s.header.get("platform") or ""),
        ("target", target),
        ("documents", f"{s.documents}: {counts(s)}"),
        ("verified", verified(s)),
        ("undone by", ", ".join(s.undone_by) or "not undone"),
        ("journal", state(s)),
    ]
    for name, value in facts:
        body.append(f'<tr data-fact="{text(name)}"><th>{text(name)}</th><td>{text(str(value))}</td></tr>')
    body.append("</tbody></table>")
    for entry in s.swaps:
        for alias, before in sorted(entry.get("before", {}).items()):
            after = sorted(a["add"]["index"] for a in entry.get("actions", []) if "add" in a
                           and a["add"].get("alias") == alias)  # fmt: skip
            moved = f"alias {alias}: {', '.join(before) or 'a concrete index'} -> {', '.join(after)}"
            body.append(f'<p class="swap">{text(moved)}</p>')
    if s.created:
        body.append(f'<p class="dim">indices it created: {text(", ".join(s.created))}</p>')
    body.append('<h2>To undo</h2><div id="undo">')
    for i, command in enumerate(undo_commands(s.run, journal_dir)):
        label = (
            "first, a dry run (writes nothing; says what it would put back and refuse)"
            if i == 0
            else ("then, to write")
        )
        body.append(
            f'<p class="dim">{label}</p><pre id="undo-{i}" class="command">{text(shell_line(command))}</pre>'
            f'<button class="copy" data-for="undo-{i}" type="button">copy</button>'
        )
    body.append(
        '</div><p class="dim">Run it where the credentials are: this console never writes. A document '
        "written again since the run is refused by name and left as it is.</p>"
    )
    first, last = page * size, min((page + 1) * size, s.documents)
    body.append(f'<h2>Documents</h2><p id="shown">{first + 1 if s.changes else 0}-{last if s.changes else 0} '
                f"of {s.documents}, in the order the run first wrote them</p>")  # fmt: skip
    body.append('<table id="changes"><thead><tr><th>#</th><th>index</th><th>id</th><th>before</th>')
    body.append("<th>after</th></tr></thead><tbody>")
    for c in s.changes:
        urn = f'<div class="dim">{text(c.urn)}</div>' if c.urn and c.urn != c.doc_id else ""
        body.append(
            f'<tr data-kind="{text(c.kind)}" data-index="{text(c.index)}" data-id="{text(c.doc_id)}">'
            f"<td>{c.number + 1}</td><td>{text(c.index)}</td><td><code>{text(c.doc_id)}</code>{urn}</td>"
            f"<td>{text(_before(c))}</td><td>{text(_after(c))}</td></tr>"
        )
    body.append("</tbody></table><p id='pager'>")
    if page > 0:
        body.append(f'<a id="previous" href="{text(_href(s.run, page - 1, size))}">previous</a> ')
    if last < s.documents:
        body.append(f'<a id="next" href="{text(_href(s.run, page + 1, size))}">next</a>')
    body.append("</p>")
    return body
