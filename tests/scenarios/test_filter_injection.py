"""`--urn-like` is a bound SQL parameter and an escaped wildcard query: the database and the
index select the same urns for every LIKE pattern (`%`, `_`, `\\` escapes), and SQL or query-DSL
text in it selects nothing and breaks nothing. PostgreSQL + Elasticsearch, MariaDB + OpenSearch."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text
from world import World

from auditor.core.model import Selection
from auditor.platforms.datahub.naming import entity_index
from sandbox.naming import ASPECT_TABLE

pytestmark = pytest.mark.integration

NAMES = ["p%q", "p_q", "pxq", "p\\q", "p'q", "p*q", 'p"q', "p?q", "pxxq"]


@pytest.mark.parametrize("pair", ["postgres/elasticsearch", "mariadb/opensearch"])
def test_both_sides_select_the_same_urns_and_injection_selects_nothing(pair: str, tmp_path: Path) -> None:
    world = World(*pair.split("/"), tmp_path, n=12)
    try:
        base = f"urn:li:tag:{world.prefix}-"
        for name in NAMES:
            world.writer.write(base + name, "tagKey", {"name": world.prefix + "-" + name})
        assert world.consumer.drain(60)
        index = entity_index("tag", world.prefix)
        expected = {  # pattern (after the prefix) -> names it selects, as SQL LIKE defines it
            "p\\%q": {"p%q"},
            "p\\_q": {"p_q"},
            "p_q": {n for n in NAMES if len(n) == 3},
            "p%q": set(NAMES),
            "p*q": {"p*q"},
            "p?q": {"p?q"},
            "p\\\\q": {"p\\q"},
            "p'q": {"p'q"},
            'p"q': {'p"q'},
            "p' OR '1'='1": set(),
            "p%' OR urn LIKE '%": set(),
            "x'; DELETE FROM " + ASPECT_TABLE + "; --": set(),
            'p"}}]}, {"match_all": {}}, {"term": {"urn": "x': set(),
        }
        seen = {}
        for pattern in expected:
            report = world.scan(selection=Selection(urn_like=base + pattern), sample_window=0.5)
            seen[pattern] = (report.entities.get("tag", 0), report.documents.get(index, 0), report)
        with world.engine.connect() as conn:
            count = text(f"SELECT COUNT(*) FROM {ASPECT_TABLE} WHERE urn LIKE :p")
            left = conn.execute(count, {"p": base + "%"}).scalar()
    finally:
        world.close()
    for pattern, names in expected.items():
        entities, docs, report = seen[pattern]
        assert (entities, docs) == (len(names), len(names)), (pattern, entities, docs, report.warnings)
        assert report.findings == [] and report.complete, (pattern, [str(c) for c in report.findings][:3])
    assert left >= len(NAMES)  # nothing was deleted
