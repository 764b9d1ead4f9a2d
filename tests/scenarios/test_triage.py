"""`auditor triage URN` against the real stack: each seeded state gets the right verdict,
boundary and repair command, run as on call (a fresh process per urn, JSON out)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from faults import _tags, drop_mcl, hard_delete, skip_index_write
from world import World

from auditor.platforms.datahub.urn_text import dataset_name

pytestmark = pytest.mark.integration


def triage(world: World, urn: str, *extra: str, kafka: bool = True) -> tuple[int, dict[str, Any]]:
    env = world.cli_env(KAFKA_BOOTSTRAP_SERVER="")
    if not kafka:
        env.update(AUDITOR_KAFKA_BOOTSTRAP="", AUDITOR_SCHEMA_REGISTRY_URL="")
    done = subprocess.run(
        [sys.executable, "-m", "auditor.cli", "triage", urn, "--format", "json", "--settle", "1", *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stderr == "", done.stderr  # nothing but the tool's own output
    return done.returncode, json.loads(done.stdout)


def boundary(out: dict[str, Any], name: str) -> dict[str, Any]:
    return next(b for b in out["boundaries"] if b["boundary"] == name)


def expect(
    out: dict[str, Any],
    code: int,
    got: int,
    verdict: str,
    subkind: str | None,
    first: str | None,
    status: str,
) -> None:
    summary = json.dumps({k: out[k] for k in ("verdict", "subkind", "first_break", "repair")}, indent=1)
    assert got == code, summary
    assert (out["verdict"], out["subkind"]) == (verdict, subkind), summary
    if first is None:
        assert out["first_break"] is None, summary
    else:
        assert out["first_break"] == {"boundary": first, "status": status}, summary


def leave_a_field_behind(world: World) -> str:
    entity = next(
        e
        for e in world.of_type("dataset")[6:]
        if (dict(e.aspects).get("datasetProperties") or {}).get("qualifiedName")
    )
    props = dict(dict(entity.aspects)["datasetProperties"])
    del props["qualifiedName"]  # DataHub's partial upsert keeps the old field in the doc
    world.writer.write(entity.urn, "datasetProperties", props)
    return entity.urn


@pytest.mark.parametrize("pair", ["postgres/elasticsearch", "mariadb/opensearch"])
def test_triage_names_the_boundary_verdict_and_repair_of_each_state(pair: str, tmp_path: Path) -> None:
    world = World(*pair.split("/"), tmp_path, n=60)
    try:
        datasets = [e.urn for e in world.of_type("dataset")]
        healthy = datasets[-1]
        (dropped,) = drop_mcl(world, which=1)
        (skipped,) = skip_index_write(world)  # datasets[0]
        (orphan,) = hard_delete(world, which=2)
        left = leave_a_field_behind(world)
        soft = datasets[5]
        world.consumer.skip_index_write({skipped, soft})
        world.writer.soft_delete(soft)
        assert world.consumer.drain(60)
        time.sleep(1.2)  # older than --settle: a missing MCL is not on its way any more

        code, out = triage(world, healthy)
        expect(out, 0, code, "consistent", None, None, "")
        assert boundary(out, "rows")["facts"]["present"] and boundary(out, "document")["facts"]["present"]
        published = boundary(out, "MCL published")
        assert published["status"] == "ok" and published["facts"]["offsets"], published
        assert boundary(out, "consumed")["detail"].endswith("every MCL above is consumed")

        code, out = triage(world, dropped)
        expect(out, 1, code, "diverged", "event_never_published", "MCL published", "broken")
        assert "globalTags" in boundary(out, "MCL published")["facts"]["missing"]
        assert out["repair"][0] == f"auditor rebuild replay --urn '{dropped}' --apply"

        code, out = triage(world, skipped)  # consumed, the index write skipped
        expect(out, 1, code, "diverged", "stale_fields", "document", "broken")
        problems = " ".join(boundary(out, "document")["problems"])
        assert "consumed but not applied" in problems and "skipped" in problems, problems
        assert out["repair"][0] == f"auditor rebuild replay --urn '{skipped}' --apply"

        code, out = triage(world, soft)  # soft-deleted, still searchable
        assert boundary(out, "rows")["facts"]["soft_deleted"] is True
        expect(out, 1, code, "diverged", "soft_delete_mismatch", "document", "broken")
        problems = " ".join(boundary(out, "document")["problems"])
        assert "still searchable" in problems, problems
        assert out["repair"][0] == f"auditor rebuild replay --urn '{soft}' --apply"

        code, out = triage(world, orphan)
        expect(out, 1, code, "diverged", "orphan_document", "document", "broken")
        assert boundary(out, "rows")["facts"]["present"] is False
        (problem,) = [p for p in boundary(out, "document")["problems"] if "orphan_document" in p]
        assert "the rows are gone; the document (and " in problem and "left behind" in problem, problem
        assert out["repair"][0] == f"auditor rebuild reindex --urn '{orphan}' --apply"

        code, out = triage(world, left)
        expect(out, 1, code, "diverged", "field_left_behind", "document", "broken")
        assert "qualifiedName" in " ".join(boundary(out, "document")["problems"])
        assert out["repair"][0] == f"auditor rebuild reindex --urn '{left}' --apply"

        # an unknown urn: the name in another case; the real one is offered
        name = dataset_name(healthy)
        assert name is not None and name != name.upper()
        wrong = healthy.replace(f",{name},", f",{name.upper()},")
        code, out = triage(world, wrong)
        assert code == 7 and out["verdict"] == "unknown", out
        assert healthy in [m["urn"] for m in out["near_matches"]], out["near_matches"]

        # the same healthy urn as pasted from a browser: URL-encoded, quoted, with spaces
        code, out = triage(world, f"  '{quote(healthy, safe='')}' ")
        assert code == 0 and out["urn"] == healthy and "URL-decoded" in out["read_as"], out

        # without Kafka: the boundaries that need it are said to be unchecked
        code, out = triage(world, healthy, kafka=False)
        assert code == 0 and boundary(out, "MCL published")["status"] == "unchecked", out
        assert any("MCL published" in u for u in out["unchecked"])

        # behind a stalled consumer (alive, polling, not committing; its last commits are older
        # than the broker's log the triage reads back, so nothing says it still moves)
        world.consumer.stall()
        time.sleep(0.5)
        stuck = datasets[4]
        world.writer.write(stuck, "globalTags", _tags("while-stalled"))
        code, out = triage(world, stuck)
        expect(out, 4, code, "stalled", "stalled", "consumed", "broken")
        assert boundary(out, "consumed")["facts"]["health"] == "stalled", boundary(out, "consumed")
        assert any("restart" in r.lower() for r in out["repair"]), out["repair"]
        world.consumer.resume()
        assert world.consumer.drain(60)

        # in flight behind a consumer that was paused and catches up slowly, committing every
        # 4 s (the triage's window is 1.5 s: the broker's log of the group's commits shows it
        # moving): an ETA, not "stalled"
        world.consumer.pause()
        behind = datasets[3]
        for j in range(120):  # 30 s of backlog at 4/s
            world.writer.write(behind, "globalTags", _tags(f"backlog-{j}"))
        world.consumer.rate(4.0, commit_every=4.0)
        commits = world.consumer.stats.commits
        world.consumer.resume()
        deadline = time.monotonic() + 30
        while world.consumer.stats.commits < commits + 2 and time.monotonic() < deadline:
            time.sleep(0.1)  # two commits: the log shows the value the last one moved from
        assert world.consumer.stats.commits >= commits + 2
        code, out = triage(world, behind)
        expect(out, 0, code, "in_flight", "in_flight", "consumed", "pending")
        (finding,) = [f for f in out["findings"] if f["verdict"] == "in_flight"][:1]
        assert finding["evidence"]["eta_seconds"], finding
        assert out["repair"] == []
        world.consumer.rate(None)
        assert world.consumer.drain(60)
    finally:
        world.close()


def test_a_malformed_urn_is_refused_before_any_backend_is_loaded() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "auditor.cli", "triage", "urn:li:dataset:(unbalanced"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "AUDITOR_STORE_URL": "", "AUDITOR_SEARCH_URL": ""},
    )
    imported = [
        line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "import time:" in line
    ]
    said = [line for line in done.stderr.splitlines() if "import time:" not in line]
    assert done.returncode == 2 and done.stdout == ""
    assert any("not a urn" in line and "mismatched paren" in line for line in said), said
    heavy = [
        m
        for m in imported
        if m.split(".")[0]
        in {"sqlalchemy", "confluent_kafka", "opensearchpy", "elasticsearch", "fastavro", "datahub"}
    ]
    assert imported and not heavy, heavy
