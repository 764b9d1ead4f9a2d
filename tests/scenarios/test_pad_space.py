"""End to end on MariaDB (PAD SPACE): urns that sort otherwise there than in the index ('x\\t'
before 'x') or end in a space are paired with their own documents by the scan's merge-join; a
hard-deleted one is the only orphan, its neighbours stay consistent."""

from __future__ import annotations

from pathlib import Path

import pytest
from world import World

pytestmark = pytest.mark.integration

ODD = ["odd", "odd\t", "odd \x01", "odd!", "odd\x1f", "odd ", "odder"]


def test_the_join_pairs_each_urn_with_its_own_document(tmp_path: Path) -> None:
    world = World("mariadb", "opensearch", tmp_path, n=20)
    try:
        urns = [f"urn:li:tag:{world.prefix}-{name}" for name in ODD if name != "odd "]
        urns.append(f"urn:li:tag:{world.prefix}-lone ")  # a trailing space, no neighbour without it
        for urn in urns:
            world.writer.write(urn, "tagKey", {"name": urn.split(":", 3)[3]})
            world.writer.write(urn, "tagProperties", {"name": urn.split(":", 3)[3], "description": "odd"})
        assert world.consumer.drain(60)
        clean = world.scan()
        gone = urns[1]  # 'odd\t': sorts before 'odd' under PAD SPACE
        assert world.writer.hard_delete_rows(gone) > 0
        after = world.scan()
    finally:
        world.close()
    assert clean.entities["tag"] >= len(urns)
    assert [c.finding.urn for c in clean.findings] == [], [str(c) for c in clean.findings][:5]
    assert clean.exit_code == 0
    assert {c.finding.urn for c in after.findings} == {gone}, [str(c) for c in after.findings][:5]
    assert {c.finding.kind.value for c in after.findings} >= {"orphan_document"}
