"""A reader process's start: the CPU of a child that starts, opens its client and reads nothing.

    python bench/reader_start_bench.py --runs 5

The child is the scan's own (`python -m auditor.backends.search_readers`, auditor/backends/
search_readers.py), given the client's description of each engine (`SearchIndex.spec()`) and a
job that sends nothing: what is measured is the interpreter, the imports and the client, as every
reader pays them once (issue 53: the lean client, auditor/backends/search_lean.py). Its CPU (user
+ system, from its own resource usage) best of `--runs`, each engine; then the full clients'
packages it imported. A tree that predates the lean client is measured the same way (SRC_TREE).
Not a timed test: figures on stdout, one JSON line last.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ENGINES = {"opensearch": 19200, "elasticsearch": 19201, "opensearch3": 19202}


# the job: a builtin that takes two arguments and does nothing with them (the child then sends its
# "end"); a class of this script would make the child import the script too
NOTHING = slice


def child_cpu(spec: dict[str, Any]) -> tuple[float, tuple[str, ...] | None]:
    """One reader process's CPU seconds, and the full clients' packages it reports (None: a tree
    whose "end" says nothing of them)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "auditor.backends.search_readers"],
        cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    pickle.dump((spec, NOTHING), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
    proc.stdin.close()
    end = pickle.load(proc.stdout)  # noqa: S301 (our own child)
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert end[0] == "end", end
    return usage.ru_utime + usage.ru_stime, (end[3] if len(end) > 3 else None)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from auditor.backends.search import SearchIndex

    out: dict[str, Any] = {"tree": str(ROOT)}
    for name, port in ENGINES.items():
        spec = SearchIndex(f"http://127.0.0.1:{port}").spec()
        runs = [child_cpu(spec) for _ in range(args.runs)]
        cpu = sorted(round(c, 3) for c, _ in runs)
        out[name] = {"best_cpu_s": cpu[0], "cpu_s": cpu, "client_imports": runs[0][1]}
        print(f"{name}: best {cpu[0]:.3f} s of {args.runs} ({', '.join(f'{c:.3f}' for c in cpu)}); "
              f"full client packages imported: {runs[0][1]}")  # fmt: skip
    load = os.getloadavg()
    out["load"] = [round(x, 2) for x in load]
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
