"""The heal's own memory, beside the scan's in the state file: each run, what it healed and whether
its verification passed. The hourly budget counts from it; a run whose verification failed
refuses every later heal (guard `last_heal_failed`) until a person acknowledges it."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS heal_run (
    run_id TEXT PRIMARY KEY,
    started_at REAL NOT NULL,
    healed INTEGER NOT NULL,
    verified INTEGER NOT NULL,
    journal TEXT,
    why TEXT,
    acknowledged INTEGER NOT NULL DEFAULT 0
);
"""
KEPT = timedelta(days=30)


class HealRecord:
    """The heal runs in the state file (`path`), opened for one heal."""

    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path))
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def healed_since(self, since: datetime) -> int:
        """Entities healed by the runs started at or after `since` (the hourly budget's use)."""
        row = self.db.execute("SELECT COALESCE(SUM(healed), 0) FROM heal_run WHERE started_at >= ?",
                              (since.timestamp(),)).fetchone()  # fmt: skip
        return int(row[0])

    def last_failure(self) -> str | None:
        """Why the newest run's verification failed, when it did and nobody acknowledged it."""
        row = self.db.execute(
            "SELECT run_id, verified, why, acknowledged FROM heal_run ORDER BY started_at DESC LIMIT 1"
        ).fetchone()
        if row is None or row[1] or row[3]:
            return None
        run_id, _, why, _ = row
        return (
            f"the last heal ({run_id}) failed its verification: {why}; acknowledge it "
            "(`auditor heal --acknowledge`) once a person has looked"
        )

    def acknowledge(self) -> int:
        """A person has looked at the failed heals: they no longer refuse the next one."""
        with self.db:
            return self.db.execute("UPDATE heal_run SET acknowledged = 1 WHERE verified = 0").rowcount

    def add(self, run_id: str, started_at: datetime, healed: int, verified: bool, journal: str | None,
            why: str = "") -> None:  # fmt: skip
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO heal_run VALUES (?, ?, ?, ?, ?, ?, 0)",
                (run_id, started_at.timestamp(), healed, int(verified), journal, why),
            )
            self.db.execute("DELETE FROM heal_run WHERE started_at < ?", ((started_at - KEPT).timestamp(),))
