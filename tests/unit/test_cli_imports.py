"""The cold command line imports only what the command uses: `auditor triage` with JSON output
loads no rich (the console renderer's), no httpx command line, and no command loads the
console's web stack (starlette, uvicorn) but `auditor serve`."""

from __future__ import annotations

import os
import subprocess
import sys


def imported(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "auditor.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "AUDITOR_STORE_URL": "", "AUDITOR_SEARCH_URL": ""},
    )
    names = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "import time:" in line}
    assert names, done.stderr
    return names


def top(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names}


def test_a_json_triage_loads_no_console_renderer_and_no_web_stack() -> None:
    # refused at the urn: the command module, the settings, the urn reader, and the error line
    names = imported("triage", "urn:li:dataset:(unbalanced", "--format", "json")
    assert not top(names) & {"starlette", "uvicorn", "anyio", "pygments"}, sorted(names)
    assert "auditor.serve" not in names and "httpx._main" not in names
    assert "rich" in top(names)  # the error line itself is rich's (loaded only to print it)
    names = imported("triage", "--help")
    assert not top(names) & {"rich", "starlette", "uvicorn"}, sorted(top(names))


def test_serve_loads_its_stack_only_when_it_runs() -> None:
    names = imported("serve", "--help")
    assert not top(names) & {"starlette", "uvicorn"}, sorted(top(names))
