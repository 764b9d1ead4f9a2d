"""An OpenMetadata-shaped world for an integration test: a scratch database with OpenMetadata's
tables, indices under a cluster alias of its own, the sandbox's server-like writer seeded, and
the auditor's settings for it. Everything it made is dropped when the block ends."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from auditor.api import ScanOptions, scan
from auditor.core.model import Report, Selection
from auditor.rebuild.request import RebuildRequest
from auditor.settings import Settings, load_settings
from sandbox.endpoints import Endpoints
from sandbox.openmetadata.databases import scratch_database
from sandbox.openmetadata.ddl import create_schema
from sandbox.openmetadata.entities import OmEntity
from sandbox.openmetadata.generator import seed
from sandbox.openmetadata.indices import create_indices, drop_cluster_alias, refresh_all
from sandbox.openmetadata.server import OmServer
from sandbox.search import SearchStore, connect


class World:
    def __init__(
        self, server: OmServer, search: SearchStore, alias: str, store: str, url: str, state: Path,
        visibility: float = 1.5,
    ) -> None:  # fmt: skip
        self.server, self.search, self.alias = server, search, alias
        self.store_url, self.search_url, self.state = store, url, state
        self.visibility = visibility

    def settings(self) -> Settings:
        return load_settings(
            env={},
            store_url=self.store_url,
            search_url=self.search_url,
            platform="openmetadata",
            cluster_alias=self.alias,
            state_file=str(self.state),
            index_visibility_seconds=self.visibility,
        )

    def scan(self) -> Report:
        return scan(self.settings(), options=ScanOptions(grace=0.0, use_state=False))

    def doc(self, entity: OmEntity) -> dict[str, Any]:
        found = self.server.doc(entity)
        assert found is not None, entity.fqn
        return found


@contextmanager
def om_world(
    store: str, search_name: str, tmp_path: Path, *, prefix: str = "om28", n: int = 150, seeded: int = 11,
    reindex_tables: bool = True, visibility: float = 1.5, release: str | None = None,
) -> Iterator[World]:  # fmt: skip
    """`reindex_tables=False`: an OpenMetadata before 1.12 (no search_index_job, no failures);
    `release`: an older OpenMetadata (its migrations and the documents it writes)."""
    endpoints = Endpoints.from_env()
    search = connect(search_name, endpoints)
    alias = f"omd{uuid.uuid4().hex[:8]}"
    with scratch_database(store, endpoints, prefix=prefix) as engine:
        create_schema(engine, reindex_tables=reindex_tables, release=release)
        create_indices(search, alias)
        try:
            server = OmServer(engine, search, alias)
            server.writer.release = release
            seed(server, n, seed=seeded)
            refresh_all(search, alias)
            url = make_url(engine.url).render_as_string(hide_password=False)
            state = tmp_path / "state"
            yield World(server, search, alias, url, endpoints.search_url(search_name), state, visibility)
        finally:
            drop_cluster_alias(search, alias)


def full_rebuild(*entity_types: str, **more: Any) -> RebuildRequest:
    """An applied `rebuild reindex --full` of these types; the worlds' indices are concrete, as a
    fresh install creates them, so it replaces them (`--replace-concrete-index`)."""
    return RebuildRequest(
        "reindex",
        selection=Selection(entity_types=entity_types),
        apply=True,
        full=True,
        replace_concrete=True,
        **more,
    )
