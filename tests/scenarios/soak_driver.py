"""The soak's scheduled scanner: one long-lived process scanning every SOAK_INTERVAL seconds for
SOAK_SECONDS, printing one JSON line per scan (verdicts, its own RSS, the state file's size).
Run by test_soak.py with the world's settings in AUDITOR_* variables."""

from __future__ import annotations

import gc
import json
import os
import sys
import time

import psutil

from auditor.api import ScanOptions, scan
from auditor.core.model import Selection, Verdict
from auditor.settings import load_settings


def main() -> int:
    seconds, interval = float(os.environ["SOAK_SECONDS"]), float(os.environ["SOAK_INTERVAL"])
    settings = load_settings(env=os.environ)
    options = ScanOptions(settle=2.0, sample_window=3.0)
    me = psutil.Process()
    started = time.monotonic()
    i = 0
    while time.monotonic() - started < seconds:
        began = time.monotonic()
        report = scan(settings, Selection(), options)
        gc.collect()
        line = {
            "i": i,
            "exit_code": report.exit_code,
            "complete": report.complete,
            "diverged": sorted({c.finding.urn for c in report.findings if c.verdict == Verdict.DIVERGED}),
            "in_flight": report.total(Verdict.IN_FLIGHT),
            "candidates": report.reobserved.get("candidates", 0),
            "entities": sum(report.entities.values()),
            "rss_mb": round(me.memory_info().rss / 2**20, 1),
            "state_bytes": os.path.getsize(settings.state_file),
            "seconds": round(time.monotonic() - began, 2),
        }
        print(json.dumps(line), flush=True)
        i += 1
        time.sleep(max(0.0, interval - (time.monotonic() - began)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
