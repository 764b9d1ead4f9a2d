"""The copy a first `--full` keeps of a concrete live index (rebuild/kept.py), against the real
engines: the live index written, overwritten and deleted from after the copy began, the copy
brought up to date by its `_seq_no` passes holds exactly the live index's documents, each
`_source` byte for byte as the live index holds it, and nothing blocked the writes."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from auditor.backends.index_writer import IndexWriter
from auditor.backends.search import SearchIndex
from auditor.rebuild.kept import KeptCopy
from sandbox.endpoints import Endpoints

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scenarios"))
from undo_checks import _http, put_raw, raw_sources  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("engine", ["opensearch", "elasticsearch", "opensearch3"])
def test_the_kept_copy_follows_writes_overwrites_and_deletes_byte_for_byte(engine: str) -> None:
    url = Endpoints.from_env().search_url(engine).rstrip("/")
    live = f"tkept{uuid.uuid4().hex[:8]}"
    _http(f"{url}/{live}", "PUT", {"settings": {"number_of_shards": 2, "number_of_replicas": 0}})
    for i in range(30):  # spelled as a client might: the copy keeps the spelling
        put_raw(f"{url}/{live}/_doc/d{i}", b'{"n": %d,  "name": "caf\\u00e9 %d"}' % (i, i))
    search = SearchIndex(url, "elasticsearch" if engine == "elasticsearch" else "opensearch")
    copy = KeptCopy(IndexWriter(search), live, f"{live}_kept_1")
    try:
        copy.start()
        first = copy.copied
        # written after the copy began: an overwrite, a new document, a delete
        put_raw(f"{url}/{live}/_doc/d3", b'{"n": 3, "name": "rewritten"}')
        put_raw(f"{url}/{live}/_doc/new", b'{"n":   99}')
        _http(f"{url}/{live}/_doc/d7", "DELETE")
        copy.settle()
        held, copied = raw_sources(url, live), raw_sources(url, copy.name)
    finally:
        search.close()
        _http(f"{url}/{live},{copy.name}?ignore_unavailable=true", "DELETE")
    assert first == 30 and copy.passes >= 2
    assert {d: b for (_, d), b in copied.items()} == {d: b for (_, d), b in held.items()}
    assert len(held) == 30 and "d7" not in {d for _, d in held}
    assert held[(live, "d3")] == b'{"n": 3, "name": "rewritten"}' and held[(live, "new")] == b'{"n":   99}'
