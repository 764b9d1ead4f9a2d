"""The scan reports scheduled runs wrote: a folder of JSON reports (deploy/'s CronJob writes
`scan-<UTC time>.json` and a copy as `latest.json`), newest first, with verdict counts and the
trend across them; each one rendered as `auditor report render` does (reports/html.py).

A report is read once per (size, mtime) and kept in memory; a file that is not a report is
listed as unreadable (with why), never a failed page. Only plain `*.json` files directly in the
folder are served: a name from the URL is looked up among them, never joined into a path.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MAX_LISTED = 200  # the newest this many: a folder of 14 days at 30 minutes holds ~670


@dataclass
class Entry:
    name: str
    size: int
    mtime: float
    report: Any = None  # auditor.core.model.Report
    error: str | None = None
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def started_at(self) -> datetime:
        if self.report is not None:
            return self.report.started_at  # type: ignore[no-any-return]
        return datetime.fromtimestamp(self.mtime, UTC)


class ReportsFolder:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._cache: dict[str, Entry] = {}
        self._lock = threading.Lock()

    def _files(self) -> list[Path]:
        from auditor.reports.jsonl import is_findings  # every finding as JSON Lines: listed too

        try:
            found = [
                p for p in self.folder.iterdir() if (p.suffix == ".json" or is_findings(p)) and p.is_file()
            ]
        except OSError:
            return []
        found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        return [p for p in found if p.name != "latest.json"][:MAX_LISTED]

    def _read(self, path: Path) -> Entry:
        from auditor.reports.jsonl import load
        from auditor.reports.summary import totals

        st = path.stat()
        with self._lock:
            known = self._cache.get(path.name)
        if known is not None and (known.size, known.mtime) == (st.st_size, st.st_mtime):
            return known
        entry = Entry(path.name, st.st_size, st.st_mtime)
        try:
            entry.report = load(path)  # JSON Lines as a stream: its worst findings kept
            entry.counts = totals(entry.report)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            entry.error = f"not a scan report: {type(exc).__name__}: {exc}"[:300]
        with self._lock:
            self._cache[path.name] = entry
        return entry

    def entries(self) -> list[Entry]:
        return [self._read(p) for p in self._files()]

    def get(self, name: str) -> Entry | None:
        """A listed report by its file name (`latest` for the newest); None if there is none."""
        files = self._files()
        if name == "latest":
            return self._read(files[0]) if files else None
        path = next((p for p in files if p.name == name), None)
        return self._read(path) if path is not None else None


def trend(entries: list[Entry]) -> list[Any]:
    """The listed reports as the HTML report's trend (oldest first)."""
    from auditor.core.model import RunSummary

    out = []
    for e in reversed(entries):
        if e.report is None:
            continue
        verdicts: Counter[str] = Counter()
        for (_, verdict, _sub), n in e.report.counts.items():
            verdicts[verdict] += n
        out.append(
            RunSummary(e.started_at, sum(e.report.entities.values()), dict(verdicts), e.report.exit_code)
        )
    return out
