"""The versions of every server a drill talks to: databases, search cluster, Kafka brokers."""

from __future__ import annotations

from typing import Any

from auditor.errors import BackendUnavailable


def kafka_info(conf: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """Cluster id, controller and brokers; the release as far as the protocol tells it.

    Kafka does not hand its release to clients: the broker config keeps no version key in KRaft
    mode (4.x), so what is recorded is the cluster's identity and the API versions its first
    broker supports (`api_versions`: key -> max version, which pins the release for an auditor
    who needs it) when the client library exposes them."""
    from confluent_kafka.admin import AdminClient

    try:
        admin = AdminClient(conf)
        cluster = admin.describe_cluster(request_timeout=timeout).result()
    except Exception as exc:  # KafkaException, a timeout
        raise BackendUnavailable(
            f"Kafka {conf.get('bootstrap.servers')}: describe cluster failed: {exc}"
        ) from None
    controller = cluster.controller
    return {
        "cluster_id": cluster.cluster_id,
        "controller": controller.id if controller is not None else None,
        "brokers": [f"{n.id}@{n.host}:{n.port}" for n in cluster.nodes],
        "release": "not exposed to clients by the Kafka protocol (see cluster_id and brokers)",
    }
