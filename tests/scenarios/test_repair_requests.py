"""What a targeted DataHub repair asks the search cluster, against the real stack: its
verification reads the urn's own type's index, not every entity index (a request each, a round
trip each over a network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from faults import stale_field
from world import World

from auditor.api import rebuild
from auditor.backends.search import SearchIndex
from auditor.core.model import Selection
from auditor.rebuild.request import RebuildRequest
from sandbox.naming import entity_doc_id, entity_index

pytestmark = pytest.mark.integration


def test_a_targeted_reindex_verifies_in_the_urns_own_index_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = World("postgres", "opensearch", tmp_path, n=30)
    streamed: list[str] = []
    stream = SearchIndex.stream

    def counted(self: SearchIndex, index: str, *args: Any, **kwargs: Any) -> Any:
        streamed.append(index)
        return stream(self, index, *args, **kwargs)

    monkeypatch.setattr(SearchIndex, "stream", counted)
    try:
        (urn,) = stale_field(world)
        world.refresh()
        request = RebuildRequest("reindex", selection=Selection(urns=(urn,)), apply=True, state_dir=tmp_path)
        outcome = rebuild(world.settings(), request)
        assert outcome.applied and not outcome.failed and not outcome.still_wrong, outcome
        assert outcome.verified_urns == 1
        doc = world.search.get(entity_index("dataset", world.prefix), entity_doc_id(urn))
        assert doc is not None and doc.get("name") != "renamed behind DataHub's back"  # repaired
        entity_indices = {i for i in streamed if i.endswith("index_v2") and i.startswith(world.prefix)}
        assert entity_indices == {entity_index("dataset", world.prefix)}, sorted(set(streamed))
    finally:
        world.close()
