"""The conformance suite (tests/conformance/suite.py) on the real platforms against the real
stack: DataHub on PostgreSQL + OpenSearch (its consumer indexing from Kafka) and OpenMetadata
on PostgreSQL + OpenSearch 3 (its server-like writer). Each breaks three entities the way its
own servers lose writes."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from suite import Broken, run_suite

from auditor.settings import Settings

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS / "scenarios"), str(TESTS / "integration")]
import faults as datahub_faults  # noqa: E402
from test_om_profile import World as OmWorld  # noqa: E402
from test_om_profile import om_world  # noqa: E402
from world import World  # noqa: E402

from sandbox.openmetadata.faults import Fault  # noqa: E402

pytestmark = pytest.mark.integration


class DataHubDeployment:
    platform = "datahub"
    knobs = {"settle": 0.5, "sample_window": 2.0}  # noqa: RUF012 (read only)

    def __init__(self, world: World) -> None:
        self.world = world

    def settings(self) -> Settings:
        return self.world.settings()

    def break_three(self) -> Broken:
        w = self.world
        (missing,) = datahub_faults.skip_index_write_new_entity(w)  # consumed, never indexed
        (stale,) = datahub_faults.stale_field(w)  # a field changed behind DataHub's back
        (orphan,) = datahub_faults.hard_delete(w, which=2)  # rows deleted in SQL: no MCL
        healthy = w.of_type("dataset")[-1].urn
        time.sleep(1.2)  # older than --settle: nothing is on its way any more
        return Broken(missing=missing, stale=stale, orphan=orphan, healthy=healthy)

    def settle(self) -> None:
        assert self.world.consumer.drain(60)
        self.world.refresh()


class OpenMetadataDeployment:
    platform = "openmetadata"
    knobs: dict[str, float] = {}  # noqa: RUF012 (read only)

    def __init__(self, world: OmWorld) -> None:
        self.world = world

    def settings(self) -> Settings:
        return self.world.settings()

    def break_three(self) -> Broken:
        tables = self.world.catalog.of_type("table")
        s = self.world.server
        missing = s.create(
            "table", "never_indexed", s.entities[tables[4].parent_id], fault=Fault.SEARCH_WRITE_FAILS
        )
        s.update(tables[0], description="written since", fault=Fault.STALE_UPDATE)
        s.hard_delete(tables[3], fault=Fault.ORPHAN_DOC)
        return Broken(missing=missing.id, stale=tables[0].id, orphan=tables[3].id, healthy=tables[6].id)

    def settle(self) -> None:
        self.world.refresh()


@pytest.fixture
def datahub(tmp_path: Path) -> Iterator[DataHubDeployment]:
    world = World("postgres", "opensearch", tmp_path, n=40, own_topics=True)
    try:
        yield DataHubDeployment(world)
    finally:
        world.close()


@pytest.fixture
def openmetadata(tmp_path: Path) -> Iterator[OpenMetadataDeployment]:
    with om_world("postgres", "opensearch3", tmp_path, n=40) as world:
        yield OpenMetadataDeployment(world)


def test_datahub_conforms(datahub: DataHubDeployment) -> None:
    run_suite(datahub)


def test_openmetadata_conforms(openmetadata: OpenMetadataDeployment) -> None:
    run_suite(openmetadata)
