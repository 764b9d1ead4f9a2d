"""OpenMetadata's derived fields by release, against the real servers (PostgreSQL 15 + OpenSearch 3).

A catalog written as an older release (1.9.0: no `classificationTags` / `glossaryTags`) and as
the newest (they split the tag FQNs by source, a Tier among the classification ones): a table
carrying a classification tag, a Tier and a glossary term, and a pipeline whose task is tagged.
Each scans clean at its release; a lost index write is found; a targeted repair writes
documents equal to the server's own field by field (classificationTags, glossaryTags, tier,
fqnParts, the column fields included); a document whose `classificationTags` lost a tag is found
as that field alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from om_world import World, om_world

from auditor.api import rebuild
from auditor.rebuild.request import RebuildRequest
from sandbox.openmetadata.docs import build_doc
from sandbox.openmetadata.entities import OmEntity, tag_label
from sandbox.openmetadata.faults import Fault
from sandbox.openmetadata.indices import refresh_all

pytestmark = pytest.mark.integration

ORDERLESS = ("tags", "classificationTags", "glossaryTags", "fqnParts")  # keyword arrays: order is no meaning


def _same(indexed: dict[str, Any], written: dict[str, Any]) -> list[str]:
    def norm(key: str, value: Any) -> Any:
        if key in ORDERLESS and isinstance(value, list):
            return sorted(str(v) for v in value)
        return value

    keys = set(indexed) | set(written)
    return sorted(k for k in keys if norm(k, indexed.get(k)) != norm(k, written.get(k)))


def _column_tags(columns: list[dict[str, Any]]) -> bool:
    return any(c.get("tags") or _column_tags(c.get("children") or []) for c in columns)


def _tagged(world: World) -> tuple[OmEntity, OmEntity]:
    s = world.server
    term = s.of_type("glossaryTerm")[0]
    table = next(
        t for t in s.of_type("table") if not t.json.get("tags") and not _column_tags(t.json["columns"])
    )
    tier = next(e for e in s.of_type("tag") if e.fqn.lower().startswith("tier."))
    other = next(e for e in s.of_type("tag") if not e.fqn.lower().startswith("tier."))
    labels = [tag_label(other.fqn), tag_label(tier.fqn), tag_label(term.fqn, source="Glossary")]
    s.update(table, tags=labels)
    pipeline = next(p for p in s.of_type("pipeline") if any(t.get("tags") for t in p.json["tasks"]))
    return table, pipeline


@pytest.mark.parametrize("release", ["1.9.0", None], ids=["1.9.0", "newest"])
def test_derived_fields_follow_the_release(release: str | None, tmp_path: Path) -> None:
    with om_world(
        "postgres", "opensearch3", tmp_path, n=60, reindex_tables=release is None, release=release
    ) as w:
        s = w.server
        table, pipeline = _tagged(w)
        refresh_all(w.search, w.alias)
        written = w.doc(table)
        if release is None:
            assert set(written["glossaryTags"]) == {
                t["tagFQN"] for t in table.json["tags"] if t["source"] == "Glossary"
            }
            assert {
                t for t in written["classificationTags"] if t.lower().startswith("tier.")
            }  # a Tier among them
        else:
            assert "classificationTags" not in written and "glossaryTags" not in written
        clean = w.scan()
        assert clean.findings == [], [(c.finding.urn, c.finding.details) for c in clean.findings]
        # lost index writes: a tag change on the table, a description on the pipeline
        s.update(
            table,
            tags=[t for t in table.json["tags"] if t["source"] == "Classification"],
            fault=Fault.STALE_UPDATE,
        )
        s.update(pipeline, description="changed, not indexed", fault=Fault.STALE_UPDATE)
        refresh_all(w.search, w.alias)
        report = w.scan()
        found = {
            c.finding.urn: {d["field"] for d in c.finding.details.get("fields", [])} for c in report.findings
        }
        assert set(found) == {table.id, pipeline.id}, found
        assert "tags" in found[table.id]
        if release is None:
            assert "glossaryTags" in found[table.id]
        else:
            assert not found[table.id] & {"classificationTags", "glossaryTags"}
        done = rebuild(w.settings(), RebuildRequest("reindex", findings=report.findings, apply=True))
        assert done.exit_code == 0, done.failed
        refresh_all(w.search, w.alias)
        for e in (table, pipeline):
            indexed, repaired = build_doc(e, s.writer.lookup, release), w.doc(e)
            assert _same(indexed, repaired) == [], {
                k: (indexed.get(k), repaired.get(k)) for k in _same(indexed, repaired)
            }
            for key in (
                "classificationTags",
                "glossaryTags",
                "tier",
                "fqnParts",
                "columnNames",
                "columnDescriptionStatus",
                "tasks",
            ):
                assert (key in indexed) == (key in repaired), key
        assert w.scan().findings == []
        if release is None:  # a document whose classificationTags lost one: that field alone
            index = f"{w.alias}_table_search_index"
            w.search.upsert(index, table.id, {**w.doc(table), "classificationTags": []})
            refresh_all(w.search, w.alias)
            lost = w.scan()
            assert [c.finding.urn for c in lost.findings] == [table.id]
            assert {d["field"] for d in lost.findings[0].finding.details["fields"]} == {"classificationTags"}
