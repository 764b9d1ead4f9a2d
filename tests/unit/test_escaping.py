"""Hostile text from the data (urns, values, error texts) cannot break out of any rendered format."""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import re
import shlex
import subprocess
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from rich.console import Console
from typer.testing import CliRunner

from auditor.core.model import (
    Classified,
    Evidence,
    Finding,
    Kind,
    PartitionHealth,
    PartitionPosition,
    RepairKind,
    Report,
    RunSummary,
    Verdict,
)
from auditor.reports import RENDERERS
from auditor.reports import console as console_report
from auditor.reports.escape import md_code, md_code_block, md_text, shell_line, visible
from auditor.reports.merge import from_dict
from auditor.reports.summary import repair_commands

T0 = datetime(2026, 1, 1, tzinfo=UTC)
UNSPELLED = re.compile(r"(?<!\\n)(?<!\\n'')# Heading")  # the newline before it not spelled \n or $'\n'
ISSUE = "urn:li:dataset:(urn:li:dataPlatform:hive,evil|<img src=x onerror=alert(1)>`rm -rf`\n# Heading,PROD)"
EVIL = "evil|<img src=x onerror=alert(1)>`rm -rf`\x1b[31m[bold]it's :smile:\n# Heading"
URN = f"urn:li:dataset:(urn:li:dataPlatform:hive,{EVIL},PROD)"
ETYPE = "data|set<img src=x>\x1b[31m[bold]\n# Heading"
SUBKIND = 'sub"kind\\|[bold]\n# Heading'
TOPIC = "MetadataChangeLog_Versioned_v1|[bold]\x1b[31m\n# Heading"
FORGED = "# Title\n- forged"
ERROR = "search said: <script>alert(1)</script> | `x` \x1b[31m[bold]red[/bold] :smile:\n# Heading"
DATAHUB = {"platform": "datahub"}  # a DataHub finding names its platform, as its scan writes it


def _quoted(text: str) -> str:  # one shell word in single quotes, as the repair lines quote data
    return "'" + text.replace("'", "'\\''") + "'"


def _restore(urn: str) -> str:  # as the repair plan renders a replay
    return f"datahub-upgrade -u RestoreIndices -a urn={_quoted(urn)}"


def hostile() -> Report:
    r = Report(started_at=T0, finished_at=T0 + timedelta(seconds=3), kafka_available=True)
    r.sources = {"store": "mysql+pymysql://datahub:***@h/db", f"search{EVIL}": ERROR}
    r.entities = {"dataset": 10, ETYPE: 1}
    r.counts = {(ETYPE, "diverged", "event_never_published"): 1, ("dataset", "diverged", SUBKIND): 2}
    missing = Finding(
        "index.missing-document", Kind.MISSING_DOCUMENT, URN, "dataset", "datasetindex_v2",
        details=DATAHUB, repairs=(RepairKind.REPLAY_ASPECT,),
    )  # fmt: skip
    stale = Finding(
        "index.stale-fields", Kind.STALE_FIELDS, URN, "dataset", f"idx{EVIL}", f"aspect{EVIL}", T0,
        {**DATAHUB, "fields": [{"field": f"name{EVIL}", "expected": EVIL, "actual": "y"}]},
    )  # fmt: skip
    edge = Finding(
        "graph.missing-edge", Kind.MISSING_EDGE, URN, "dataset", None, None, T0,
        {**DATAHUB, "relationship": f"Down{EVIL}", "destination": URN},
    )  # fmt: skip
    r.findings = [
        Classified(missing, Verdict.DIVERGED, SUBKIND, Evidence(f"no MCL for {URN}")),
        Classified(stale, Verdict.IN_FLIGHT, "in_flight", Evidence(ERROR, eta_seconds=4.0)),
        Classified(edge, Verdict.STALLED, SUBKIND, Evidence(ERROR)),
    ]
    r.partitions = [PartitionPosition(TOPIC, 1, 5, 9, 0, T0, PartitionHealth.LAGGING, 2.0, 1)]
    r.warnings = [ERROR, FORGED]
    r.unknown = {f"{ETYPE}.aspect": 2}
    return r


