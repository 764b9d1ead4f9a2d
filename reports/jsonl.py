"""Every finding of a scan as JSON Lines (`auditor scan --findings-out F.jsonl[.gz]`), written and
read as a stream: a scan after a search restore has millions of findings, more than a JSON report
(which keeps the worst `--max-findings`) or a reader should hold.

The file: one line, the report without its findings (`to_dict`, with `jsonl` naming the format
and `findings_total` the lines that follow), then one line per finding, in the JSON report's
finding form. The findings are written as they are judged, to a spill file beside the target;
the target is made when the scan ends (its header knows the totals), so a scan that fails leaves
no half file. A name ending in `.gz` is gzip-compressed; a reader knows either by its bytes."""

from __future__ import annotations

import gzip
import heapq
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from auditor.core.model import Classified, Report
from auditor.reports.json_report import finding_json, to_dict
from auditor.reports.merge import from_dict, read_finding

FORMAT = "auditor-findings"  # the header's `jsonl`
SUFFIXES = (".jsonl", ".jsonl.gz")
KEEP = 10_000  # findings a reader of the file keeps in detail, as a scan's report does by default
GZIP_MAGIC = b"\x1f\x8b"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


class FindingsWriter:
    """Writes each finding as it is judged; `close(report)` makes the file once the report is
    closed; `discard()` removes what was spilled (a scan that failed)."""

    def __init__(self, path: Path, report: Report) -> None:  # a scan's FindingsOut, with its path
        self.path = Path(path)
        self.report = report  # its group and start time name each finding's repair commands
        self.count = 0
        fd, spill = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".spill", dir=self.path.parent)
        self.spill = Path(spill)
        self.out: IO[str] | None = os.fdopen(fd, "w", encoding="utf-8")

    def write(self, c: Classified) -> None:
        assert self.out is not None, "written after close"
        self.out.write(_dumps(finding_json(c, self.report)) + "\n")
        self.count += 1

    def close(self, report: Report) -> None:
        """The header (the closed report, without its findings), then the spilled lines."""
        assert self.out is not None, "closed twice"
        self.out.close()
        self.out = None
        header = {"jsonl": FORMAT, **to_dict(report), "findings_total": self.count}
        header.pop("findings", None)
        made = self.path.with_name(self.path.name + ".part")
        opener: Callable[..., IO[str]] = gzip.open if self.path.name.endswith(".gz") else open  # type: ignore[assignment]
        try:
            with opener(made, "wt", encoding="utf-8") as out, self.spill.open(encoding="utf-8") as lines:
                out.write(_dumps(header) + "\n")
                shutil.copyfileobj(lines, out, 1 << 20)
            made.replace(self.path)
        finally:
            made.unlink(missing_ok=True)
            self.spill.unlink(missing_ok=True)

    def discard(self) -> None:
        if self.out is not None:
            self.out.close()
            self.out = None
        self.spill.unlink(missing_ok=True)


def _open(path: Path) -> IO[str]:
    with path.open("rb") as raw:
        gz = raw.read(2) == GZIP_MAGIC
    return gzip.open(path, "rt", encoding="utf-8") if gz else path.open(encoding="utf-8")  # type: ignore[return-value]


def header_of(path: Path) -> dict[str, Any] | None:
    """The file's header when it is a findings JSON Lines file (None: another file, a JSON
    report say, whose first line is not a header)."""
    with _open(path) as lines:
        first = lines.readline()
    try:
        data = json.loads(first)
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get("jsonl") == FORMAT else None


def is_findings(path: Path) -> bool:
    """A name a findings JSON Lines file has (the console's reports folder lists these too)."""
    return path.name.endswith(SUFFIXES)


def load(path: Path, keep: int = KEEP) -> Report:
    """A report from a JSON report, or from a findings JSON Lines file read as a stream: its
    header, and of its findings only the worst `keep` (in the report's order), however many it
    has. ValueError, KeyError or OSError when it is neither."""
    header = header_of(path)
    if header is None:
        return from_dict(json.loads(path.read_text(encoding="utf-8")))
    report = from_dict({**header, "findings": []})
    report.findings = heapq.nsmallest(keep, findings(path, header), key=_order) if keep > 0 else []
    report.findings_dropped = max(0, int(header.get("findings_total") or 0) - len(report.findings))
    return report


def _order(c: Classified) -> tuple[int, str, str]:
    """The report's order, as the scan keeps its worst (auditor/scan/finish.py's `rank`)."""
    return (c.verdict.rank, c.finding.entity_type, c.finding.urn)


def findings(path: Path, header: dict[str, Any]) -> Iterator[Classified]:
    """The file's findings, one at a time (written since schema version 2: each names its platform)."""
    from_dict({**header, "findings": []})  # the header's schema version, checked
    with _open(path) as lines:
        lines.readline()
        for line in lines:
            if line.strip():
                yield read_finding(json.loads(line), None)
