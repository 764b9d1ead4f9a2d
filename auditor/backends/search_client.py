"""Opening the search cluster's client: opensearch-py or the elasticsearch client, by the engine's
kind, with the auth's arguments, orjson parsing the responses, and the media types the cluster's
version accepts (search_engine.py). The client's own retries are off: the reader retries."""

from __future__ import annotations

from typing import Any

from auditor.backends.search_auth import SearchAuth
from auditor.backends.search_engine import Engine, transport_class
from auditor.errors import ConfigError


def open_client(
    kind: str,
    url: str,
    auth: SearchAuth,
    verify_certs: bool,
    ca_certs: str | None,
    timeout: float,
    engine: Engine | None,
) -> Any:
    """The client of a cluster of this `kind` (`opensearch` or `elasticsearch`)."""
    # the clients' own retries are immediate (no backoff) and skip 429: `_call` retries instead
    opts: dict[str, Any] = {"verify_certs": verify_certs, "request_timeout": timeout, "max_retries": 0}
    if ca_certs:
        opts["ca_certs"] = ca_certs
    if kind == "opensearch":
        from opensearchpy import OpenSearch

        opts["timeout"] = opts.pop("request_timeout")
        return OpenSearch(url, serializer=_fast_serializer(), **auth.opensearch_kwargs(), **opts)
    if kind == "elasticsearch":
        from elasticsearch import Elasticsearch

        try:
            from elastic_transport import OrjsonSerializer

            opts["serializers"] = {"application/json": OrjsonSerializer()}
        except ImportError:  # pragma: no cover
            pass
        # 7.x and 8.x refuse (or ignore) the 9 client's `compatible-with=9` (search_engine.py)
        transport = transport_class(engine.major if engine else None)
        if transport is not None:
            opts["transport_class"] = transport
        return Elasticsearch(url, **auth.elasticsearch_kwargs(), **opts)
    raise ConfigError(f"unknown search kind {kind!r}: use opensearch or elasticsearch")


def _fast_serializer() -> Any:
    """opensearch-py's JSON serializer, parsing responses with orjson (the scan's hot path)."""
    from opensearchpy.serializer import JSONSerializer

    try:
        import orjson
    except ImportError:  # pragma: no cover
        return JSONSerializer()

    class OrjsonSerializer(JSONSerializer):
        def loads(self, s: str) -> Any:
            return orjson.loads(s)

    return OrjsonSerializer()