def _code_spans(line: str) -> tuple[str, list[str]] | None:
    """(the line without its code spans, their contents); None if a backtick run is left open."""
    rest, spans, i = [], [], 0
    while i < len(line):
        if line[i] == "\\":
            rest.append(line[i : i + 2])
            i += 2
            continue
        run = re.match(r"`+", line[i:])
        if not run:
            rest.append(line[i])
            i += 1
            continue
        close = re.compile(rf"(?<!`){run.group()}(?!`)").search(line, i + len(run.group()))
        if close is None:
            return None
        spans.append(line[i + len(run.group()) : close.start()])
        i = close.end()
    return "".join(rest), spans


def _outside_fences(md: str) -> tuple[list[str], list[list[str]]]:
    lines, blocks, fence = [], [], ""
    for line in md.splitlines():
        if fence:
            if line.strip() == fence:
                fence = ""
            else:
                blocks[-1].append(line)
        elif re.fullmatch(r"`{3,}", line):
            fence = line
            blocks.append([])
        else:
            lines.append(line)
    assert not fence, "a fenced block is never closed"
    return lines, blocks


def _cells(row: str) -> int:
    return len(re.findall(r"(?<!\\)(?:\\\\)*\|", row)) - 1


TEXTS = [ISSUE, EVIL, URN, ERROR, "``", "` x `", " a ", "a\\", "*b* _c_ [d](e) &amp;"]
TEXTS += ["# h", "1. x", "- y", "+ z"]  # what would start a block


@pytest.mark.parametrize("text", TEXTS)
def test_the_escapes_render_the_text_itself(text: str) -> None:
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    item = re.fullmatch(r"<ul>\n<li>(.*)</li>\n</ul>\n", md.render(f"- {md_text(text)}"), re.S)
    assert item and html.unescape(item.group(1)) == visible(text).strip()
    code = re.findall(r"<code>(.*?)</code>", md.render(f"x {md_code(text)} y"), re.S)
    assert [html.unescape(c) for c in code] == [visible(text)]
    table = md.render(f"| a | b |\n|---|---|\n| {md_code(text, table=True)} | {md_text(text)} |\n")
    cells = [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", table, re.S)]
    assert cells == [f"<code>{visible(text)}</code>", visible(text).strip()]


def test_a_code_block_cannot_be_closed_from_inside() -> None:
    lines = ["```", "````x", "~~~", "x```"]
    rendered = MarkdownIt("commonmark").render("\n".join(["- a", "", *md_code_block(lines), "# after"]))
    (code,) = re.findall(r"<pre><code>(.*?)</code></pre>", rendered, re.S)
    assert html.unescape(code) == "\n".join(lines) + "\n" and rendered.endswith("<h1>after</h1>\n")


def _bash_words(command: str, tmp_path: Path) -> list[str]:
    _, rest = command.split(" ", 1)  # the program: printf prints the words it would get
    done = subprocess.run(
        ["bash", "-c", "printf '%s\\0' " + rest], cwd=tmp_path, capture_output=True, timeout=10, env={}
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.decode().split("\0")[:-1]


def test_shell_line_keeps_the_urn_and_the_command_on_one_line(tmp_path: Path) -> None:
    command = _restore(URN) + ' "dq\x1b\\\x07\n" un\\\x1bq'
    line = shell_line(command)
    assert "\n" not in line and "\x1b" not in line and "\x07" not in line
    assert _bash_words(line, tmp_path) == _bash_words(command, tmp_path)
    assert _bash_words(line, tmp_path)[:3] == ["-u", "RestoreIndices", "-a"]
    assert _bash_words(line, tmp_path)[3] == f"urn={URN}"


def test_markdown_cannot_be_broken_out_of(tmp_path: Path) -> None:
    md = RENDERERS["markdown"](hostile())
    assert "\x1b" not in md and not UNSPELLED.search(md)
    assert [line for line in md.splitlines() if line.lstrip().startswith("# Heading")] == []
    lines, blocks = _outside_fences(md)
    for line in lines:
        split = _code_spans(line)
        assert split is not None, f"unbalanced code span: {line!r}"
        assert "<" not in split[0] and "[bold]" not in split[0], line
    width = None  # the cells of the table's header row
    for line in lines:
        width = (width or _cells(line)) if line.startswith("|") else None
        assert width is None or _cells(line) == width, line
    assert any(visible(URN) in span for line in lines for span in (_code_spans(line) or ("", []))[1])
    (repairs,) = blocks
    assert len(repairs) == 4  # auditor rebuild, "or with DataHub's own tools:", RestoreIndices, restart
    assert _bash_words(repairs[0], tmp_path)[:4] == ["rebuild", "replay", "--urn", URN]
    assert _bash_words(repairs[2], tmp_path)[3] == f"urn={URN}"
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(md)
    assert "<img" not in rendered and "<script" not in rendered and rendered.count("<h1>") == 1
    for table in re.findall(r"<table>.*?</table>", rendered, re.S):
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
        assert len({len(re.findall(r"<t[hd]", row)) for row in rows}) == 1, table


def test_console_prints_the_data_literally_on_one_line() -> None:
    buffer = io.StringIO()
    console_report.render(hostile(), Console(file=buffer, width=400, force_terminal=False))
    out = buffer.getvalue()
    assert "\x1b" not in out and not UNSPELLED.search(out)
    assert not [line for line in out.splitlines() if line.lstrip().startswith("# Heading")]
    assert visible(URN) in out and visible(ERROR) in out and visible(ETYPE) in out
    assert "[bold]red[/bold]" in out and ":smile:" in out and "😄" not in out
    assert f"\nwarning: {visible(ERROR)}\n" in out and f"\nwarning: {visible(FORGED)}\n" in out
    assert f"Unknown to the registry (skipped): {visible(ETYPE)}.aspect: 2\n" in out
    assert f"  diverged/{visible(SUBKIND)} {visible(URN)}\n" in out
    assert visible(TOPIC).removeprefix("MetadataChangeLog_") in out


LABEL = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"'
SAMPLE = re.compile(rf"[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{{{LABEL}(?:,{LABEL})*\}})? \S+")


def test_prometheus_label_values_round_trip() -> None:
    text = RENDERERS["prometheus"](hostile())
    values: set[str] = set()
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.fullmatch(r"# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+", line), line
            continue
        assert SAMPLE.fullmatch(line), line
        float(line.rsplit(" ", 1)[1])
        for _, value in re.findall(LABEL, line):
            values.add(re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], value))
    assert {ETYPE, SUBKIND, TOPIC} <= values


