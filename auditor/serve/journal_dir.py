"""The repairs' write journal, read for the console: its runs, newest first, each surveyed once
per (size, mtime) as a stream (rebuild/undo.py's `survey`: a big run's documents are counted,
never held), and one run's documents a page at a time.

Only `*.journal` files directly in the folder are served: a run named in the URL is looked up
among them, never joined into a path. Read-only: nothing here writes or undoes.
"""

from __future__ import annotations

import threading
from pathlib import Path

from auditor.backends import journal
from auditor.rebuild.journal_survey import Survey, survey, undone_by

MAX_LISTED = 200  # the newest this many runs
PAGE = 100  # documents on a run's page, unless it asks for between 1 and MAX_PAGE
MAX_PAGE = 1000


class JournalFolder:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._cache: dict[str, tuple[tuple[int, float], Survey]] = {}
        self._lock = threading.Lock()

    def _paths(self) -> list[Path]:
        try:
            return journal.runs(self.folder)
        except OSError:
            return []

    def runs(self) -> list[Survey]:
        """The newest runs first, each with the undo runs that undid it."""
        paths = self._paths()
        undone = undone_by(paths)
        listed = [s for s in (self._surveyed(p, undone) for p in paths[-MAX_LISTED:]) if s is not None]
        # the ids sort by the second: runs of the same second by when their header says they began
        return sorted(listed, key=lambda s: (str(s.header.get("at") or ""), s.run), reverse=True)

    def _surveyed(self, path: Path, undone: dict[str, list[str]]) -> Survey | None:
        try:
            st = path.stat()
        except OSError:  # pruned meanwhile
            return None
        stamp = (st.st_size, st.st_mtime)
        with self._lock:
            known = self._cache.get(path.name)
        if known is None or known[0] != stamp:
            known = (stamp, _surveyed(path))
            with self._lock:
                self._cache[path.name] = known
        known[1].undone_by = undone.get(known[1].run, [])
        return known[1]

    def run(self, run: str, page: int, size: int = PAGE) -> Survey | None:
        """One run (by its exact id), with its documents of `page` (from 0, `size` a page); None
        if no such run."""
        paths = self._paths()
        path = next((p for p in paths if p.name == f"{run}{journal.SUFFIX}"), None)
        if path is None:
            return None
        return _surveyed(path, range(page * size, (page + 1) * size), undone_by(paths))


def _surveyed(path: Path, page: range = range(0), undone: dict[str, list[str]] | None = None) -> Survey:
    """The run's survey; one this process may not read (the journals are their owner's only,
    0600: run the console as the repairs' user) listed with why, not a failed page."""
    try:
        return survey(path, page, undone)
    except OSError as exc:
        out = Survey(path)
        out.torn = f"cannot be read by the console: {type(exc).__name__}: {exc.strerror or exc}"
        return out
