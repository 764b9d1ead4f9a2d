"""Refactor check: a fixed scenario's JSON report, the same before and after a code change but for times.

Same apart from times and versions, that is: build the scenario and scan it with each checkout,
then compare the two reports.

    report_diff.py om-scenario --out A.json [--seed 7] [-n 200] [--python P] [--root DIR]
    report_diff.py compare A.json B.json

`om-scenario` builds a fixed OpenMetadata world on the sandbox's PostgreSQL + OpenSearch 3
(a scratch database `om_report_diff` and the cluster alias `omreportdiff`, both dropped and made
again on each run, and dropped after it unless `--keep`), seeded by the sandbox's generator, then
breaks it deterministically:

  stale      a table's description update whose index write is lost (Fault.STALE_UPDATE),
             dated long ago                                          -> diverged, stale_fields
  missing    a new table whose index write fails (SEARCH_WRITE_FAILS), dated long ago
                                                                     -> diverged, missing_document
  soft       a soft delete that never reaches the index (SOFT_DELETE_NOT_PROPAGATED), long ago
                                                                     -> diverged, soft_delete_mismatch
  orphan     a hard delete that leaves the document (ORPHAN_DOC)    -> in_flight (no change time,
                                                                        first seen: unconfirmed)
  queued     an update whose index write failed and was queued in search_index_retry_queue,
             long ago                                                -> in_flight (pending work)
  recent     a description update whose index write is lost, made just now, scanned with a
             grace of an hour                                        -> in_flight (within the grace)

"Long ago" is a fixed instant (the sandbox's clock is pinned while those writes are made), so
those rows and their verdicts do not depend on when the script runs. Then it runs
`auditor scan --platform openmetadata --grace 3600 -f json -o OUT` as a child process, with a
fresh state file in a temporary folder, and keeps the report (exit 1, divergence found, is the
expected outcome). The world is built with this checkout's sandbox; the scan runs the code of
`--root` (default: this checkout) under `--python`, so two checkouts can be compared. Run it with
the venv's interpreter (the sandbox needs its packages); one run at a time (the names are fixed).

`compare` loads two reports, replaces what legitimately differs between two runs (every ISO
time, epoch instants of the run's own clock, durations, ages and ETAs in numbers and in prose,
`reobserved.seconds`, tool and server versions, the trend's earlier entries, temporary paths)
by placeholders, and prints a unified diff of the normalised, key-sorted JSON: exit 0 when they
are the same, 1 when not, 2 when a report cannot be read.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATABASE = "om_report_diff"
ALIAS = "omreportdiff"
STORE, SEARCH = "postgres", "opensearch3"
GRACE = 3600.0  # the recent change is seconds old: well inside it; the old ones are months past it
# the instant the "long ago" writes are dated: 2025-01-02T00:00:00Z (the seed's rows are 2025-01-01)
LONG_AGO_MS = 1_735_776_000_000
SCAN_TIMEOUT = 900

# Runs `auditor.cli` of the checkout in the working directory. PYTHONPATH alone does not do it:
# the venv's editable install maps auditor.checks, auditor.reports and auditor.rebuild to its own
# checkout's folders (pyproject's [tool.setuptools.package-dir]) through a finder that would
# answer for them, so those are mapped here to this checkout's folders first.
BOOTSTRAP = """\
import importlib.abc, importlib.util, pathlib, runpy, sys, tomllib
root = pathlib.Path.cwd().resolve()
try:
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
except FileNotFoundError:
    pyproject = {}
