"""rules.json equals what scripts/datahub-rules makes from every published wheel it lists.

Downloads the wheels from the package index (cached in ~/.cache/auditor/wheels between runs) and
regenerates the whole file with `--check`: a hand edit, or a rule of the schema reader changed
without regenerating, fails here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


def test_rules_json_is_what_the_wheels_give() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts/datahub_rules.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "rules.json is current" in done.stderr
    assert "1.0.0: acryl-datahub 1.0.0" in done.stderr