def test_json_keeps_the_urn_exactly() -> None:
    text = RENDERERS["json"](hostile())
    data = json.loads(text)
    assert data["findings"][0]["urn"] == URN and data["warnings"][0] == ERROR
    assert data["findings"][0]["repair_datahub"] == _restore(URN)
    assert data["findings"][0]["repair"] == f"auditor rebuild replay --urn {_quoted(URN)} --apply"
    assert RENDERERS["json"](from_dict(data)) == text


def test_many_urns_restore_by_type_in_one_quoted_word() -> None:
    r = Report(started_at=T0)
    etype = "da'ta set;$(id)"
    for n in range(6):
        f = Finding(
            "index.missing-document", Kind.MISSING_DOCUMENT, f"urn:li:x:{n}", etype,
            details=DATAHUB, repairs=(RepairKind.REPLAY_ASPECT,),
        )  # fmt: skip
        r.findings.append(Classified(f, Verdict.DIVERGED, "event_never_published", Evidence("")))
    (rebuild, _, command) = repair_commands(r)
    assert rebuild.startswith("auditor rebuild replay --from-report scan.json --apply")
    assert shlex.split(command)[-1] == f"urnLike=urn:li:{etype}:%"


def test_triage_and_errors_print_the_data_literally(monkeypatch: pytest.MonkeyPatch) -> None:
    import auditor.api
    import auditor.settings
    from auditor.cli import app
    from auditor.core.triage import Boundary, Status, Step, TriageResult
    from auditor.errors import ConfigError

    finding = Finding(
        "index.missing-document", Kind.MISSING_DOCUMENT, URN, "dataset", details=DATAHUB,
        repairs=(RepairKind.REPLAY_ASPECT,),
    )  # fmt: skip
    found = Classified(finding, Verdict.DIVERGED, "event_never_published", Evidence(ERROR))
    steps = [
        Step(Boundary.ROWS, Status.OK, f"rows of {ETYPE}", {"present": True}),
        Step(Boundary.PUBLISHED, Status.BROKEN, ERROR, problems=[ERROR]),
    ]
    settings = auditor.settings.Settings()
    monkeypatch.setattr(auditor.settings, "load_settings", lambda *args, **kwargs: settings)
    result = TriageResult(URN, URN, steps=steps, findings=[found])
    monkeypatch.setattr(auditor.api, "triage", lambda settings, urn, grace, settle, **kw: result)
    for fmt in ("console", "json"):
        done = CliRunner().invoke(app, ["triage", URN, "--format", fmt])
        assert done.exit_code == 1, done.output
        if fmt == "json":
            data = json.loads(done.stdout)
            assert data["urn"] == URN and data["boundaries"][1]["problems"] == [ERROR]
            assert data["first_break"] == {"boundary": "MCL published", "status": "broken"}
            assert data["repair"][0].startswith("auditor rebuild replay --urn ")
            continue
        for text in (URN, f"rows of {ETYPE}", ERROR):
            assert visible(text) in done.stdout
        assert "first break at MCL published: diverged/event_never_published" in done.stdout
    assert "\x1b" not in done.stdout and not UNSPELLED.search(done.stdout) and ":smile:" in done.stdout

    def fail(settings: object, urn: str, grace: object, settle: object, **kw: object) -> None:
        raise ConfigError(f"no such urn {urn}", hint=ERROR)

    monkeypatch.setattr(auditor.api, "triage", fail)
    monkeypatch.setattr("auditor.cli.common.err", Console(stderr=True, width=400))
    done = CliRunner().invoke(app, ["triage", URN])
    assert done.exit_code == 2 and visible(URN) in done.stderr and visible(ERROR) in done.stderr
    assert "\x1b" not in done.stderr and not UNSPELLED.search(done.stderr)


