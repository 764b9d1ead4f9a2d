"""OpenMetadata's documents spilled by a reader process (spill_apart.py), against the real
servers: the same report as the spill in the scan's own thread on a catalog with every fault,
the documents counted alike, no spill file left behind; a reader that fails fails the scan in
the tool's words, the other types' spill files removed."""

from __future__ import annotations

import glob
import os
import tempfile
from pathlib import Path

import pytest
from test_om_profile import _inject, om_world

from auditor.backends import search_readers
from auditor.errors import BackendUnavailable
from auditor.platforms.openmetadata import spill_apart
from auditor.platforms.openmetadata.connect import open_om_search, open_om_store
from auditor.platforms.openmetadata.join import OmScanner
from auditor.platforms.openmetadata.naming import ENTITIES

pytestmark = pytest.mark.integration

PAIRS = [("postgres", "opensearch3"), ("mariadb", "elasticsearch")]


def _spill_files() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), f"auditor-om-docs-{os.getpid()}-*")))


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}+{p[1]}")
def test_a_scan_spilled_by_a_reader_reports_what_the_threads_report(
    pair: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_readers, "MIN_DOCS", 1)  # the small world's indices too
    started: list[int] = []
    real = spill_apart.messages

    def counting(search, job, stop=None):  # type: ignore[no-untyped-def]
        started.append(len(job.spills))
        return real(search, job, stop=stop)

    monkeypatch.setattr(spill_apart, "messages", counting)
    imported: list[tuple[str, ...]] = []
    monkeypatch.setattr(search_readers, "CLIENT_IMPORTS", imported)
    with om_world(*pair, tmp_path, n=40) as world:
        hit = _inject(world)
        before = _spill_files()
        here = world.scan(grace=0.0, use_state=False, scan_readers=0)
        assert started == []
        apart = world.scan(grace=0.0, use_state=False, scan_readers=2)
        assert len(started) == 1 and started[0] >= 5  # every entity type's index, one reader
        assert imported == [()]  # it read through the lean client: no full client imported
        assert _spill_files() == before
        assert apart.read == here.read and apart.read["documents"] >= 30
        assert apart.entities == here.entities and apart.documents == here.documents

        def key(report):  # type: ignore[no-untyped-def]
            return sorted(
                (c.finding.urn, c.finding.kind.value, c.verdict.value, c.subkind) for c in report.findings
            )

        assert key(apart) == key(here)
        assert {hit[f] for f in ("stale", "soft_delete", "orphan", "missing")} <= {u for u, *_ in key(apart)}


def test_a_reader_that_fails_fails_the_scan_in_the_tools_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A type whose index is gone by the time it is read (named to the scanner, as a full
    rebuild's staged index is): the reader fails there, after the types before it were spilled;
    the scan raises what the thread's spill raises, and no spill file stays behind."""
    monkeypatch.setattr(search_readers, "MIN_DOCS", 1)
    with om_world("postgres", "opensearch3", tmp_path, n=30) as world:
        entities = list(ENTITIES.values())[:3]
        gone = {entities[1].entity_type: f"{world.alias}_no_such_index"}
        before = _spill_files()
        raised = []
        for readers in (0, 1):
            settings = world.settings(scan_readers=readers)
            scanner = OmScanner(open_om_store(settings), open_om_search(settings))
            with pytest.raises(BackendUnavailable) as failed:
                scanner.run(entities, names=gone)
            raised.append(str(failed.value))
            assert _spill_files() == before
        assert raised[1] == raised[0] and "no_such_index" in raised[0]
