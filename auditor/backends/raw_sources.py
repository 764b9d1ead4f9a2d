"""Documents as the cluster stores them: a real-time multi-get whose `_source` bytes are kept
exactly as the answer holds them (the engine returns the bytes it was sent), for a journal's
before-images that an undo writes back byte for byte.

The clients parse every answer; the request is sent one level below them (opensearch-py's
connection, the Elasticsearch client's node, each with the client's own authentication), and
each document's `_source` is cut out of the answer's text by a scanner that walks JSON's
strings and brackets only. Where that is not possible (another transport, an error), the parsed
documents are returned without their bytes: the caller writes those back as compact JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

Found = tuple[dict[str, Any], tuple[int, int] | None, bytes | None]  # source, (seq_no, term), bytes

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(rb'["{}\[\]]')
_SCALAR_END = re.compile(rb"[,}\]\s]")
_SPACE = re.compile(rb"\s*")


def read_versioned(search: Any, index: str, ids: Sequence[str]) -> dict[str, Found]:
    """`_id` -> (`_source`, its (seq_no, primary_term), its bytes or None) of the docs that exist."""
    if not ids:
        return {}
    try:
        raw = _raw_mget(search, index, ids)
        found = dict(_found(raw)) if raw is not None else None
    except Exception:  # noqa: BLE001 (the parsed read below says what is wrong, if anything)
        found = None
    if found is None:
        versioned = search.get_versioned(index, ids)
        return {i: (source, version, None) for i, (source, version) in versioned.items()}
    return found


def _raw_mget(search: Any, index: str, ids: Sequence[str]) -> bytes | None:
    body = json.dumps({"ids": list(ids)}).encode()
    path = f"/{index}/_mget"
    if search.kind == "opensearch":
        connection = search.client.transport.get_connection()
        status, _, data = connection.perform_request(
            "POST", path, body=body, headers={"content-type": "application/json"}
        )
    else:
        from elastic_transport import HttpHeaders

        headers = HttpHeaders(dict(getattr(search.client, "_headers", {}) or {}))
        headers["content-type"] = "application/json"
        done = search.client.transport.node_pool.get().perform_request(
            "POST", path, body=body, headers=headers
        )
        status, data = done.meta.status, done.body
    if status != 200:
        return None
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def _found(raw: bytes) -> Iterator[tuple[str, Found]]:
    """The found docs of a multi-get answer, each with its `_source` bytes.

    Both engines write `_source` last in each doc, so it ends where its doc does: just before
    the `}` that the next doc's `,{"_index"` (or the answer's `]}`) follows. That cut is taken when
    it parses to the very source the answer holds; otherwise (a source whose text holds that
    sequence) the doc's source is walked bracket by bracket (`_value_end`, 3-4x slower)."""
    parsed = orjson.loads(raw)
    at = 0
    for doc in parsed.get("docs", []):
        if not doc.get("found"):
            continue  # no "_source" in its text either
        source = doc.get("_source") or {}
        key = raw.find(b'"_source"', at)
        start = _skip(raw, _skip(raw, key + len(b'"_source"')) + 1)  # past the colon
        end = raw.find(b'},{"_index"', start)
        if end < 0:
            end = raw.rfind(b"}", start, raw.rfind(b"]"))
        if key < 0 or end < 0 or _parsed(raw[start:end].rstrip()) != source:
            end = _value_end(raw, start)
        seq, term = doc.get("_seq_no"), doc.get("_primary_term")
        version = (seq, term) if isinstance(seq, int) and isinstance(term, int) else None
        span = raw[start:end].rstrip()
        yield doc["_id"], (source, version, span)
        at = end


def _parsed(cut: bytes) -> Any:
    try:
        return orjson.loads(cut)
    except orjson.JSONDecodeError:
        return None


def source_spans(raw: bytes) -> Iterator[bytes | None]:
    """Each doc's `_source` bytes in a multi-get answer, in order (None: the doc has none)."""
    for start, end in _members(raw, _skip(raw, 0)):
        if raw[start[0] : start[1]] != b'"docs"':
            continue
        for element in _elements(raw, end[0]):
            spans = {raw[k[0] : k[1]]: v for k, v in _members(raw, element)}
            span = spans.get(b'"_source"')
            yield raw[span[0] : span[1]] if span is not None else None


def _skip(raw: bytes, i: int) -> int:
    """Past the whitespace at `i`."""
    found = _SPACE.match(raw, i)
    return found.end() if found else i


def _members(raw: bytes, at: int) -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
    """An object's members from its `{` at `at`: (key span, value span) each."""
    i = _skip(raw, at + 1)
    while raw[i : i + 1] != b"}":
        key = _STRING.match(raw, i)
        assert key is not None, "a key"
        i = _skip(raw, key.end())
        i = _skip(raw, i + 1)  # past the colon
        end = _value_end(raw, i)
        yield (key.start(), key.end()), (i, end)
        i = _skip(raw, end)
        if raw[i : i + 1] == b",":
            i = _skip(raw, i + 1)


def _elements(raw: bytes, at: int) -> Iterator[int]:
    """An array's elements from its `[` at `at`: where each starts."""
    i = _skip(raw, at + 1)
    while raw[i : i + 1] != b"]":
        yield i
        i = _skip(raw, _value_end(raw, i))
        if raw[i : i + 1] == b",":
            i = _skip(raw, i + 1)


def _string_end(raw: bytes, i: int) -> int:
    found = _STRING.match(raw, i)
    assert found is not None, "a string"
    return found.end()


def _value_end(raw: bytes, i: int) -> int:
    """Where the JSON value starting at `i` ends."""
    first = raw[i : i + 1]
    if first == b'"':
        return _string_end(raw, i)
    if first not in (b"{", b"["):
        found = _SCALAR_END.search(raw, i)
        return found.start() if found else len(raw)
    depth = 0
    while True:
        token = _BRACKET.search(raw, i)
        assert token is not None, "a closing bracket"
        if token.group() == b'"':
            i = _string_end(raw, token.start())
            continue
        depth += 1 if token.group() in (b"{", b"[") else -1
        i = token.end()
        if depth == 0:
            return i
