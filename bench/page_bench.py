"""Page sizes and slices, measured: how the scan's largest index streams read at each page size,
and whether a stream read as N slices at once (a process each) is read sooner than as one.

    python bench/page_bench.py --search elasticsearch     # after bench/scan_bench.py seeded the catalog

- pages: the system-metadata docs (every `_source`, sorted by urn and aspect) and the edges (the
  sort values alone, as the scan reads them), each read whole through the scan's own stream
  (`SearchIndex.stream`: point in time + search_after) at each page size, each read in a fresh
  process; the sizes are taken in one order in the first round and in the reverse order in the
  next, so that a drift of the machine's load weighs on every size alike;
- slices: the system-metadata docs read by the plain HTTP reader (bench/plain_reader.py) as N
  slices of one point in time, N processes started together on a barrier, each slice in the
  scan's sort order (what a k-way merge would then put in one order); a group's time is its
  slowest process's, against N = 1 in the same round.

Every figure of every round is printed, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench.scan_bench import GRAPH_INDEX, PREFIX, SYSMETA_INDEX, TABLE  # noqa: E402
from sandbox.endpoints import Endpoints  # noqa: E402

STREAMS = {
    "sysmeta": (SYSMETA_INDEX, ["urn", "aspect"], False),
    "edges": (GRAPH_INDEX, ["source.urn", "relationshipType", "destination.urn"], True),
}


def cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return round(own.ru_utime + own.ru_stime, 2)


def measure_page(search: str, stream: str, page: int) -> dict[str, Any]:
    """One stream read whole at one page size, through the scan's own client."""
    from auditor.backends.connect import open_search
    from auditor.backends.lean import collector_on
    from auditor.settings import load_settings

    collector_on()
    endpoints = Endpoints.from_env()
    settings = load_settings(
        env={},
        store_url=endpoints.store_url("postgres"),
        search_url=endpoints.search_url(search),
        index_prefix=PREFIX,
        store_table=TABLE,
    )
    client = open_search(settings)
    index, sort, from_sort = STREAMS[stream]
    started = time.monotonic()
    count = sum(1 for _ in client.stream(index, sort, page=page, from_sort=from_sort))
    return {"seconds": time.monotonic() - started, "count": count, "cpu_seconds": cpu()}


def measure_slice(search: str, i: int, n: int, go: float) -> dict[str, Any]:
    """Slice i of n of the system-metadata docs, by the plain reader, from the instant `go`."""
    from plain_reader import PlainReader

    kind = "opensearch" if "opensearch" in search else "elasticsearch"
    reader = PlainReader(Endpoints.from_env().search_url(search), kind)
    time.sleep(max(0.0, go - time.time()))  # the barrier: every slice starts together
    started = time.monotonic()
    index, sort, _ = STREAMS["sysmeta"]
    count = reader.read(index, sort, slice_=(i, n) if n > 1 else None)
    return {"seconds": time.monotonic() - started, "count": count, "cpu_seconds": cpu()}


def child(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)


def result_of(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"a measuring process failed with exit {proc.returncode}")
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--search", default="elasticsearch", choices=("opensearch", "elasticsearch"))
    parser.add_argument("--pages", default="500,1000,2000,5000,10000", help="page sizes, comma separated")
    parser.add_argument("--slices", default="1,2,4", help="slice counts, comma separated")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:  # a measuring child: "page:STREAM:SIZE" or "slice:I:N:GO"
        what, *rest = args.measure.split(":")
        if what == "page":
            print(json.dumps(measure_page(args.search, rest[0], int(rest[1]))))
        else:
            print(json.dumps(measure_slice(args.search, int(rest[0]), int(rest[1]), float(rest[2]))))
        return 0
    pages = [int(p) for p in args.pages.split(",") if p]
    slices = [int(n) for n in args.slices.split(",") if n]
    results: dict[str, list[Any]] = {}
    for r in range(args.rounds):
        order = pages if r % 2 == 0 else pages[::-1]
        for stream in STREAMS:
            for page in order:
                got = result_of(child(["--search", args.search, "--measure", f"page:{stream}:{page}"]))
                got["docs_per_s"] = round(got["count"] / got["seconds"])
                results.setdefault(f"{stream}_page{page}", []).append(got)
                print(f"round {r + 1} {stream} page {page}: {json.dumps(got)}", file=sys.stderr, flush=True)
        for n in slices if r % 2 == 0 else slices[::-1]:
            go = time.time() + 3.0  # every process imported and connected by then
            procs = [child(["--search", args.search, "--measure", f"slice:{i}:{n}:{go}"]) for i in range(n)]
            parts = [result_of(p) for p in procs]
            times = [p["seconds"] for p in parts]
            got = {
                "seconds": max(times),
                "count": sum(p["count"] for p in parts),
                "cpu_seconds": round(sum(p["cpu_seconds"] for p in parts), 2),
                "slowest_to_fastest": round(max(times) / min(times), 2),
            }
            got["docs_per_s"] = round(got["count"] / got["seconds"])
            results.setdefault(f"sysmeta_slices{n}", []).append(got)
            print(f"round {r + 1} sysmeta {n} slices: {json.dumps(got)}", file=sys.stderr, flush=True)
    summary = {key: [round(m["seconds"], 2) for m in runs] for key, runs in results.items()}
    for key, value in summary.items():
        print(f"{key:24} {value}")
    print(json.dumps({"search": args.search, "seconds": summary, "runs": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
