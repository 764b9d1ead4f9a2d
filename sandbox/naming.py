"""DataHub's names and document ids: table, topics, consumer group, indices, `_id`s."""

from __future__ import annotations

import base64
import hashlib
from urllib.parse import quote_plus

ASPECT_TABLE = "metadata_aspect_v2"
MCL_VERSIONED_TOPIC = "MetadataChangeLog_Versioned_v1"
MCL_TIMESERIES_TOPIC = "MetadataChangeLog_Timeseries_v1"
MCL_TOPICS = (MCL_VERSIONED_TOPIC, MCL_TIMESERIES_TOPIC)
# Partition counts used when the sandbox has to create the topics itself (same as sandbox/stack).
TOPIC_PARTITIONS = {MCL_VERSIONED_TOPIC: 4, MCL_TIMESERIES_TOPIC: 2}
MAE_CONSUMER_GROUP = "generic-mae-consumer-job-client"
SYSTEM_METADATA_INDEX = "system_metadata_service_v1"
GRAPH_INDEX = "graph_service_v1"
DATAHUB_ACTOR = "urn:li:corpuser:datahub"
SYSTEM_ACTOR = "urn:li:corpuser:__datahub_system"
DEFAULT_RUN_ID = "no-run-id-provided"


def subject_for(topic: str) -> str:
    """Schema-registry subject of a topic's values (TopicNameStrategy)."""
    return f"{topic}-value"


def entity_type_of(urn: str) -> str:
    """Entity type named by a urn: `urn:li:dataset:(...)` -> `dataset`."""
    parts = urn.split(":", 3)
    if len(parts) < 4 or parts[0] != "urn" or not parts[2]:
        raise ValueError(f"not a DataHub urn: {urn!r}")
    return parts[2]


def _prefixed(name: str, prefix: str) -> str:
    return f"{prefix}_{name}" if prefix else name


def entity_index(entity_type: str, prefix: str = "") -> str:
    """Entity search index, e.g. `datasetindex_v2`, `corpuserindex_v2`."""
    return _prefixed(f"{entity_type.lower()}index_v2", prefix)


def system_metadata_index(prefix: str = "") -> str:
    """The system-metadata index (one doc per urn and aspect)."""
    return _prefixed(SYSTEM_METADATA_INDEX, prefix)


def graph_index(prefix: str = "") -> str:
    """The graph index (one doc per edge)."""
    return _prefixed(GRAPH_INDEX, prefix)


def entity_doc_id(urn: str) -> str:
    """Java `URLEncoder.encode(urn, "UTF-8")`: keeps letters, digits and `.-*_`, space -> `+`."""
    return quote_plus(urn, safe="*").replace("~", "%7E")


def entity_index_v3(key: str, prefix: str = "") -> str:
    """DataHub's V3 index: `<search group, else the entity type>index_v3` (IndexConventionImpl)."""
    return _prefixed(f"{key.lower()}index_v3", prefix)


def entity_doc_id_v3(urn: str) -> str:
    """A V3 document's `_id`: the SHA-256 hex of the urn."""
    return hashlib.sha256(urn.encode("utf-8")).hexdigest()


def _md5_base64(raw: str) -> str:
    return base64.b64encode(hashlib.md5(raw.encode("utf-8")).digest()).decode("ascii")


def system_metadata_doc_id(urn: str, aspect: str) -> str:
    """`_id` of a system_metadata_service_v1 doc: base64(md5(urn--aspect))."""
    return _md5_base64(f"{urn}--{aspect}")


def edge_doc_id(source: str, relationship: str, destination: str, lifecycle_owner: str | None = None) -> str:
    """`_id` of a graph_service_v1 doc: base64(md5(src--rel--dst[--lifecycleOwner]))."""
    raw = f"{source}--{relationship}--{destination}"
    if lifecycle_owner and lifecycle_owner.strip():
        raw += f"--{lifecycle_owner}"
    return _md5_base64(raw)
