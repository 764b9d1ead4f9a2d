"""The readers of a scan's every-finding JSON Lines (`auditor scan --findings-out`): each in a
fresh process, its wall time and peak RSS (wait4's), the load average at its start.

    python bench/big_report.py --findings 13000000 -o /tmp/big.jsonl.gz
    python bench/report_readers.py /tmp/big.jsonl.gz

The repair's plan reads the stack's PostgreSQL and OpenSearch (nothing written: a dry run); the
report's prefix has no index there, so the rows it counts are none and the plan is the report's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox.endpoints import Endpoints  # noqa: E402

CONSOLE = """
import sys
from pathlib import Path
from auditor.reports.html import render
from auditor.serve.reports_dir import ReportsFolder
entry = ReportsFolder(Path(sys.argv[1]).parent).get(Path(sys.argv[1]).name)
assert entry is not None and entry.report is not None, entry and entry.error
print(len(render(entry.report)), "bytes of page")
"""


def readers(path: Path) -> dict[str, list[str]]:
    cli = [sys.executable, "-m", "auditor.cli"]
    return {
        "report render -f json": [*cli, "report", "render", str(path), "-f", "json", "-o", os.devnull],
        "report render -f html": [*cli, "report", "render", str(path), "-f", "html", "-o", os.devnull],
        "console (its reports folder, the page)": [sys.executable, "-c", CONSOLE, str(path)],
        "rebuild plan --from-report": [*cli, "rebuild", "plan", "--from-report", str(path)],
        "rebuild plan --from-report --include in_flight,diverged,invalid": [
            *cli,
            "rebuild",
            "plan",
            "--from-report",
            str(path),
            "--include",
            "in_flight,diverged,invalid",
        ],
    }


def measure(command: list[str], env: dict[str, str]) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS in MiB, exit code and the output's last line."""
    load = os.getloadavg()[0]
    began = time.monotonic()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        took = time.monotonic() - began
        out.seek(0)
        last = out.read().decode(errors="replace").strip().splitlines()[-1:] or [""]
    print(f"    load at start {load:.1f}", file=sys.stderr)
    return took, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), last[0][:200]


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("report", type=Path)
    parser.add_argument("--only", action="append", help="readers whose name contains this")
    args = parser.parse_args()
    e = Endpoints.from_env()
    env = {
        **os.environ,
        "AUDITOR_STORE_URL": e.store_url("postgres"),
        "AUDITOR_SEARCH_URL": e.search_url("opensearch"),
        "AUDITOR_INDEX_PREFIX": "big",
        "AUDITOR_STATE_FILE": str(Path(tempfile.mkdtemp()) / "state.json"),
    }
    for name, command in readers(args.report).items():
        if args.only and not any(o in name for o in args.only):
            continue
        took, rss, code, last = measure(command, env)
        print(f"| `{name}` | {took:.1f} s | {rss:,.0f} MiB | exit {code} | {last}", flush=True)


if __name__ == "__main__":
    main()
