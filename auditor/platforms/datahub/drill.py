"""DataHub in a restore drill: its aspect table, and what else the drill counts (entities per
type, aspects per name, lineage edges; documents per index and edges per relationshipType)."""

from __future__ import annotations

from typing import Any

from auditor.backends.search import SearchIndex
from auditor.backends.search_retry import not_found
from auditor.drill.side import Side
from auditor.drill.spec import Column, ColumnKind, TableSpec
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.naming import GRAPH_INDEX, prefixed

# lineage aspects and the arrays of edges they hold (DataHub's Relationship-annotated fields)
LINEAGE_ARRAYS: dict[str, tuple[str, ...]] = {
    "upstreamLineage": ("upstreams", "fineGrainedLineages"),
    "dataJobInputOutput": (
        "inputDatasets",
        "outputDatasets",
        "inputDatajobs",
        "inputDatasetEdges",
        "outputDatasetEdges",
        "inputDatajobEdges",
    ),
    "chartInfo": ("inputs", "inputEdges"),
    "dashboardInfo": ("charts", "chartEdges", "datasets", "datasetEdges"),
}


def _entity_type(side: Side) -> str:
    return (
        "split_part(urn, ':', 3)"
        if side.postgres
        else "SUBSTRING_INDEX(SUBSTRING_INDEX(urn, ':', 3), ':', -1)"
    )


def entity_counts(side: Side, table: str) -> dict[str, int]:
    """Entities (distinct urns with a version-0 row) per entity type."""
    et = _entity_type(side)
    sql = f"SELECT {et}, COUNT(DISTINCT urn) FROM {table} WHERE version = 0 GROUP BY {et}"
    return {str(k): int(n) for k, n in side.fetch(sql)}


def aspect_counts(side: Side, table: str) -> dict[str, int]:
    """Version-0 rows per aspect name, and every version's rows as `<aspect> (all versions)`."""
    sql = (
        f"SELECT aspect, SUM(CASE WHEN version = 0 THEN 1 ELSE 0 END), COUNT(*) FROM {table} GROUP BY aspect"
    )
    out: dict[str, int] = {}
    for aspect, current, total in side.fetch(sql):
        out[str(aspect)] = int(current)
        out[f"{aspect} (all versions)"] = int(total)
    return out


def lineage_counts(side: Side, table: str) -> dict[str, int]:
    """Edges held by the version-0 lineage aspects, per `<aspect>.<array>` (JSON parsed in the
    database; a row that is not JSON counts 0 on MySQL/MariaDB and fails the count on PostgreSQL)."""
    out: dict[str, int] = {}
    for aspect, arrays in LINEAGE_ARRAYS.items():
        if side.postgres:
            sums = [
                f"SUM(CASE WHEN json_typeof(metadata::json -> '{a}') = 'array' "
                f"THEN json_array_length(metadata::json -> '{a}') ELSE 0 END)"
                for a in arrays
            ]
        else:
            sums = [f"SUM(COALESCE(JSON_LENGTH(metadata, '$.{a}'), 0))" for a in arrays]
        sql = f"SELECT {', '.join(sums)} FROM {table} WHERE aspect = :aspect AND version = 0"
        (row,) = side.fetch(sql, {"aspect": aspect})
        for a, n in zip(arrays, row, strict=True):
            out[f"{aspect}.{a}"] = int(n or 0)
    return out


def _is_datahub_index(name: str, prefix: str) -> bool:
    head = prefixed("", prefix)
    if head and not name.startswith(head):
        return False
    return name.endswith("index_v2") or name.endswith("_v1")  # not the timestamped clones


def document_counts(search: SearchIndex, prefix: str = "") -> dict[str, int]:
    """Documents per DataHub index (entity indices, system metadata, graph, timeseries)."""
    pattern = prefixed("*", prefix) if prefix else "*"
    return {
        name: n
        for name, n in search.indices(pattern).items()
        if not name.startswith(".") and _is_datahub_index(name, prefix)
    }


def edge_counts(search: SearchIndex, prefix: str = "") -> dict[str, int]:
    """Edges in the graph index per relationshipType ({} when there is no graph index)."""
    index = prefixed(GRAPH_INDEX, prefix)
    aggs = {"r": {"terms": {"field": "relationshipType", "size": 1000}}}
    try:
        if search.kind == "elasticsearch":
            found: Any = search._call(search.client.search, index=index, size=0, aggs=aggs)
        else:
            found = search._call(search.client.search, index=index, body={"size": 0, "aggs": aggs})
    except Exception as exc:
        if not_found(exc):
            return {}
        raise BackendUnavailable(f"search cluster {search.description}: edge counts failed: {exc}") from None
    buckets = found.get("aggregations", {}).get("r", {}).get("buckets", [])
    return {str(b["key"]): int(b["doc_count"]) for b in buckets}


def search_counts(search: SearchIndex, prefix: str = "") -> dict[str, dict[str, int]]:
    """What a drill compares of the search cluster: documents per index, edges per type."""
    return {"documents": document_counts(search, prefix), "edges": edge_counts(search, prefix)}


METADATA_ASPECT_V2 = TableSpec(
    name="metadata_aspect_v2",
    key=("urn", "aspect", "version"),
    columns=(
        Column("urn"),
        Column("aspect"),
        Column("version", ColumnKind.INT),
        Column("metadata"),
        Column("systemmetadata"),
        Column("createdon", ColumnKind.TIME),
        Column("createdby"),
        Column("createdfor"),
    ),
    counts=(("entities", entity_counts), ("aspects", aspect_counts), ("lineage", lineage_counts)),
)
