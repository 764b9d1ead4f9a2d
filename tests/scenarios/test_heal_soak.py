"""The heal soak, short (bench/soak_bench.py is the long one, its figures in docs/benchmark.md):
live writes while the five faults are injected at random, the heal loop every few seconds; no
false heal, no page without a cause, every healable fault healed, the index equal to the truth
(a reference the sandbox's own indexer builds from the rows) at the end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from heal_soak import KINDS, Soak, SoakConfig
from world import World

pytestmark = pytest.mark.integration


def test_a_short_soak_heals_every_fault_and_nothing_else(tmp_path: Path) -> None:
    config = SoakConfig(seconds=8, min_faults=len(KINDS), rate=8, heal_every=3, fault_every=2,
                        pause_seconds=3, restore_size=2, quiet_timeout=40, seed=7)  # fmt: skip
    world = World("postgres", "opensearch", tmp_path, n=60, release="1.7.0")
    try:
        result = Soak(world, tmp_path, config).run()
    finally:
        world.consumer.reset_faults()
        world.close()
    said = result.summary()
    print(result.table())
    print(
        json.dumps(
            {"faults": [f.to_json() for f in result.faults], "heals": [h.to_json() for h in result.heals]}
        )
    )
    assert {f.kind for f in result.faults} == set(KINDS), said  # every kind injected
    assert result.writes > 0 and result.write_errors == 0 and said["heal_errors"] == [], said
    assert said["false_heals"] == [], said
    assert said["pages_without_cause"] == 0, [h.to_json() for h in result.pages]
    assert said["unhealed"] == [], [h.to_json() for h in result.heals]
    assert all(f.found is not None and f.found <= f.healed for f in result.expected_healed()), said
    assert said["final_exit_code"] == 0 and said["final_diverged"] == [], said
    assert said["truth_equal"], said["truth_differences"]
