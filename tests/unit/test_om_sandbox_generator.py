"""The OM sandbox's generator is deterministic by seed and creates exactly n entities."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from sandbox.openmetadata.entities import OmEntity
from sandbox.openmetadata.generator import seed
from sandbox.openmetadata.server import OmServer


class RecordingServer(OmServer):
    """An OmServer whose create_many only records (generator logic only; no servers)."""

    def __init__(self) -> None:  # no engine, no search
        self.entities = {}
        self.created: list[OmEntity] = []

    def create_many(self, entities: Sequence[OmEntity], *, fault: object = None) -> None:
        for e in entities:
            self.entities[e.id] = e
            if e.parent_id in self.entities:
                self.entities[e.parent_id].children.append(e.id)
        self.created.extend(entities)


def test_same_seed_same_catalog_and_exactly_n() -> None:
    a, b, c = RecordingServer(), RecordingServer(), RecordingServer()
    seed(a, 250, seed=5)
    seed(b, 250, seed=5)
    seed(c, 250, seed=6)
    assert len(a.created) == 250
    assert [e.json for e in a.created] == [e.json for e in b.created]
    assert [e.id for e in a.created] != [e.id for e in c.created]
    kinds = {e.type for e in a.created}
    assert {
        "table",
        "databaseSchema",
        "database",
        "databaseService",
        "dashboard",
        "topic",
        "pipeline",
        "glossaryTerm",
        "user",
        "team",
        "tag",
    } <= kinds
    for e in a.created:  # every child follows its parent and names it in its FQN
        if e.parent_id:
            parent = a.entities[e.parent_id]
            assert a.created.index(parent) < a.created.index(e)
            assert e.fqn.startswith(parent.fqn + ".")


def test_too_small_a_catalog_is_refused() -> None:
    with pytest.raises(ValueError, match="at least"):
        seed(RecordingServer(), 5)
