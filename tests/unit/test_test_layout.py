"""The test folders have no __init__.py, so pytest names a test module by its file name alone:
two test files of one name in different folders break the whole run's collection (as
tests/unit/test_om_reindex.py beside tests/integration/test_om_reindex.py once did)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_name_is_unique_across_the_folders() -> None:
    names = Counter(p.name for p in TESTS.rglob("*.py") if p.name != "conftest.py")
    assert sum(1 for p in TESTS.rglob("test_*.py")) > 50  # the folders were found
    assert [n for n, k in names.items() if k > 1] == []
