"""A drill's search counts on real clusters: documents per index and graph edges per
relationshipType, OpenSearch on one side and Elasticsearch on the other (own index prefixes)."""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator

import pytest
from drill_world import DrillWorld, catalog_rows, drill_world

from auditor.drill.run import Drill, DrillOptions
from auditor.platforms.datahub.drill import METADATA_ASPECT_V2
from auditor.settings import load_settings
from sandbox.endpoints import Endpoints

pytestmark = pytest.mark.integration


def _http(method: str, url: str, body: str | None = None) -> dict:
    request = urllib.request.Request(
        url,
        data=body.encode() if body else None,
        method=method,
        headers={
            "Content-Type": "application/x-ndjson"
            if url.endswith("_bulk?refresh=true")
            else "application/json"
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.loads(response.read() or b"{}"))


def _seed(url: str, prefix: str, edges: dict[str, int], datasets: int) -> None:
    lines = []
    for rel, n in edges.items():
        for i in range(n):
            lines.append(json.dumps({"index": {"_index": f"{prefix}_graph_service_v1", "_id": f"{rel}{i}"}}))
            lines.append(
                json.dumps(
                    {
                        "source": {"urn": f"urn:li:dataset:{i}", "entityType": "dataset"},
                        "destination": {"urn": f"urn:li:dataset:x{i}", "entityType": "dataset"},
                        "relationshipType": rel,
                    }
                )
            )
    for i in range(datasets):
        lines.append(json.dumps({"index": {"_index": f"{prefix}_datasetindex_v2", "_id": f"d{i}"}}))
        lines.append(json.dumps({"urn": f"urn:li:dataset:{i}"}))
    _http(
        "PUT",
        f"{url}/{prefix}_graph_service_v1",
        json.dumps({"mappings": {"properties": {"relationshipType": {"type": "keyword"}}}}),
    )
    found = _http("POST", f"{url}/_bulk?refresh=true", "\n".join(lines) + "\n")
    assert not found.get("errors"), found


@pytest.fixture
def world(endpoints: Endpoints) -> Iterator[DrillWorld]:
    with drill_world(endpoints) as w:
        w.seed(catalog_rows(30))
        yield w


def test_search_counts_compare_two_clusters(world: DrillWorld, endpoints: Endpoints) -> None:
    prefix = f"drill{uuid.uuid4().hex[:8]}"
    os_url, es_url = endpoints.opensearch, endpoints.elasticsearch
    try:
        _seed(os_url, prefix, {"DownstreamOf": 7, "OwnedBy": 3}, datasets=5)
        _seed(es_url, prefix, {"DownstreamOf": 7, "OwnedBy": 2, "IsPartOf": 1}, datasets=5)
        source = load_settings(
            None,
            env={},
            store_url=world.pg_url,
            search_url=os_url,
            index_prefix=prefix,
            kafka_bootstrap=endpoints.kafka,
        )
        target = load_settings(
            None, env={}, store_url=world.mysql_url, search_url=es_url, index_prefix=prefix
        )
        result = Drill(source, target, DrillOptions(tables=(METADATA_ASPECT_V2,))).run()
    finally:
        for url in (os_url, es_url):
            for index in ("graph_service_v1", "datasetindex_v2"):
                try:
                    _http("DELETE", f"{url}/{prefix}_{index}")
                except OSError:
                    pass
    counts = {
        (c.kind, c.name): (c.source, c.target) for c in result.counts if c.kind in ("edges", "documents")
    }
    assert counts == {
        ("edges", "DownstreamOf"): (7, 7),
        ("edges", "OwnedBy"): (3, 2),
        ("edges", "IsPartOf"): (None, 1),
        ("documents", f"{prefix}_graph_service_v1"): (10, 10),
        ("documents", f"{prefix}_datasetindex_v2"): (5, 5),
    }
    assert {(c.kind, c.name) for c in result.count_failures()} == {
        ("edges", "OwnedBy"),
        ("edges", "IsPartOf"),
    }
    assert result.rows == [] and not result.passed
    assert result.versions["source"]["search"].startswith("opensearch 2.")
    assert result.versions["target"]["search"].startswith("elasticsearch 9.")
    kafka = result.versions["source"]["kafka"]  # the finalized metadata.version, as kafka-features shows it
    assert kafka["cluster_id"] and kafka["brokers"] and kafka["finalized_features"]["metadata.version"] >= 1
    assert "kafka" not in result.versions["target"]
