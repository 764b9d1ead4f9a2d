"""Index streams read by reader processes (auditor/backends/search_readers.py), against the real
search engines: the same documents in the same order as the scan's own reads, counted alike; the
same scan report with them as without; a reader that cannot reach its cluster fails the scan in
the tool's words; a scan that stops reading early leaves no reader and no point in time behind."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3
from faults import drop_mcl, hard_delete
from world import World

from auditor.api import ScanOptions, scan
from auditor.backends import search_readers
from auditor.backends.connect import open_search
from auditor.backends.search import SearchIndex
from auditor.backends.search_readers import StreamSpec, read_in_process
from auditor.core.model import Selection
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.scan import join as datahub_join
from sandbox.naming import graph_index, system_metadata_index

pytestmark = pytest.mark.integration

EDGE_SORT = ("source.urn", "relationshipType", "destination.urn")


@pytest.fixture(scope="module", params=[("postgres", "elasticsearch"), ("mariadb", "opensearch")])
def broken(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    store, search = request.param
    world = World(store, search, tmp_path_factory.mktemp(f"readers-{search}"), n=40)
    try:
        drop_mcl(world)
        hard_delete(world, which=1)
        world.consumer.stop()
        world.refresh()
        yield world
    finally:
        world.close()


def _specs(world: World, client: SearchIndex) -> list[StreamSpec]:
    entity = sorted(client.indices(f"{world.prefix}_*index_v2"))
    return [
        *(StreamSpec(i, ("urn",)) for i in entity),
        StreamSpec(system_metadata_index(world.prefix), ("urn", "aspect")),
        StreamSpec(graph_index(world.prefix), EDGE_SORT, from_sort=True),
    ]


def test_a_reader_reads_what_the_scan_reads_in_order_and_counted(broken: World) -> None:
    client = open_search(broken.settings())
    specs = _specs(broken, client)
    here = [
        (n, *hit)
        for n, s in enumerate(specs)
        for hit in client.stream(s.index, list(s.sort), source=s.source, from_sort=s.from_sort, page=7)
    ]
    counted = client.docs_read
    apart = list(read_in_process(client, specs))
    assert len(here) > 200  # entity docs, system metadata and edges of 40 entities
    assert {n for n, *_ in here} == set(range(len(specs)))
    assert apart == here
    assert client.docs_read == 2 * counted
    edges = [source for n, _, source in apart if specs[n].from_sort]
    assert edges and all(set(e) == {"source", "relationshipType", "destination"} for e in edges)


def test_a_scan_with_readers_reports_what_a_scan_without_them_reports(
    broken: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_readers, "MIN_DOCS", 1)  # the small world's streams too
    started: list[int] = []
    real = datahub_join.read_in_process

    def counting(search: object, specs: list[StreamSpec]) -> Iterator[tuple[int, str, dict[str, object]]]:
        started.append(len(specs))
        return real(search, specs)

    monkeypatch.setattr(datahub_join, "read_in_process", counting)
    imported: list[tuple[str, ...]] = []
    monkeypatch.setattr(search_readers, "CLIENT_IMPORTS", imported)
    alone = broken.settings(kafka=False, scan_readers=0)
    apart = broken.settings(kafka=False, scan_readers=3)
    options = ScanOptions(use_state=False, sample_window=0, settle=0.0)
    first = scan(alone, Selection(), options)
    assert started == []
    second = scan(apart, Selection(), options)
    assert sorted(started) == [1, 1, len(broken.search.list_indices(f"{broken.prefix}_*index_v2"))]
    assert imported == [()] * 3  # each reader read through the lean client: no full client imported
    assert second.read == first.read and second.read["documents"] > 200
    assert second.entities == first.entities and second.documents == first.documents
    key = [(c.finding.urn, c.finding.check, c.verdict, c.subkind) for c in first.findings]
    assert key and [(c.finding.urn, c.finding.check, c.verdict, c.subkind) for c in second.findings] == key


def test_a_reader_that_cannot_reach_its_cluster_fails_in_the_tools_words(broken: World) -> None:
    dead = SearchIndex("http://127.0.0.1:9", kind="opensearch", retries=0, timeout=2)
    index = system_metadata_index(broken.prefix)
    with pytest.raises(BackendUnavailable) as here:
        list(dead.stream(index, ["urn", "aspect"]))
    with pytest.raises(BackendUnavailable) as apart:
        list(read_in_process(dead, [StreamSpec(index, ("urn", "aspect"))]))
    assert "127.0.0.1:9: opening a point in time" in str(apart.value)
    assert str(apart.value) == str(here.value)  # the same error, in the same words


def _readers_of_this_process() -> list[int]:
    mine = str(os.getpid())
    found = []
    for pid in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        if parent == mine and b"auditor.backends.search_readers" in cmdline:
            found.append(int(pid))
    return found


def _open_contexts(world: World, index: str) -> int:
    """The index's open search contexts (points in time, scrolls): both engines count them."""
    url = world.endpoints.search_url(world.search_name)
    stats = urllib3.request("GET", f"{url}/{index}/_stats/search").json()
    return int(stats["_all"]["primaries"]["search"]["open_contexts"])


def test_a_reading_stopped_early_leaves_no_reader_and_no_point_in_time(broken: World) -> None:
    client = open_search(broken.settings())
    index = system_metadata_index(broken.prefix)
    assert _open_contexts(broken, index) == 0
    hits = read_in_process(client, [StreamSpec(index, ("urn", "aspect"), page=1)])
    assert next(hits)[0] == 0
    assert len(_readers_of_this_process()) == 1
    assert _open_contexts(broken, index) == 1  # mid-stream: the pipe holds less than the index
    hits.close()  # the scan stopped (an error elsewhere, a stop asked): the reader is ended
    assert _readers_of_this_process() == []
    deadline = time.monotonic() + 10
    while _open_contexts(broken, index) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _open_contexts(broken, index) == 0


def test_the_reader_module_runs_as_its_own_process(tmp_path: Path) -> None:
    """What the child runs is the installed module (`python -m`), not the parent's main script."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "auditor.backends.search_readers"], input=b"", capture_output=True, timeout=60
    )
    assert done.returncode != 0 and done.stdout == b""  # no work given: it fails, says nothing on stdout
