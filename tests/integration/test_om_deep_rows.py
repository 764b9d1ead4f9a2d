"""OpenMetadata rows nested deeper than a bulk JSON encoder goes (orjson stops at 254 levels, the
standard library at Python's recursion limit) but readable (orjson reads 1,024), repaired.

On PostgreSQL (MariaDB refuses such a row: OpenMetadata's generated columns use json_extract,
which stops at 32 levels) with OpenSearch 3 and with Elasticsearch 9: a table whose `extension`
(custom properties, free-form, copied into the document as OpenMetadata's buildSearchIndexDoc
copies it) nests 300 levels of objects, 300 or 998 levels of arrays (a document 1,000 deep:
Jackson's and Elasticsearch's limit), or 1,010 levels of arrays (past both), beside two tables
whose index writes were lost. A targeted repair (`auditor rebuild reindex --urn ... --apply`,
in a child process) and `--full` write what OpenMetadata would (the 300 and 998 levels of
arrays on Elasticsearch, which maps arrays without depth) and names every other one as failed
with the engine's reason: never a crash, never a partial document, the rest written, exit 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from om_world import World, full_rebuild, om_world
from sqlalchemy import text

from auditor.api import rebuild
from sandbox.openmetadata.entities import OmEntity, now_ms
from sandbox.openmetadata.faults import Fault
from sandbox.openmetadata.indices import refresh_all
from sandbox.openmetadata.store import dumps

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PAIRS = [("postgres", "opensearch3"), ("postgres", "elasticsearch")]
# name -> (levels, arrays rather than objects)
DEEP = {
    "objects300": (300, False),
    "arrays300": (300, True),
    "arrays998": (998, True),
    "arrays1010": (1010, True),
}
WRITTEN_ON = {"elasticsearch": {"arrays300", "arrays998"}, "opensearch3": set()}
REASONS = {
    ("elasticsearch", "objects300"): "Limit of mapping depth [20] has been exceeded",
    ("elasticsearch", "arrays1010"): "Document nesting depth (1001) exceeds the maximum allowed (1000",
    ("opensearch3", "objects300"): "exceeded the allowed limit of [20]",
    ("opensearch3", "arrays300"): "exceeded the allowed limit of [20]",
    ("opensearch3", "arrays998"): "exceeded the allowed limit of [20]",
    ("opensearch3", "arrays1010"): "exceeded the allowed limit of [20]",
}


@pytest.fixture(params=PAIRS, ids=lambda p: f"{p[0]}+{p[1]}")
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    with om_world(*request.param, tmp_path, prefix="om35d", n=40, seeded=7, visibility=0.5) as made:
        yield made


def _nested(levels: int, arrays: bool) -> str:
    """JSON text `levels` deep (built as text: no encoder recursion)."""
    if arrays:
        return "[" * levels + "]" * levels
    return '{"p":' * (levels - 1) + '{"leaf":"x"}' + "}" * (levels - 1)


def _deepen(w: World, entity: OmEntity, levels: int, arrays: bool) -> None:
    """The row as a server would write a change to it: its description and a custom property
    (`extension`) nested `levels` deep, version and updatedAt bumped; its index write lost."""
    stored = entity.stored_json()
    stored.update(description=f"deep {levels}", version=round(float(stored["version"]) + 0.1, 1),
                  updatedAt=now_ms())  # fmt: skip
    stored.pop("extension", None)
    body = dumps(stored)[:-1] + ',"extension":{"nested":' + _nested(levels, arrays) + "}}"
    with w.server.store.engine.begin() as conn:
        conn.execute(
            text("UPDATE table_entity SET json = CAST(:j AS jsonb) WHERE id = :i"),
            {"j": body, "i": entity.id},
        )


def _depth(value: Any) -> int:
    """How deep a decoded value nests (iteratively)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            todo.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def _setup(w: World) -> tuple[dict[str, OmEntity], list[OmEntity]]:
    tables = w.server.of_type("table")
    deep = {name: tables[n] for n, name in enumerate(DEEP)}
    for name, (levels, arrays) in DEEP.items():
        _deepen(w, deep[name], levels, arrays)
    plain = tables[len(DEEP) : len(DEEP) + 2]
    for entity in plain:
        w.server.update(entity, description=f"lost {uuid.uuid4().hex[:6]}", fault=Fault.STALE_UPDATE)
    return deep, plain