setuptools = pyproject.get("tool", {}).get("setuptools", {})
folders = {name: folder for name, folder in setuptools.get("package-dir", {}).items() if name}
class Folders(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name not in folders:
            return None
        where = root / folders[name]
        return importlib.util.spec_from_file_location(
            name, where / "__init__.py", submodule_search_locations=[str(where)])
sys.meta_path.insert(0, Folders())
import auditor
if not pathlib.Path(auditor.__file__).resolve().is_relative_to(root):
    sys.exit(f"report_diff: auditor imported from {auditor.__file__}, not from {root}")
sys.argv[0] = "auditor"
runpy.run_module("auditor.cli", run_name="__main__", alter_sys=True)
"""


def _log(message: str) -> None:
    print(f"report_diff: {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ om-scenario


@contextmanager
def _clock(ms: int) -> Iterator[None]:
    """Pin the sandbox server's clock (updatedAt of updates and deletes) to `ms`."""
    from sandbox.openmetadata import server as server_module

    real = server_module.now_ms
    server_module.now_ms = lambda: ms
    try:
        yield
    finally:
        server_module.now_ms = real


def _drop_indices(search: Any) -> None:
    found = search.client.indices.get_alias(index=f"{ALIAS}_*")
    for index in found.body if hasattr(found, "body") else found:
        search.client.indices.delete(index=index)


def _break(server: Any, catalog: Any) -> dict[str, str]:
    """The drifts, each on a fixed entity; returns drift -> the entity id it hit."""
    from sandbox.openmetadata.faults import Fault

    # the failed index writes are the scenario's: not worth a warning each
    logging.getLogger("sandbox.openmetadata.server").setLevel(logging.ERROR)
    tables = catalog.of_type("table")
    if len(tables) < 6:
        raise SystemExit("report_diff: the catalog has fewer than 6 tables: give a larger -n")
    hit: dict[str, str] = {}
    with _clock(LONG_AGO_MS):
        server.update(tables[0], description="changed, never indexed", fault=Fault.STALE_UPDATE)
        hit["stale"] = tables[0].id
        schema = server.entities[tables[1].parent_id]
        missing = server.create(
            "table",
            "report_diff_never_indexed",
            schema,
            entity_id=str(uuid.uuid5(uuid.NAMESPACE_URL, "report_diff/never_indexed")),
            updated_at=LONG_AGO_MS,
            tableType="Regular",
            columns=[],
            fault=Fault.SEARCH_WRITE_FAILS,
        )
        hit["missing"] = missing.id
        server.soft_delete(tables[2], fault=Fault.SOFT_DELETE_NOT_PROPAGATED)
        hit["soft"] = tables[2].id
        server.hard_delete(tables[3], fault=Fault.ORPHAN_DOC)
        hit["orphan"] = tables[3].id
        server.update(tables[4], description="queued for a retry", fault=Fault.SEARCH_WRITE_FAILS_QUEUED)
        hit["queued"] = tables[4].id
    server.update(tables[5], description="changed just now", fault=Fault.STALE_UPDATE)
    hit["recent"] = tables[5].id
    return hit


def _child_env(root: Path) -> dict[str, str]:
    """The environment without the auditor's own settings (the flags say everything)."""
    drop = ("AUDITOR_", "ELASTICSEARCH_", "INDEX_PREFIX", "KAFKA_", "METADATA_CHANGE_LOG_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PYTHONPATH"] = str(root)
    env["AUDITOR_INDEX_VISIBILITY_SECONDS"] = "1.5"  # the sandbox's writes are refreshed at once
    return env


def run_scan(python: str, root: Path, out: Path, store_url: str, search_url: str, state: Path) -> int:
    """`auditor scan --platform openmetadata ... -f json -o out` of the checkout at `root`."""
    command = [
        python, "-c", BOOTSTRAP, "scan", "--platform", "openmetadata", "--cluster-alias", ALIAS,
        "--store-url", store_url, "--search-url", search_url, "--state-file", str(state),
        "--grace", f"{GRACE:g}", "-f", "json", "-o", str(out),
    ]  # fmt: skip
    _log(f"scan: auditor.cli of {root} under {python}: scan --platform openmetadata "
         f"--cluster-alias {ALIAS} --grace {GRACE:g} -f json -o {out}")  # fmt: skip
    done = subprocess.run(
        command, cwd=root, env=_child_env(root), capture_output=True, text=True, timeout=SCAN_TIMEOUT
    )
    if done.stderr.strip():
        sys.stderr.write(done.stderr)
    if done.returncode not in (0, 1) or not out.exists():
        raise SystemExit(f"report_diff: the scan failed (exit {done.returncode})")
    return done.returncode


def om_scenario(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(ROOT))  # the sandbox of this checkout builds the world
    from sqlalchemy.engine import make_url

    from sandbox.endpoints import Endpoints
    from sandbox.openmetadata.databases import create_database, drop_database
    from sandbox.openmetadata.ddl import create_schema
    from sandbox.openmetadata.generator import seed
    from sandbox.openmetadata.indices import create_indices, refresh_all
    from sandbox.openmetadata.server import OmServer
    from sandbox.search import connect

    out = Path(args.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    started = time.monotonic()
    endpoints = Endpoints.from_env()
    search = connect(SEARCH, endpoints)
    drop_database(STORE, DATABASE, endpoints)
    _drop_indices(search)
    engine = create_database(STORE, DATABASE, endpoints)
    try:
        create_schema(engine)
        create_indices(search, ALIAS)
        server = OmServer(engine, search, ALIAS)
        catalog = seed(server, args.n, seed=args.seed)
        refresh_all(search, ALIAS)
        hit = _break(server, catalog)
        refresh_all(search, ALIAS)
        built = time.monotonic()
        _log(f"world built in {built - started:.1f}s: {args.n} entities (seed {args.seed}), drifts {hit}")
        store_url = make_url(engine.url).render_as_string(hide_password=False)
        with tempfile.TemporaryDirectory(prefix="report_diff_") as tmp:
            state = Path(tmp) / "state-openmetadata.sqlite"
            code = run_scan(args.python, Path(args.root).resolve(), out, store_url,
                            endpoints.search_url(SEARCH), state)  # fmt: skip
        _log(f"scan exit {code} in {time.monotonic() - built:.1f}s; report {out}")
    finally:
        engine.dispose()
        if not args.keep:
            drop_database(STORE, DATABASE, endpoints)
            _drop_indices(search)
    report = json.loads(out.read_text())
    for line in verdict_counts(report):
        print(line)
    _log(f"om-scenario done in {time.monotonic() - started:.1f}s")
    return 0


def verdict_counts(report: dict[str, Any]) -> list[str]:
    """One line per (verdict, kind, subkind) of the findings, then the totals per verdict."""
    by: dict[tuple[str, str, str], int] = {}
    totals: dict[str, int] = {}
    for f in report.get("findings", []):
        key = (f["verdict"], f["kind"], f["subkind"])
        by[key] = by.get(key, 0) + 1
        totals[f["verdict"]] = totals.get(f["verdict"], 0) + 1
    lines = [f"{v:10} {k:22} {s:22} {n}" for (v, k, s), n in sorted(by.items())]
    lines.append("verdicts: " + ", ".join(f"{v}={n}" for v, n in sorted(totals.items())))
    lines.append(f"exit_code in report: {report.get('exit_code')}")
    return lines


# ------------------------------------------------------------------ compare


# an ISO date or time (a space for the T too, the fraction and the zone optional): the fraction is
# dropped whole, as datetime.isoformat() leaves it out when it is 0; the zone's form is kept
ISO = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?\b")
# a duration in prose: "12s", "3.4 s", "250 ms", "5 min", "2h 3m" (a run of them is one duration)
_UNIT = r"\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)\b"
DURATION = re.compile(rf"\b{_UNIT}(?:,?\s*{_UNIT})*")
# an index a rebuild names by its epoch ms (`<index>_rebuild_<epoch ms>`)
REBUILD_INDEX = re.compile(r"(_rebuild_)\d{10,}")
# a path under a temporary folder (the state file's, an output's)
TEMP_DIRS = sorted({"/tmp", "/var/tmp", tempfile.gettempdir()}, key=len, reverse=True)
TEMP = re.compile("(?:" + "|".join(map(re.escape, TEMP_DIRS)) + r")/[^\s'\",;)\]]*")
# numbers that measure time spent or left: durations, ages, ETAs
SECONDS_KEY = re.compile(r"(^|_)(seconds|age|eta)$|_seconds$|^age_")
# names of places holding an instant (epoch seconds or ms): updatedAt, first_seen_at, reindex_start_ms, at
INSTANT_NAME = re.compile(r"(At|_at|^at|[Tt]ime|[Tt]imestamp|_ms|Millis|lastUpdated)$")
# versions of the tool and of the servers (the report's schema and the platform release the data
# names are not: they are what the report means)
VERSION_KEY = re.compile(r"(^|_)version$")
KEEP_VERSION = frozenset({"schema_version", "platform_version"})
# identities: never rewritten, whatever they spell
IDENTITY_KEYS = frozenset({"key", "urn", "doc_id", "fqn", "index", "doc_index", "aspect", "entity_type"})
RECENT_DAYS = 7  # an epoch instant this close to the scan is the run's own clock, not the scenario's


def _started(report: dict[str, Any]) -> float | None:
    try:
        return datetime.fromisoformat(str(report.get("started_at"))).timestamp()
    except ValueError:
        return None


def _recent_instant(value: Any, started: float | None) -> bool:
    """An epoch instant (seconds or ms) within RECENT_DAYS of the scan's start."""
    if started is None or isinstance(value, bool) or not isinstance(value, int | float):
        return False
    seconds = value / 1000 if value > 10**11 else value
    return abs(seconds - started) < RECENT_DAYS * 86400


def _text(value: str) -> str:
    value = ISO.sub(lambda m: "<time>" + (m.group(1) or ""), value)
    value = REBUILD_INDEX.sub(r"\1<epoch-ms>", value)
    value = TEMP.sub("<tmp-path>", value)
    return DURATION.sub("<duration>", value)


def _walk(value: Any, key: str, started: float | None) -> Any:
    if isinstance(value, dict):
        out = {k: _walk(v, k, started) for k, v in value.items()}
        # a compared field that is an instant (details.fields: {field: updatedAt, expected, actual})
        # or DataHub's ({name: {expected, actual}}, the name the key)
        named = out.get("field") if isinstance(out.get("field"), str) else key
        if INSTANT_NAME.search(named):
            for side in ("expected", "actual"):
                if _recent_instant(out.get(side), started):
                    out[side] = "<epoch>"
        return out
    if isinstance(value, list):
        return [_walk(v, key, started) for v in value]
    if value is None or isinstance(value, bool):
        return value  # null against a number is structure, kept
    if VERSION_KEY.search(key) and key not in KEEP_VERSION:
        return "<version>"
    if isinstance(value, int | float):
        if SECONDS_KEY.search(key):
            return "<seconds>"
        if INSTANT_NAME.search(key) and _recent_instant(value, started):
            return "<epoch>"
        return value
    if isinstance(value, str) and key not in IDENTITY_KEYS:
        return _text(value)
    return value


def normalise(report: dict[str, Any]) -> dict[str, Any]:
    """The report without what differs between two runs of the same scenario: ISO times (every
    one), epoch instants of the run's own clock, durations, ages and ETAs (numbers, and in prose),
    tool and server versions, temporary paths, the trend's earlier scans (history; this scan's
    own line is kept). Verdicts, kinds, subkinds, counts, urns, fields and the reasons' words stay."""
    started = _started(report)
    trend = report.get("trend")
    if isinstance(trend, list) and trend:
        report["trend"] = trend[-1:]  # earlier entries are the state file's history
    return dict(_walk(report, "", started))


LIVE_NUMBERS = re.compile(r"\d+")


def settled(report: dict[str, Any]) -> dict[str, Any]:
    """What two runs of a live scenario (the demo: a backlog still being consumed) share: the
    findings that are not in flight, offsets and rates aside, the kinds of counts, the warnings'
    words, and the report's sections by name."""
    started = _started(report)
    findings = []
    for f in report.get("findings") or []:
        if f.get("verdict") == "in_flight":
            continue
        evidence = f.get("evidence") or {}
        findings.append({
            "urn": f.get("urn"), "check": f.get("check"), "verdict": f.get("verdict"),
            "subkind": f.get("subkind"), "details": _walk(f.get("details"), "details", started),
            "repairs": f.get("repairs"),
            "reason": LIVE_NUMBERS.sub("N", str(evidence.get("reason") or "")),
        })  # fmt: skip
    return {
        "keys": sorted(report),
        "findings": sorted(findings, key=lambda f: (str(f["urn"]), str(f["check"]))),
        "counts": sorted((c["entity_type"], c["verdict"], c["subkind"]) for c in report.get("counts") or []),
        "warnings": [LIVE_NUMBERS.sub("N", w) for w in report.get("warnings") or []],
        "sections": {k: sorted(v) for k, v in report.items() if isinstance(v, dict)},
    }


def compare(args: argparse.Namespace) -> int:
    texts = []
    for name in (args.a, args.b):
        try:
            report = json.loads(Path(name).read_text())
        except (OSError, ValueError) as exc:
            print(f"report_diff: cannot read {name}: {exc}", file=sys.stderr)
            return 2
        shown = settled(report) if args.live else normalise(copy.deepcopy(report))
        texts.append(json.dumps(shown, indent=2, sort_keys=True, default=str) + "\n")
    diff = list(
        difflib.unified_diff(
            texts[0].splitlines(keepends=True), texts[1].splitlines(keepends=True), args.a, args.b
        )
    )
    if not diff:
        print(f"same: {args.a} and {args.b} (normalised)")
        return 0
    sys.stdout.writelines(diff)
    return 1


# ------------------------------------------------------------------ command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    om = sub.add_parser("om-scenario", help="build the OpenMetadata scenario, scan it, write the JSON report")
    om.add_argument("--out", required=True, help="where the JSON report goes")
    om.add_argument("--seed", type=int, default=7, help="the generator's seed [7]")
    om.add_argument("-n", type=int, default=200, help="entities to seed [200]")
    om.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"),
                    help="the interpreter running the scan [this checkout's .venv]")  # fmt: skip
    om.add_argument("--root", default=str(ROOT), help="the checkout whose auditor scans [this one]")
    om.add_argument("--keep", action="store_true", help="keep the database and indices afterwards")
    cmp = sub.add_parser("compare", help="diff two JSON reports, times and versions aside")
    cmp.add_argument("a")
    cmp.add_argument("b")
    live = "a live scenario (the demo): compare what is not in flight, offsets and rates aside"
    cmp.add_argument("--live", action="store_true", help=live)
    args = parser.parse_args(argv)
    return om_scenario(args) if args.command == "om-scenario" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
