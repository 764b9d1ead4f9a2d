"""The bulk writer and a document nested deeper than a JSON encoder recurses: written whole (the
cluster says whether it takes it), or failed alone with a clear reason; never a crash, never the
rest of the batch lost."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from auditor.backends.bulk_json import _flat_json
from auditor.backends.bulk_json import dumps as _json
from auditor.backends.index_writer import BulkItem, IndexWriter, said


def _deep(levels: int) -> Any:
    return orjson.loads("[" * levels + "]" * levels)  # orjson reads 1,024 levels, recursing in C


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2.5, None, True, False, 'é\ud800\n"\\', {}, [], ()], 3: "int key", 1.5: {"f": -0.0}},
        {None: 1, True: 2, False: [10**30, float("inf"), float("nan"), -float("inf")]},
        [],
        "only a string",
        [[[[{"k": [1, {"j": "x"}]}]]]],
    ],
)
def test_the_flat_encoder_writes_what_the_standard_library_writes(value: Any) -> None:
    assert _flat_json(value) == json.dumps(value, separators=(",", ":"))


def test_a_document_deeper_than_either_encoder_recurses_is_written_whole() -> None:
    doc = {"id": "x", "extension": {"nested": _deep(1010)}}
    with pytest.raises(RecursionError):
        json.dumps(doc)  # what the writer fell back on before
    line = _json(doc)
    assert line == b'{"id":"x","extension":{"nested":' + b"[" * 1010 + b"]" * 1010 + b"}}"
    far = {"a": None}
    for _ in range(5000):  # past anything a parser takes: still no recursion here
        far = {"a": [far]}
    assert _json(far).count(b"[") == 5000
    loop: list[Any] = []
    loop.append({"x": loop})
    with pytest.raises(ValueError, match="Circular"):
        _flat_json(loop)


def test_a_clusters_refusal_is_one_line_with_the_cause_that_says_why() -> None:
    limit = "The depth of the field has exceeded the allowed limit of [20]."
    cause = {"type": "parse_exception", "reason": limit}
    opensearch = {"type": "mapper_parsing_exception", "reason": "failed to parse", "caused_by": cause}
    assert said(opensearch) == (
        f"mapper_parsing_exception: failed to parse; caused by parse_exception: {limit}"
    )
    why = "Document nesting depth (1001) exceeds the maximum allowed (1000)"
    inner = {"type": "stream_constraints_exception", "reason": why}
    outer = {"type": "x_content_parse_exception", "reason": why, "caused_by": inner}
    elastic = {
        "type": "document_parsing_exception",
        "reason": f"[1:9] failed to parse: {why}",
        "caused_by": outer,
    }
    assert said(elastic) == f"document_parsing_exception: [1:9] failed to parse: {why}"  # no repeats
    long = said({"type": "t", "reason": "x\n\ty" * 500})
    assert len(long) == 400 and long.endswith("…") and "\n" not in long
    assert said(None) == "" and said("plain\ntext") == "plain text"


class _Client:
    """A bulk endpoint: refuses a document whose `refuse` is set, takes the others."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def bulk(self, body: bytes) -> dict[str, Any]:
        lines = body.decode().splitlines()
        items = []
        for action, source in zip(lines[::2], lines[1::2], strict=True):
            doc_id = json.loads(action)["index"]["_id"]
            self.sent.append(doc_id)
            if '"refuse"' in source:
                error = {"type": "document_parsing_exception", "reason": "too deep"}
                items.append({"index": {"_id": doc_id, "status": 400, "error": error}})
            else:
                items.append({"index": {"_id": doc_id, "status": 201}})
        return {"errors": True, "items": items}


class _Search:
    kind = "opensearch"
    description = "fake"

    def __init__(self) -> None:
        self.client = _Client()


def test_a_refused_or_unwritable_document_fails_alone_and_the_batch_is_written() -> None:
    search = _Search()
    writer = IndexWriter(search)  # type: ignore[arg-type]
    items = [
        BulkItem("index", "i", "a", "a", {"ok": 1}),
        BulkItem("index", "i", "b", "b", {"refuse": _deep(1000)}),
        BulkItem("index", "i", "c", "c", {"bad": object()}),  # not JSON at all
        BulkItem("index", "i", "d", "d", {"deep": _deep(1010)}),
    ]
    failures = {f.item.urn: f for f in writer.bulk(items)}
    assert search.client.sent == ["a", "b", "d"]
    assert set(failures) == {"b", "c"}
    assert (failures["b"].status, failures["b"].reason) == (400, "document_parsing_exception: too deep")
    assert failures["c"].status == 0 and "cannot be written as JSON" in failures["c"].reason
