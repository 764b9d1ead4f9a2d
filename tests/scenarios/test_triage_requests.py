"""What a DataHub triage reads of its urn, against the real stack: its walk shows the rows and the
documents the scan's join (or the re-observation's last round) judged, and reads none of them
again after the verdict; each read of the urn's documents, system metadata and edges is one
`_msearch`; DataHub's upgrade rows are read once (the release and DataHub's own reindexes are
told from the same rows), the table's collation asked in one statement (a request each, a round
trip each over a network)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from faults import hard_delete
from world import World

from auditor.api import triage
from auditor.backends.dbapi import DirectConnection
from auditor.backends.search import SearchIndex
from auditor.platforms.datahub.backends.store import MetadataStore

pytestmark = pytest.mark.integration

# the module (the package exports its function under the same name)
walk_module = importlib.import_module("auditor.platforms.datahub.triage.walk")


class Reads:
    """The urn's row reads and documents' streams, each noted as during or after the scan."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, urn: str) -> None:
        self.urn, self.after_scan = urn, False
        self.rows: list[bool] = []  # per read of the urn's rows: was it after the scan?
        self.streams: list[tuple[str, bool]] = []  # (index, after the scan?)
        self.requests: list[str] = []  # the search requests, by the client's method
        self.statements: list[str] = []  # the store's statements
        stream_entities, stream, call = MetadataStore.stream_entities, SearchIndex.stream, SearchIndex._call
        execute = DirectConnection.execute
        scan = walk_module.scan_with_v3

        def rows(store: MetadataStore, *args: Any, **kwargs: Any) -> Any:
            urns = kwargs.get("urns", args[3] if len(args) > 3 else ())
            if urn in (urns or ()):
                self.rows.append(self.after_scan)
            return stream_entities(store, *args, **kwargs)

        def docs(search: SearchIndex, index: str, *args: Any, **kwargs: Any) -> Any:
            self.streams.append((index, self.after_scan))
            return stream(search, index, *args, **kwargs)

        def request(search: SearchIndex, fn: Any, *args: Any, **kwargs: Any) -> Any:
            self.requests.append(getattr(fn, "__name__", str(fn)))
            return call(search, fn, *args, **kwargs)

        def statement(conn: DirectConnection, sql: str, *args: Any, **kwargs: Any) -> Any:
            self.statements.append(" ".join(str(sql).split()))
            return execute(conn, sql, *args, **kwargs)

        def scanned(*args: Any, **kwargs: Any) -> Any:
            try:
                return scan(*args, **kwargs)
            finally:
                self.after_scan = True

        monkeypatch.setattr(MetadataStore, "stream_entities", rows)
        monkeypatch.setattr(SearchIndex, "stream", docs)
        monkeypatch.setattr(SearchIndex, "_call", request)
        monkeypatch.setattr(DirectConnection, "execute", statement)
        monkeypatch.setattr(walk_module, "scan_with_v3", scanned)

    def of(self, index: str) -> int:
        return sum(1 for i, _ in self.streams if i == index)


def boundary(result: Any, name: str) -> Any:
    return next(s for s in result.steps if s.boundary.value == name)


def test_a_triage_shows_what_its_scan_read_and_reads_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = World("postgres", "opensearch", tmp_path, n=30)
    try:
        datasets = [e.urn for e in world.of_type("dataset")]
        healthy = datasets[-1]
        (orphan,) = hard_delete(world, which=1)
        world.refresh()
        settings = world.settings()

        with monkeypatch.context() as m:
            reads = Reads(m, healthy)
            result = triage(settings, healthy, settle=1)
        assert result.verdict == "consistent", result
        assert boundary(result, "rows").facts["present"] and boundary(result, "document").facts["present"]
        assert reads.rows == [False], reads.rows  # the join's one read, none after the scan
        assert not [i for i, after in reads.streams if after], reads.streams
        for index in {i for i, _ in reads.streams}:  # the entity doc, system metadata, edges: once
            assert reads.of(index) == 1, reads.streams
        assert reads.requests.count("msearch") == 1 and "search" not in reads.requests, reads.requests
        # the collation (one statement), the upgrade rows (once), whether a replica, the urn's rows,
        # its aspects' versions (the MCL boundary)
        assert len(reads.statements) == 5, reads.statements
        assert sum("dataHubUpgrade" in st for st in reads.statements) == 1, reads.statements

        with monkeypatch.context() as m:
            reads = Reads(m, orphan)
            result = triage(settings, orphan, settle=1)
        assert result.verdict == "diverged", result
        assert not boundary(result, "rows").facts["present"]
        assert boundary(result, "document").facts["present"]  # as the re-observation read it
        # the join's read, then R and R' of each round of the re-observation; none after the scan
        assert reads.rows and not any(reads.rows) and len(reads.rows) % 2 == 1, reads.rows
        assert not [i for i, after in reads.streams if after], reads.streams
        # one request a read of the documents: the join's, and D of each round
        assert reads.requests.count("msearch") == len(reads.rows) // 2 + 1, reads.requests
        assert "search" not in reads.requests, reads.requests
    finally:
        world.close()
