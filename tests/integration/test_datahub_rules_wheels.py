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


def test_the_sandbox_reads_each_release_as_the_auditor_does() -> None:
    """The sandbox indexes as an older release by reading that release's wheel on its own terms
    (sandbox/versions.py, not the auditor's reader); for every aspect the sandbox projects, the
    fields each release leaves out agree with the shipped rules."""
    from auditor.platforms.datahub.versions.rules import catalog
    from sandbox.projection import SEARCH_FIELDS
    from sandbox.versions import withheld

    shipped = catalog()
    compared = 0
    for release in shipped.names():
        rules, dropped = shipped.get(release), withheld(release)
        for aspect, specs in SEARCH_FIELDS.items():
            mine = {n for s in specs for n in (s.name, s.has, s.num) if n}
            assert dropped.get(aspect, frozenset()) == mine - rules.aspects.get(aspect, frozenset()), (
                release,
                aspect,
            )
            compared += 1
    assert compared > 200
    assert withheld("1.7.0.17") == {}  # the sandbox's own projection is the newest release's
    assert "lastModifiedAt" in withheld("1.0.0")["chartInfo"]
