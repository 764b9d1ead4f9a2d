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
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from pathlib import Path
from typing import IO, Any

from auditor.core.model import Cause, Classified, Evidence, Finding, Kind, RepairKind, Report, Verdict
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
    has; an index most of whose documents are missing said once, in the report's warnings, with
    its counts and its one repair. ValueError, KeyError or OSError when it is neither."""
    header = header_of(path)
    if header is None:
        return from_dict(json.loads(path.read_text(encoding="utf-8")))
    report = from_dict({**header, "findings": []})
    tally = Tally(report.entities)
    every = _ordered(path, tally)
    kept = heapq.nsmallest(keep, every, key=itemgetter(0)) if keep > 0 else []
    for _ in every:  # a report keeping none still counts its indices behind
        pass
    report.findings = [read_finding(json.loads(line), None) for _, line in kept]  # only these decoded
    report.findings_dropped = max(0, int(header.get("findings_total") or 0) - len(report.findings))
    report.warnings = [*report.warnings, *behind_notes(tally.behind())]
    return report


def _ordered(path: Path, tally: Tally) -> Iterator[tuple[tuple[int, str, str], str]]:
    """Each finding line with its place in the report's order, as the scan keeps its worst
    (auditor/scan/finish.py's `rank`: verdict, entity type, urn), counted by `tally`."""
    for line in _rows(path):
        row = _fields(line)
        tally.add(row)
        yield (Verdict(row["verdict"]).rank, row["entity_type"] or "", row["urn"] or ""), line


def findings(path: Path, header: dict[str, Any]) -> Iterator[Classified]:
    """The file's findings, one at a time (written since schema version 2: each names its platform)."""
    from_dict({**header, "findings": []})  # the header's schema version, checked
    for line in _rows(path):
        yield read_finding(json.loads(line), None)


# --- Most of an index behind: said once per index, repaired by one window per entity type ---

BEHIND_SHARE = 0.5  # an index missing at least this share of its type's entities is "behind"
KEEP_READ = 50_000  # findings a repair keeps between its passes over the file (more: read again)
# what a replay or reindex of every row of the entity type since a time repairs, as a restore
# leaves it: a document, edge or system-metadata doc not there or stale (an orphan's deletion, a
# malformed row, a field left behind, a stale entity document are not taken into it)
WINDOWED = frozenset({Kind.MISSING_DOCUMENT.value, Kind.MISSING_EDGE.value, Kind.STALE_SYSTEM_METADATA.value})
BEHIND_CHECK = "index_behind"  # the one finding that stands for an index's missing documents


@dataclass
class Behind:
    """An index that lacks the documents of most of its entity type's entities: one repair for it
    (a reindex of the type), not one per document."""

    platform: str
    entity_type: str
    index: str
    missing: int  # diverged findings of a missing document in it
    entities: int  # the type's entities in the store, as the scan counted them

    def text(self, title: str) -> str:
        share = f"{self.missing:,} missing documents against {self.entities:,} {self.entity_type} entities"
        return (
            f"index {self.index}: {share} in the store (most of the index is behind). One repair: "
            f"`auditor rebuild reindex -t {self.entity_type}` (or {title}'s own reindex of the type)"
        )


class Tally:
    """Diverged missing documents counted per (platform, type, index) as a stream passes: a
    counter per index, never one per finding."""

    def __init__(self, entities: dict[str, int]) -> None:
        self.entities = entities
        self.missing: Counter[tuple[str, str, str]] = Counter()

    def add(self, row: dict[str, Any]) -> None:
        if row.get("kind") == Kind.MISSING_DOCUMENT.value and row.get("verdict") == Verdict.DIVERGED.value:
            platform = row.get("platform") or "datahub"
            self.missing[(platform, row.get("entity_type") or "", row.get("index") or "")] += 1

    def behind(self) -> list[Behind]:
        out = []
        for (platform, entity_type, index), n in sorted(self.missing.items()):
            entities = int(self.entities.get(entity_type) or 0)
            if entities and n >= BEHIND_SHARE * entities:
                out.append(Behind(platform, entity_type, index, n, entities))
        return out


def behind_notes(behind: Iterable[Behind]) -> list[str]:
    """One sentence per index behind, in its platform's words."""
    from auditor import platforms

    return [b.text(platforms.get(b.platform).title) for b in behind]


def _rows(path: Path) -> Iterator[str]:
    """The file's finding lines (the header skipped)."""
    with _open(path) as lines:
        lines.readline()
        yield from (line for line in lines if line.strip())


HEAD = ("kind", "verdict", "urn", "entity_type", "index", "changed_at")  # in the writer's order


def _fields(line: str) -> dict[str, Any]:
    """The fields a tally and a window look at, without decoding the line: in the writer's form
    (`finding_json`'s order, no spaces) a top-level key's first occurrence is its own, as no text
    before it can hold a bare quote; `details.platform` is looked for the same way. Any other
    line is decoded whole."""
    if not line.startswith('{"key":"'):
        return _decoded(line)
    out: dict[str, Any] = {}
    at = 0
    for name in HEAD:
        at = line.find(f',"{name}":', at)
        if at < 0:
            return _decoded(line)
        at += len(name) + 4
        if line.startswith("null", at):
            out[name] = None
            continue
        end = line.find('"', at + 1)
        if line[at] != '"' or end < 0 or "\\" in line[at:end]:  # an escape: read by the decoder
            return _decoded(line)
        out[name] = line[at + 1 : end]
    details = line.find(',"details":{', at)
    platform = line.find('"platform":"', details) if details >= 0 else -1
    out["platform"] = line[platform + 12 : line.find('"', platform + 12)] if platform >= 0 else None
    return out


def _decoded(line: str) -> dict[str, Any]:
    row = json.loads(line)
    out = {name: row.get(name) for name in HEAD}
    out["platform"] = (row.get("details") or {}).get("platform")
    return out


def _parsed_time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


class ReportFindings:
    """The findings of a JSON Lines report a repair takes, read from the file at each pass (a
    repair walks its findings a few times: the platform, the plan, the deletes it counts), never
    all held: at most `KEEP_READ` are kept between passes, and a DataHub entity type most of
    whose index is behind stands as one finding of a window over its rows (the plan's one
    action for it), its missing documents and edges and stale system-metadata docs not read into
    findings at all.

    Made by `taking`, which counts the indices behind in one pass first."""

    def __init__(self, path: Path, header: dict[str, Any], verdicts: frozenset[Verdict]) -> None:
        self.path, self.header, self.verdicts = Path(path), header, verdicts
        self.behind: list[Behind] = []
        self.since: dict[str, datetime | None] = {}  # type windowed -> its earliest missing write
        self._kept: list[Classified] | None = None

    def __getstate__(self) -> dict[str, Any]:  # a shard process reads the file itself
        return {**self.__dict__, "_kept": None}

    def __bool__(self) -> bool:
        return True  # a report read (its repair then finds what it finds, as a JSON report's does)

    def __iter__(self) -> Iterator[Classified]:
        if self._kept is not None:
            yield from self._kept
            return
        kept: list[Classified] | None = []
        for c in self._read():
            if kept is not None:
                kept.append(c)
                kept = kept if len(kept) <= KEEP_READ else None
            yield c
        self._kept = kept

    def _read(self) -> Iterator[Classified]:
        yield from (self._window(t, since) for t, since in sorted(self.since.items()))
        first: str | None = None
        taken = False
        for line in _rows(self.path):
            first = first or line
            row = _fields(line)
            if self._windowed(row):
                continue
            if row["verdict"] in self._wanted or row["kind"] == Kind.STORE_BEHIND.value:
                taken = True
                yield read_finding(json.loads(line), None)
        if not taken and not self.since and first is not None:  # it names the platform
            yield read_finding(json.loads(first), None)

    @property
    def _wanted(self) -> frozenset[str]:
        return frozenset(v.value for v in self.verdicts)

    def _windowed(self, row: dict[str, Any]) -> bool:
        """A diverged finding of a kind a window repairs (`WINDOWED`), of a type with a window."""
        return (
            row["entity_type"] in self.since
            and row["kind"] in WINDOWED
            and row["verdict"] == Verdict.DIVERGED.value
            and (row["platform"] or "datahub") == "datahub"
        )

    def _window(self, entity_type: str, since: datetime | None) -> Classified:
        """The finding whose repair is a window over the type's rows written since `since`
        (its index the one most behind), as the plan makes of an index behind a restore."""
        index = max((b for b in self.behind if b.entity_type == entity_type), key=lambda b: b.missing).index
        finding = Finding(
            BEHIND_CHECK,
            Kind.MISSING_DOCUMENT,
            f"urn:li:{entity_type}:(index-behind)",
            entity_type,
            index=index,
            changed_at=since,
            details={"platform": "datahub"},
            repairs=(RepairKind.REPLAY_WINDOW,),
        )
        reason = "most of the index is behind: every row of the type written since the earliest missing one"
        return Classified(finding, Verdict.DIVERGED, Cause.INDEX_BEHIND_RESTORE.value, Evidence(reason))


def taking(path: Path, header: dict[str, Any], verdicts: frozenset[Verdict]) -> ReportFindings:
    """The findings of `path` a repair of `verdicts` takes (a store-behind finding too:
    `--prefer-store` takes it whatever its verdict), with its indices behind found in a first
    pass: a DataHub type of one (when diverged findings are taken) is repaired by one window."""
    found = ReportFindings(path, header, verdicts)
    tally = Tally(header.get("entities") or {})
    earliest: dict[str, datetime | None] = {}
    for line in _rows(path):
        row = _fields(line)
        tally.add(row)
        if row["kind"] in WINDOWED and row["verdict"] == Verdict.DIVERGED.value:
            t, at = row["entity_type"] or "", _parsed_time(row["changed_at"])
            was = earliest.get(t, at)
            earliest[t] = None if at is None or was is None else min(at, was)
    found.behind = tally.behind()
    if Verdict.DIVERGED in verdicts:
        found.since = {
            b.entity_type: earliest.get(b.entity_type) for b in found.behind if b.platform == "datahub"
        }
    return found
