"""The cold command line imports only what the command uses: `auditor triage` with JSON output
loads no rich (the console renderer's), no httpx command line, and no command loads the
console's web stack (starlette, uvicorn) but `auditor serve`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


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


def test_the_search_clients_work_without_the_asyncio_transports_kept_out() -> None:
    # what the command line and a reader process do at start (auditor/backends/lean.py), then both
    # clients opened and asked: each fails on the closed port, not on a missing import
    code = """
import sys
from auditor.backends.lean import quick_start
quick_start()
from auditor.backends.search import SearchIndex
from auditor.errors import BackendUnavailable
for kind in ("elasticsearch", "opensearch"):
    index = SearchIndex("http://127.0.0.1:9", kind, timeout=2, retries=0)
    try:
        index.names("nothing_")
    except BackendUnavailable as exc:
        print(kind, "unavailable")
    index.close()
print(sorted(n for n in ("httpx", "aiohttp") if sys.modules.get(n) is not None))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["elasticsearch unavailable", "opensearch unavailable", "[]"]


def test_the_collector_is_off_during_the_imports_then_on_with_them_frozen() -> None:
    code = """
import gc, time
from auditor.backends.lean import quick_start
quick_start(collector_after=3.0)  # long enough for the import below on a loaded machine
off = not gc.isenabled()
before = sum(g["collections"] for g in gc.get_stats())
import sqlalchemy  # what a cold start imports: never traversed by the collector meanwhile
collections = sum(g["collections"] for g in gc.get_stats()) - before
time.sleep(3.5)
print(off, gc.isenabled(), gc.get_freeze_count() > 10000, collections, gc.get_threshold()[0])
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "0", "20000"]


# each platform's triage: its walk, its store class, and one read that fails on a closed port
TRIAGE_STORES = {
    "datahub": (
        "from auditor.platforms.datahub.triage import walk\n"
        "from auditor.platforms.datahub.backends.store import MetadataStore as Store",
        "store.versions('urn:li:tag:x')",
    ),
    "openmetadata": (
        "from auditor.platforms.openmetadata.triage import om_walk\n"
        "from auditor.platforms.openmetadata.store import OmStore as Store",
        "store.ping()",
    ),
}


@pytest.mark.parametrize("platform", sorted(TRIAGE_STORES))
def test_a_triage_reads_its_store_without_sqlalchemy_or_the_report_renderers(platform: str) -> None:
    # what a triage imports, then its store opened on a plain URL of each kind and asked: each
    # fails on the closed port (the driver's own error, the password kept out), none imported
    # SQLAlchemy (0.14-0.19 s of a cold start) or the scan report's HTML renderer
    imports, call = TRIAGE_STORES[platform]
    code = f"""
import sys
from auditor.backends.lean import quick_start
quick_start()
import auditor.cli.triage_cmd, auditor.api, auditor.reports.triage_report
{imports}
from auditor.errors import BackendUnavailable
for url in ("postgresql+psycopg://u:s3cret@127.0.0.1:9/db", "mysql+pymysql://u:s3cret@127.0.0.1:9/db"):
    store = Store(url)
    try:
        {call}
    except BackendUnavailable as exc:
        print(type(store.engine).__name__, "s3cret" in str(exc))
print("sqlalchemy" in sys.modules, "auditor.reports.html" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["DirectEngine False", "DirectEngine False", "False False"]
