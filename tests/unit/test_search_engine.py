"""The engine behind `GET /`, and the media types the elasticsearch client sends each version."""

from __future__ import annotations

from typing import Any

import pytest

from auditor.backends.search_engine import Engine, client_major, engine_of, plain_media_types, transport_class

ES7 = {"version": {"number": "7.17.28", "build_flavor": "oss"}, "tagline": "You Know, for Search"}
ES8 = {"version": {"number": "8.19.0", "build_flavor": "default"}, "tagline": "You Know, for Search"}
OS2 = {"version": {"distribution": "opensearch", "number": "2.19.4"}, "tagline": "The OpenSearch Project: x"}
# OpenSearch 1.x with compatibility.override_main_response_version: it says 7.10.2
OS_AS_ES = {"version": {"number": "7.10.2"}, "tagline": "The OpenSearch Project: https://opensearch.org/"}


@pytest.mark.parametrize(
    ("info", "kind", "major"),
    [
        (ES7, "elasticsearch", 7),
        (ES8, "elasticsearch", 8),
        (OS2, "opensearch", 2),
        (OS_AS_ES, "opensearch", 7),
    ],
)
def test_the_engine_is_told_by_distribution_tagline_and_number(info: Any, kind: str, major: int) -> None:
    engine = engine_of(info)
    assert (engine.kind, engine.major) == (kind, major)


def test_an_answer_without_a_version_is_elasticsearch_of_unknown_major() -> None:
    assert engine_of({}) == Engine("elasticsearch") and Engine("elasticsearch").major is None
    assert engine_of({"version": {"number": "weird"}}).major is None


def test_compatibility_media_types_become_plain_and_the_rest_is_kept() -> None:
    from elastic_transport import HttpHeaders

    sent = HttpHeaders(
        {
            "accept": "application/vnd.elasticsearch+json; compatible-with=9",
            "content-type": "application/vnd.elasticsearch+x-ndjson; compatible-with=9",
            "authorization": "Basic eA==",
        }
    )
    plain = plain_media_types(sent)
    assert plain["accept"] == "application/json" and plain["content-type"] == "application/x-ndjson"
    assert plain["authorization"] == "Basic eA=="
    assert sent["accept"].endswith("compatible-with=9"), "the caller's headers are not changed"
    assert plain_media_types(HttpHeaders({"accept": "text/plain"}))["accept"] == "text/plain"


def test_a_server_as_new_as_the_client_keeps_the_clients_transport() -> None:
    assert transport_class(client_major()) is None
    assert transport_class(client_major() + 1) is None


@pytest.mark.parametrize("major", [7, 8, None])
def test_an_older_or_unknown_server_gets_plain_media_types_on_every_request(
    major: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real client: its search and its bulk, as they leave for the node."""
    from elastic_transport import Transport
    from elasticsearch import Elasticsearch

    sent: list[dict[str, str]] = []

    class Sent(Exception):
        pass

    def record(self: Any, method: str, target: str, **kwargs: Any) -> Any:
        sent.append({k.lower(): v for k, v in kwargs["headers"].items()})
        raise Sent

    monkeypatch.setattr(Transport, "perform_request", record)
    client = Elasticsearch("http://127.0.0.1:9", transport_class=transport_class(major))
    with pytest.raises(Sent):
        client.search(index="i", query={"match_all": {}})
    with pytest.raises(Sent):
        client.bulk(operations=[{"index": {"_index": "i", "_id": "a"}}, {"urn": "a"}])
    assert [(h["accept"], h["content-type"]) for h in sent] == [
        ("application/json", "application/json"),
        ("application/json", "application/x-ndjson"),
    ]


def test_a_doc_read_from_its_sort_values_is_what_the_sort_keys_hold() -> None:
    from auditor.backends.search import _from_sort

    fields = ["source.urn", "relationshipType", "destination.urn"]
    hit = {"_id": "x", "sort": ["urn:li:dataset:a", "DownstreamOf", "urn:li:dataset:b"]}
    assert _from_sort(fields, hit) == {
        "source": {"urn": "urn:li:dataset:a"},
        "relationshipType": "DownstreamOf",
        "destination": {"urn": "urn:li:dataset:b"},
    }
    # a doc missing a key sorts with a null there: missing again, as it was in _source
    assert _from_sort(fields, {"sort": [None, "OwnedBy", "urn:li:corpuser:x"]}) == {
        "relationshipType": "OwnedBy",
        "destination": {"urn": "urn:li:corpuser:x"},
    }
