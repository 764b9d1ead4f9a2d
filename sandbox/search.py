"""One small interface over opensearch-py and elasticsearch (9.x) clients."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sandbox.endpoints import Endpoints

# Mappings the sandbox creates when an index is missing (DataHub's are richer; `_source`
# is what matters here). Dynamic fields stay dynamic; no date/number guessing from strings.
ENTITY_MAPPINGS: dict[str, Any] = {
    "dynamic": True,
    "date_detection": False,
    "numeric_detection": False,
    "properties": {
        "urn": {"type": "keyword"},
        "runId": {"type": "keyword"},
        "systemCreated": {"type": "date"},
    },
}
# DataHub's V3 entity index: the same fields, and the entity type of each document (a search
# group's index holds several types)
V3_MAPPINGS: dict[str, Any] = {
    **ENTITY_MAPPINGS,
    "properties": {**ENTITY_MAPPINGS["properties"], "_entityType": {"type": "keyword"}},
}
SYSTEM_METADATA_MAPPINGS: dict[str, Any] = {
    "dynamic": True,
    "date_detection": False,
    "properties": {
        "urn": {"type": "keyword"},
        "aspect": {"type": "keyword"},
        "runId": {"type": "keyword"},
        "lastUpdated": {"type": "long"},
        "registryName": {"type": "keyword"},
        "registryVersion": {"type": "keyword"},
        "removed": {"type": "boolean"},
    },
}
GRAPH_MAPPINGS: dict[str, Any] = {
    "dynamic": True,
    "date_detection": False,
    "properties": {
        "source": {"properties": {"urn": {"type": "keyword"}, "entityType": {"type": "keyword"}}},
        "destination": {"properties": {"urn": {"type": "keyword"}, "entityType": {"type": "keyword"}}},
        "relationshipType": {"type": "keyword"},
        "createdOn": {"type": "date"},
        "createdActor": {"type": "keyword"},
        "updatedOn": {"type": "date"},
        "updatedActor": {"type": "keyword"},
        "lifecycleOwner": {"type": "keyword"},
        "via": {"type": "keyword"},
    },
}
INDEX_SETTINGS: dict[str, Any] = {"number_of_shards": 1, "number_of_replicas": 0}


class SearchStore:
    """The operations the sandbox needs, for an OpenSearch or an Elasticsearch client."""

    def __init__(self, client: Any) -> None:
        self.client = client
        module = type(client).__module__
        if module.startswith("opensearchpy"):
            import opensearchpy
            import opensearchpy.helpers

            self.flavor = "opensearch"
            self._helpers: Any = opensearchpy.helpers
            self._not_found: type[Exception] = opensearchpy.NotFoundError
        elif module.startswith("elasticsearch"):
            import elasticsearch
            import elasticsearch.helpers

            self.flavor = "elasticsearch"
            self._helpers = elasticsearch.helpers
            self._not_found = elasticsearch.NotFoundError
        else:
            raise TypeError(f"not an OpenSearch or Elasticsearch client: {type(client)!r}")
        self._known: set[str] = set()

    # ------------------------------------------------------------ indices

    def exists(self, index: str) -> bool:
        """True when the index (or alias) exists."""
        return bool(self.client.indices.exists(index=index))

    def ensure_index(self, index: str, mappings: dict[str, Any]) -> None:
        """Create the index with simple mappings unless it exists."""
        if index in self._known:
            return
        if not self.exists(index):
            try:
                if self.flavor == "opensearch":
                    self.client.indices.create(
                        index=index, body={"settings": INDEX_SETTINGS, "mappings": mappings}
                    )
                else:
                    self.client.indices.create(index=index, settings=INDEX_SETTINGS, mappings=mappings)
            except Exception as exc:  # created concurrently by someone else
                if "resource_already_exists" not in str(exc):
                    raise
        self._known.add(index)

    def alias_over_copies(
        self,
        live: str,
        copies: Iterable[str],
        mappings: dict[str, Any],
        settings: dict[str, Any] | None = None,
    ) -> list[tuple[str, dict[str, Any]]]:
        """The index `live` replaced by an alias of the same name over copies of it named `copies`
        (a swap that added the new index and never removed the old): search through `live` then
        answers with every copy of each document. Returns the documents copied."""
        docs = list(self.scan(live))
        names = list(copies)
        for index in names:
            body = {"settings": settings or INDEX_SETTINGS, "mappings": mappings}
            if self.flavor == "opensearch":
                self.client.indices.create(index=index, body=body)
            else:
                self.client.indices.create(index=index, **body)
            for doc_id, doc in docs:
                self.put(index, doc_id, doc)
        self.delete_index(live)
        actions = [{"add": {"index": index, "alias": live}} for index in names]
        if self.flavor == "opensearch":
            self.client.indices.update_aliases(body={"actions": actions})
        else:
            self.client.indices.update_aliases(actions=actions)
        for index in names:
            self.refresh(index)
        return docs

    def put_template(
        self, name: str, patterns: list[str], mappings: dict[str, Any], priority: int = 10
    ) -> None:
        """Composable index template, so indices auto-created by a write get these mappings."""
        template = {"settings": INDEX_SETTINGS, "mappings": mappings}
        if self.flavor == "opensearch":
            self.client.indices.put_index_template(
                name=name, body={"index_patterns": patterns, "template": template, "priority": priority}
            )
        else:
            self.client.indices.put_index_template(
                name=name, index_patterns=patterns, template=template, priority=priority
            )

    def delete_index(self, index: str) -> bool:
        """Delete an index; False if it did not exist."""
        self._known.discard(index)
        try:
            self.client.indices.delete(index=index)
            return True
        except self._not_found:
            return False

    def list_indices(self, pattern: str = "*") -> list[str]:
        """Names of the indices matching a pattern."""
        found = self.client.indices.get(index=pattern)
        return sorted(found.keys() if hasattr(found, "keys") else found.body.keys())

    def mappings(self, index: str) -> dict[str, Any]:
        """The index's mappings (empty if the index is missing)."""
        if not self.exists(index):
            return {}
        response = self.client.indices.get_mapping(index=index)
        body = dict(response) if not hasattr(response, "body") else dict(response.body)
        for _name, value in body.items():
            mappings: dict[str, Any] = value.get("mappings", {})
            return mappings
        return {}

    def refresh(self, index: str) -> None:
        """Make recent writes searchable."""
        if self.exists(index):
            self.client.indices.refresh(index=index)

    # ------------------------------------------------------------ documents

    def get(self, index: str, doc_id: str) -> dict[str, Any] | None:
        """The `_source` of a doc (real-time GET), None if absent."""
        try:
            response = self.client.get(index=index, id=doc_id)
        except self._not_found:
            return None
        source: dict[str, Any] = response["_source"]
        return source

    def put(self, index: str, doc_id: str, doc: dict[str, Any]) -> None:
        """Index a whole doc (replaces any previous one)."""
        if self.flavor == "opensearch":
            self.client.index(index=index, id=doc_id, body=doc)
        else:
            self.client.index(index=index, id=doc_id, document=doc)

    def upsert(self, index: str, doc_id: str, doc: dict[str, Any]) -> None:
        """Partial update, creating the doc if missing (`doc_as_upsert`)."""
        if self.flavor == "opensearch":
            self.client.update(
                index=index,
                id=doc_id,
                body={"doc": doc, "doc_as_upsert": True},
                params={"retry_on_conflict": 3},
            )
        else:
            self.client.update(index=index, id=doc_id, doc=doc, doc_as_upsert=True, retry_on_conflict=3)

    def delete(self, index: str, doc_id: str) -> bool:
        """Delete a doc; False if it was absent."""
        try:
            self.client.delete(index=index, id=doc_id)
            return True
        except self._not_found:
            return False

    def bulk(self, actions: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Send helper-style actions in bulk; returns the failed items (absent deletes are fine)."""
        failed: list[dict[str, Any]] = []
        for ok, item in self._helpers.streaming_bulk(
            self.client, actions, chunk_size=500, raise_on_error=False
        ):
            if ok:
                continue
            op_type, result = next(iter(item.items()))
            if op_type == "delete" and result.get("status") == 404:
                continue
            failed.append(item)
        return failed

    def mget(self, index: str, doc_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Real-time multi-get: `_source` by id for the ids that exist."""
        ids = list(doc_ids)
        if not ids or not self.exists(index):
            return {}
        if self.flavor == "opensearch":
            response = self.client.mget(index=index, body={"ids": ids})
        else:
            response = self.client.mget(index=index, ids=ids)
        return {d["_id"]: d["_source"] for d in response["docs"] if d.get("found")}

    def delete_by_query(self, index: str, query: dict[str, Any]) -> int:
        """Delete matching docs (scan + bulk delete: no reindex module needed); returns the count.

        Refreshes first so that recent writes are seen.
        """
        ids = [doc_id for doc_id, _ in self.scan(index, query)]
        if not ids:
            return 0
        actions = ({"_op_type": "delete", "_index": index, "_id": doc_id} for doc_id in ids)
        deleted, _errors = self._helpers.bulk(self.client, actions, chunk_size=500, raise_on_error=False)
        return int(deleted)

    def update_matching(self, index: str, query: dict[str, Any], partial: dict[str, Any]) -> int:
        """Apply a partial doc to every matching doc (scan + bulk update); returns the count."""
        ids = [doc_id for doc_id, _ in self.scan(index, query)]
        if not ids:
            return 0
        actions = ({"_op_type": "update", "_index": index, "_id": doc_id, "doc": partial} for doc_id in ids)
        updated, _errors = self._helpers.bulk(self.client, actions, chunk_size=500, raise_on_error=False)
        return int(updated)

    def search(
        self, index: str, query: dict[str, Any] | None = None, size: int = 1000
    ) -> list[dict[str, Any]]:
        """Hits (with `_id` and `_source`) of a query, after a refresh."""
        self.refresh(index)
        body = {"query": query or {"match_all": {}}, "size": size}
        if self.flavor == "opensearch":
            response = self.client.search(index=index, body=body)
        else:
            response = self.client.search(index=index, query=body["query"], size=size)
        hits: list[dict[str, Any]] = response["hits"]["hits"]
        return hits

    def scan(self, index: str, query: dict[str, Any] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every (id, source) of an index (scroll), after a refresh."""
        if not self.exists(index):
            return
        self.client.indices.refresh(index=index)
        body = {"query": query or {"match_all": {}}}
        for hit in self._helpers.scan(self.client, index=index, query=body, size=500):
            yield hit["_id"], hit["_source"]

    def count(self, index: str, query: dict[str, Any] | None = None) -> int:
        """Number of docs matching a query, after a refresh."""
        if not self.exists(index):
            return 0
        self.client.indices.refresh(index=index)
        if self.flavor == "opensearch":
            response = self.client.count(index=index, body={"query": query or {"match_all": {}}})
        else:
            response = self.client.count(index=index, query=query or {"match_all": {}})
        return int(response["count"])

    def bulk_put(
        self, index: str, docs: Iterable[tuple[str, dict[str, Any]]], *, chunk_size: int = 500
    ) -> int:
        """Index many whole docs; returns the number written."""
        actions = (
            {"_op_type": "index", "_index": index, "_id": doc_id, "_source": doc} for doc_id, doc in docs
        )
        written, _errors = self._helpers.bulk(self.client, actions, chunk_size=chunk_size)
        return int(written)


def connect(search: str, endpoints: Endpoints | None = None) -> SearchStore:
    """SearchStore for `opensearch`, `opensearch3`, `elasticsearch` (9.x), `elasticsearch7` or
    `elasticsearch8` at the sandbox's address."""
    endpoints = endpoints or Endpoints.from_env()
    url = endpoints.search_url(search)
    # https: a node the stack's CA signed for (user:password@ in the URL is basic auth)
    tls = {"ca_certs": endpoints.tls_ca} if url.startswith("https:") else {}
    if search in ("opensearch", "opensearch3"):
        from opensearchpy import OpenSearch

        return SearchStore(OpenSearch(hosts=[url], timeout=30, **tls))
    from elasticsearch import Elasticsearch

    if search in ("elasticsearch7", "elasticsearch8"):  # older than the 9 client: see below
        tls["transport_class"] = _own_media_types()
    return SearchStore(Elasticsearch(url, request_timeout=30, **tls))


def _own_media_types() -> Any:
    """A transport for the elasticsearch 9 client that asks an older node for its own API:
    Elasticsearch 8.x refuses `application/vnd.elasticsearch+json; compatible-with=9` (400
    media_type_header_exception); plain `application/json` and `application/x-ndjson` are what
    7.17 and 8.x speak natively."""
    import re

    from elastic_transport import Transport

    vnd = re.compile(r"application/vnd\.elasticsearch\+([\w.-]+)\s*;\s*compatible-with=\d+")

    class OwnMediaTypes(Transport):  # type: ignore[misc]
        def perform_request(self, method: str, target: str, **kwargs: Any) -> Any:
            headers = kwargs.get("headers")
            if headers is not None and hasattr(headers, "copy"):
                headers = headers.copy()
                for name in ("accept", "content-type"):
                    if headers.get(name):
                        headers[name] = vnd.sub(r"application/\1", headers[name])
                kwargs["headers"] = headers
            return super().perform_request(method, target, **kwargs)

    return OwnMediaTypes


def as_store(client: Any) -> SearchStore:
    """Accept a SearchStore or a raw OpenSearch/Elasticsearch client."""
    return client if isinstance(client, SearchStore) else SearchStore(client)
