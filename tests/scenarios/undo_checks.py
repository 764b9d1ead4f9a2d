"""What the undo tests compare: every document's `_source` as the cluster returns it, raw bytes."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

from auditor.backends.journal import find, read

Raw = dict[tuple[str, str], bytes]


def _http(url: str, method: str = "GET", body: dict[str, Any] | None = None) -> bytes:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, method=method, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return bytes(response.read())


def put_raw(url: str, body: bytes) -> int:
    """PUT these bytes as a document (spelled as some client might): the status."""
    request = urllib.request.Request(
        url, data=body, method="PUT", headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return int(response.status)


def raw_sources(search_url: str, names: str) -> Raw:
    """(index, id) -> the document's `_source` exactly as the cluster returns it (its stored bytes),
    for every document of `names` (indices or aliases, comma-separated, wildcards allowed)."""
    base = search_url.rstrip("/")
    _http(f"{base}/{names}/_refresh", "POST")
    query = {"_source": False, "size": 10_000, "query": {"match_all": {}}}
    hits = json.loads(_http(f"{base}/{names}/_search", "POST", query))["hits"]["hits"]
    return {
        (h["_index"], h["_id"]): _http(
            f"{base}/{quote(h['_index'], safe='')}/_source/{quote(h['_id'], safe='')}"
        )
        for h in hits
    }


def changed(before: Raw, after: Raw) -> set[tuple[str, str]]:
    """The documents that differ, appeared or went."""
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def journaled_docs(directory: Path, run: str) -> set[tuple[str, str]]:
    """The (index, id) of every document a run's journal imaged."""
    path = find(directory, run)
    assert path is not None, f"no journal {run} in {directory}"
    return {(d["i"], d["id"]) for e in read(path).entries if e.get("t") == "before" for d in e["docs"]}


def given_back(before: Raw, first: Raw, theirs: Raw) -> tuple[set[tuple[str, str]], Raw]:
    """What another writer changed between a run's two writes (`first`: the documents after the
    run's first write, `theirs`: after the other writer's), and what an undo as if the run never
    ran leaves: every document as before the run, but those, as that writer left them."""
    written = changed(first, theirs)
    expected = {k: v for k, v in before.items() if k not in written}
    expected.update({k: theirs[k] for k in written if k in theirs})
    return written, expected


def differs(expected: Raw, after: Raw, loose: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """`changed`, but the `loose` documents compared as JSON: the undo leaves alone a document that
    holds the content it would put back, whatever the order of its keys."""
    return {
        k
        for k in changed(expected, after)
        if k not in loose
        or k not in expected
        or k not in after
        or json.loads(expected[k]) != json.loads(after[k])
    }