def test_repair_hints_quote_every_value_from_the_data(tmp_path: Path) -> None:
    from auditor.core.plan import RepairAction
    from auditor.platforms.datahub.commands import command as render

    doc_id = "a'$(touch pwned)`touch pwned2`b"
    orphan = RepairAction(RepairKind.DELETE_DOCUMENT, URN, "dataset", index="x'y", doc_id=doc_id)
    command = render(orphan, group="g")
    words = _bash_words(command, tmp_path)
    assert words[-1] == f"$SEARCH_URL/x'y/_doc/{doc_id}".replace("$SEARCH_URL", "")
    assert not list(tmp_path.iterdir()), "the repair command ran something from the data"


class _Page(HTMLParser):
    """Every tag, attribute and text node of a page, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.texts: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.texts).append(data)


HTML_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "ul", "li", "code", "pre",
    "table", "thead", "tbody", "tr", "th", "td", "details", "summary", "div", "label", "input",
    "select", "option", "span", "svg", "rect", "text", "line", "polyline", "circle", "script",
}  # fmt: skip


def test_html_shows_the_data_and_runs_only_its_own_script() -> None:
    report = hostile()
    report.trend = [RunSummary(T0 - timedelta(hours=h), 11, {"diverged": h}, 1) for h in (2, 1, 0)]
    page = RENDERERS["html"](report)
    parsed = _Page()
    parsed.feed(page)
    assert set(parsed.tags) <= HTML_TAGS, set(parsed.tags) - HTML_TAGS
    assert parsed.tags.count("script") == 1 and parsed.tags.count("h1") == 1
    assert not [name for name, _ in parsed.attrs if name.startswith("on")]
    assert not [value for _, value in parsed.attrs if value and re.search(r"(?i)javascript:|//", value)]
    assert "\x1b" not in page
    shown = "".join(parsed.texts)
    for text in (visible(URN), visible(ERROR), visible(ETYPE), visible(TOPIC), visible(FORGED)):
        assert text in shown, text
    (policy,) = [v for k, v in parsed.attrs if k == "content" and v and "script-src" in v]
    digest = base64.b64encode(hashlib.sha256("".join(parsed.scripts).encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy and "default-src 'none'" in policy
