"""Escaping of data-derived text (urns, values, error texts) for each output format."""

from __future__ import annotations

import re
from html import escape as _html_escape

# C0/C1 controls (newline, ESC, CSI ...), line/paragraph separators, bidi overrides, lone surrogates
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _spelled(ch: str) -> str:
    n = ord(ch)
    return _NAMED.get(ch) or (f"\\x{n:02x}" if n < 0x80 else f"\\u{n:04x}")


def visible(text: str) -> str:
    """The text on one line: control characters spelled as escapes (a newline as \\n, ESC as \\x1b)."""
    return _UNSAFE.sub(lambda m: _spelled(m.group()), text)


# Markdown: backslash-escape what is active inline; `_` only where it could open or close emphasis
_MD_ACTIVE = re.compile(r"[\\`*\[\]~|$]|(?<![^\W_])_|_(?![^\W_])")
_MD_BLOCK = re.compile(r"^(\s*\d*)([#+\-=.)])")  # what would start a heading, list or rule


def md_text(text: str) -> str:
    """Plain Markdown text on one line: no emphasis, links, raw HTML, table cells or block starts."""
    s = visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_ACTIVE.sub(lambda m: "\\" + m.group(), s)
    return _MD_BLOCK.sub(r"\1\\\2", s, count=1)


def _longest_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def md_code(text: str, table: bool = False) -> str:
    """A Markdown code span the text cannot close (in a table cell, `table=True` escapes `|`)."""
    s = visible(text)
    if table:
        s = s.replace("|", "\\|")
    fence = "`" * (_longest_run(s) + 1)
    if not s.strip(" "):
        return f"{fence}{s or ' '}{fence}"
    if s[0] in "` " or s[-1] in "` ":  # CommonMark strips one space each side: keep the text as it is
        s = f" {s} "
    return f"{fence}{s}{fence}"


def md_code_block(lines: list[str]) -> list[str]:
    """A fenced Markdown code block no line of which can close the fence."""
    body = [visible(line) for line in lines]
    fence = "`" * max(3, max((_longest_run(line) for line in body), default=0) + 1)
    return [fence, *body, fence]


def console_text(text: str) -> str:
    """For rich output printed with markup=False: one line, no control sequences from the data."""
    return visible(text)


def console_markup(text: str) -> str:
    """For data interpolated into rich markup: as console_text, with markup tags escaped."""
    from rich.markup import escape  # here: the JSON and HTML outputs do not load rich

    return escape(visible(text))


def html_text(value: object) -> str:
    """For an HTML text node or a quoted attribute: one line, `& < > " '` as entities."""
    return _html_escape(visible(str(value)), quote=True)


def prom_label(value: str) -> str:
    """A Prometheus text-format label value (between its double quotes)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def shell_quote(value: str) -> str:
    """One shell word in single quotes (a quote inside as '\\'')."""
    return "'" + value.replace("'", "'\\''") + "'"


def shell_line(command: str) -> str:
    """The command on one line: each control character becomes $'\\n' (bash, zsh), quoting kept."""
    if not _UNSAFE.search(command):
        return command
    out: list[str] = []
    quote = ""  # the open quote: "", "'" or '"'
    i = 0
    while i < len(command):
        ch = command[i]
        i += 1
        if ch == "\\" and quote != "'" and i < len(command):
            nxt = command[i]
            i += 1
            if nxt == "\n":  # a line continuation: nothing
                continue
            if not _UNSAFE.match(nxt):
                out.append(ch + nxt)
                continue
            if quote:  # in double quotes this backslash is literal
                out.append("\\\\")
            ch = nxt
        if _UNSAFE.match(ch):
            out.append(f"{quote}$'{_spelled(ch)}'{quote}")
            continue
        if ch == quote:
            quote = ""
        elif not quote and ch in "'\"":
            quote = ch
        out.append(ch)
    return "".join(out)