def _cli(w: World, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AUDITOR_STORE_URL": w.store_url, "AUDITOR_SEARCH_URL": w.search_url,
           "AUDITOR_PLATFORM": "openmetadata", "ELASTICSEARCH_CLUSTER_ALIAS": w.alias,
           "AUDITOR_STATE_FILE": str(w.state), "AUDITOR_INDEX_VISIBILITY_SECONDS": "0.5"}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "auditor.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )


def _engine(w: World) -> str:
    return "elasticsearch" if w.search.flavor == "elasticsearch" else "opensearch3"


def _doc(w: World, entity: OmEntity) -> dict[str, Any] | None:
    """Its document, fetched raw and decoded by orjson (1,024 levels; a client's decoder may
    recurse past Python's limit on a document 1,000 deep)."""
    url = f"{w.search_url}/{w.alias}_table_search_index/_doc/{entity.id}"
    try:
        with urllib.request.urlopen(url, timeout=30) as got:
            body = orjson.loads(got.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise
    return body.get("_source") if body.get("found") else None


def _check_written(w: World, deep: dict[str, OmEntity], plain: list[OmEntity], engine: str) -> None:
    """What OpenMetadata would write is written whole; the rest is as it was."""
    refresh_all(w.search, w.alias)
    for entity in plain:
        assert w.doc(entity)["description"] == w.server.row(entity)["description"]  # type: ignore[index]
    for name, entity in deep.items():
        doc = _doc(w, entity)
        assert doc is not None  # its old document: a refused write leaves it, never a part of the new
        if name in WRITTEN_ON[engine]:
            levels, _ = DEEP[name]
            assert doc["description"] == f"deep {levels}" and _depth(doc["extension"]) == levels + 1, name
        else:
            assert doc.get("description") != f"deep {DEEP[name][0]}" and "extension" not in doc, name


def test_a_targeted_repair_writes_what_openmetadata_would_and_names_what_the_engine_refuses(
    world: World,
) -> None:
    engine, (deep, plain) = _engine(world), _setup(world)
    ids = [e.id for e in (*deep.values(), *plain)]
    scan = world.scan()
    assert {c.finding.urn for c in scan.findings} == set(ids), [c.finding.details for c in scan.findings]
    urns = [x for i in ids for x in ("--urn", i)]
    done = _cli(world, "rebuild", "reindex", "-t", "table", *urns, "--apply")
    out = done.stdout + done.stderr
    assert "Traceback" not in out and done.returncode == 1, out
    refused = set(DEEP) - WRITTEN_ON[engine]
    for name in refused:  # each named, with the engine's reason, once
        line = next((x for x in out.splitlines() if deep[name].id in x and "400" in x), None)
        assert line is not None and REASONS[(engine, name)] in line, (name, out)
    for name in WRITTEN_ON[engine] | {"plain"}:
        ids_written = [e.id for e in plain] if name == "plain" else [deep[name].id]
        assert not any(i in x and "400" in x for i in ids_written for x in out.splitlines()), (name, out)
    _check_written(world, deep, plain, engine)
    after = world.scan()
    assert {c.finding.urn for c in after.findings} == {deep[n].id for n in refused}


def test_full_writes_every_other_document_and_names_what_the_engine_refuses(world: World) -> None:
    engine, (deep, plain) = _engine(world), _setup(world)
    full = rebuild(
        world.settings(),
        full_rebuild("table"),
    )
    refused = set(DEEP) - WRITTEN_ON[engine]
    assert set(full.failed) == {deep[n].id for n in refused} and full.exit_code == 1, full.why
    for name in refused:
        assert REASONS[(engine, name)] in full.why[deep[name].id], full.why
    refresh_all(world.search, world.alias)
    for entity in plain:
        assert world.doc(entity)["description"] == world.server.row(entity)["description"]  # type: ignore[index]
    for name in WRITTEN_ON[engine]:
        doc = _doc(world, deep[name])
        assert doc is not None and _depth(doc["extension"]) == DEEP[name][0] + 1
    for name in refused:  # not in the fresh index, as in OpenMetadata's own (its SINK failure)
        assert _doc(world, deep[name]) is None
    assert any("refused" in note for note in full.notes), full.notes
    after = world.scan()
    assert {c.finding.urn for c in after.findings} == {deep[n].id for n in refused}
    assert {c.finding.kind.value for c in after.findings} <= {"missing_document"}
