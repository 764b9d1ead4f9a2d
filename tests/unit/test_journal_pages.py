"""The console's journal folder on files alone: a journal the console may not read (they are
their owner's only, 0600) is listed with why, never a failed page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from auditor.backends.journal import Journal
from auditor.serve.journal_dir import JournalFolder
from auditor.serve.journal_pages import listing


def test_a_journal_the_console_cannot_read_is_listed_with_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Journal.start(tmp_path, {"mode": "reindex"})
    run.imaged([{"i": "ix", "id": "a", "urn": "a", "op": "index", "found": False}])
    run.close()
    opening = Path.open

    def refused(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.suffix == ".journal":
            raise PermissionError(13, "Permission denied")
        return opening(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refused)
    folder = JournalFolder(tmp_path)
    (listed,) = folder.runs()
    page = folder.run(run.run, 0)
    assert listed.run == run.run and "cannot be read by the console: PermissionError" in (listed.torn or "")
    assert page is not None and page.torn == listed.torn
    assert any(run.run in line and "Permission denied" in line for line in listing([listed], tmp_path))
