"""The versions of every server a drill talks to: databases, search cluster, Kafka brokers."""

from __future__ import annotations

from typing import Any

from auditor.drill.kafka_features import finalized_features
from auditor.errors import BackendUnavailable


def kafka_info(conf: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """Cluster id, controller and brokers, and the finalized features (`metadata.version`).

    Kafka does not hand its release to clients: the broker config keeps no version key in KRaft
    mode (4.x) and the admin API has no version call. The finalized `metadata.version` feature
    level (ApiVersions v3, what `kafka-features describe` prints) moves with each release: it is
    recorded when the first bootstrap server speaks plaintext."""
    from confluent_kafka.admin import AdminClient

    bootstrap = str(conf.get("bootstrap.servers"))
    try:
        admin = AdminClient(conf)
        cluster = admin.describe_cluster(request_timeout=timeout).result()
    except Exception as exc:  # KafkaException, a timeout
        raise BackendUnavailable(f"Kafka {bootstrap}: describe cluster failed: {exc}") from None
    controller = cluster.controller
    features = None if conf.get("security.protocol") else finalized_features(bootstrap)
    level = (features or {}).get("metadata.version")
    return {
        "cluster_id": cluster.cluster_id,
        "controller": controller.id if controller is not None else None,
        "brokers": [f"{n.id}@{n.host}:{n.port}" for n in cluster.nodes],
        "finalized_features": features,
        "release": f"metadata.version feature level {level} (the release is not exposed to clients)"
        if level is not None
        else "not exposed to clients (no plaintext ApiVersions answer: see cluster_id and brokers)",
    }
