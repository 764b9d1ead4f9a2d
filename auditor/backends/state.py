"""Scan state kept across scans in a small SQLite file: findings seen and consumer offsets."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from auditor.core.classify import History
from auditor.core.model import Finding, RunSummary
from auditor.core.records import OffsetSample

SCHEMA = """
CREATE TABLE IF NOT EXISTS finding (
    key TEXT PRIMARY KEY,
    entity_type TEXT NOT NULL,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    times_seen INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS offset_sample (
    grp TEXT NOT NULL,
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    committed INTEGER,
    start_offset INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    members INTEGER NOT NULL,
    taken_at REAL NOT NULL,
    PRIMARY KEY (grp, topic, partition)
);
CREATE TABLE IF NOT EXISTS scan_run (
    scope TEXT NOT NULL,
    started_at REAL NOT NULL,
    entities INTEGER NOT NULL,
    verdicts TEXT NOT NULL,
    exit_code INTEGER NOT NULL,
    PRIMARY KEY (scope, started_at)
);
"""

# scans remembered per scope for the trend (a scan a minute for a week is about 10k)
RUNS_KEPT = 500


class ScanState:
    """History for classification; `None` path means an in-memory, throw-away state."""

    def __init__(self, path: str | Path | None, *, read_only: bool = False) -> None:
        """`read_only`: open an existing file for reading only (a triage); nothing is recorded,
        and a missing file reads as empty."""
        self.read_only = read_only
        if read_only and path is not None and Path(path).is_file():
            self.db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
            return
        if path is not None and str(path) != ":memory:" and not read_only:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path) if path and not read_only else ":memory:")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def history(self, keys: Iterable[str]) -> dict[str, History]:
        out: dict[str, History] = {}
        # one object per distinct history: a restore's millions of findings were mostly first
        # seen by the same scan
        alike: dict[tuple[float, int], History] = {}
        keys = list(keys)
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for key, first, times in self.db.execute(
                f"SELECT key, first_seen, times_seen FROM finding WHERE key IN ({marks})", chunk
            ):
                seen = alike.get((first, times))
                if seen is None:
                    seen = alike[first, times] = History(datetime.fromtimestamp(first, UTC), times)
                out[key] = seen
        return out

    def record_findings(
        self,
        findings: Iterable[Finding],
        now: datetime,
        scope_types: tuple[str, ...],
        forget_unseen: bool = True,
    ) -> None:
        """Remember this scan's findings; forget those of the scope that were not seen again."""
        if self.read_only:
            return
        ts = now.timestamp()
        with self.db:
            for f in findings:
                self.db.execute(
                    "INSERT INTO finding VALUES (?, ?, ?, ?, 1) ON CONFLICT(key) DO UPDATE SET "
                    "last_seen = excluded.last_seen, times_seen = times_seen + 1",
                    (f.key, f.entity_type, ts, ts),
                )
            if not forget_unseen:
                return
            if scope_types:
                marks = ",".join("?" * len(scope_types))
                self.db.execute(
                    f"DELETE FROM finding WHERE last_seen < ? AND entity_type IN ({marks})",
                    (ts, *scope_types),
                )
            else:
                self.db.execute("DELETE FROM finding WHERE last_seen < ?", (ts,))

    def previous_samples(self, group: str) -> dict[tuple[str, int], OffsetSample]:
        rows = self.db.execute(
            "SELECT topic, partition, committed, start_offset, end_offset, members, taken_at "
            "FROM offset_sample WHERE grp = ?",
            (group,),
        )
        return {(r[0], r[1]): OffsetSample(*r) for r in rows}

    def record_samples(self, group: str, samples: Iterable[OffsetSample]) -> None:
        if self.read_only:
            return
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO offset_sample VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (group, s.topic, s.partition, s.committed, s.start, s.end, s.members, s.taken_at)
                    for s in samples
                ],
            )

    def record_run(self, scope: str, run: RunSummary) -> None:
        """Remember one scan's totals under its scope; only the newest RUNS_KEPT are kept."""
        if self.read_only:
            return
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO scan_run VALUES (?, ?, ?, ?, ?)",
                (scope, run.started_at.timestamp(), run.entities, json.dumps(run.verdicts), run.exit_code),
            )
            self.db.execute(
                "DELETE FROM scan_run WHERE scope = ? AND started_at NOT IN "
                "(SELECT started_at FROM scan_run WHERE scope = ? ORDER BY started_at DESC LIMIT ?)",
                (scope, scope, RUNS_KEPT),
            )

    def runs(self, scope: str, limit: int = 100) -> list[RunSummary]:
        """The newest `limit` scans of this scope, oldest first."""
        try:
            rows = self.db.execute(
                "SELECT started_at, entities, verdicts, exit_code FROM scan_run WHERE scope = ? "
                "ORDER BY started_at DESC LIMIT ?",
                (scope, limit),
            ).fetchall()
        except sqlite3.OperationalError:  # a read-only file written before scans were remembered
            return []
        return [
            RunSummary(datetime.fromtimestamp(ts, UTC), entities, json.loads(verdicts), code)
            for ts, entities, verdicts, code in reversed(rows)
        ]
