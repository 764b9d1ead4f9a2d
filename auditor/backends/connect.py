"""Opening the backends from the settings: the one place that maps Settings onto them."""

from __future__ import annotations

import logging
from typing import Any

from auditor.backends.events import EventLog
from auditor.backends.search import SearchIndex
from auditor.backends.state import ScanState
from auditor.backends.store import MetadataStore
from auditor.errors import AccessRefused, BackendUnavailable, ConfigError
from auditor.settings import Settings

WEAKER = "verdicts rest on time and history only (weaker)"


def kafka_config(settings: Settings) -> dict[str, Any]:
    """librdkafka settings from ours (security options included, never logged)."""
    conf: dict[str, Any] = {
        "bootstrap.servers": settings.kafka_bootstrap,
        # librdkafka's own chatter goes to a logger (shown with --debug), not to stderr
        "logger": logging.getLogger("auditor.kafka"),
    }
    if settings.kafka_security_protocol:
        conf["security.protocol"] = settings.kafka_security_protocol
    if settings.kafka_sasl_mechanism:
        conf["sasl.mechanism"] = settings.kafka_sasl_mechanism
    if settings.kafka_sasl_username:
        conf["sasl.username"] = settings.kafka_sasl_username
    if settings.kafka_sasl_password:
        conf["sasl.password"] = settings.kafka_sasl_password.get_secret_value()
    if settings.kafka_ssl_ca_location:
        conf["ssl.ca.location"] = settings.kafka_ssl_ca_location
    return conf


def open_store(settings: Settings) -> MetadataStore:
    if settings.stores:  # a federation: several stores read as one (docs/federation.md)
        from auditor.backends.federated import FederatedStore

        members = [(e.name, MetadataStore(e.url.get_secret_value(), e.table)) for e in settings.stores]
        return FederatedStore(members)  # type: ignore[return-value]
    if settings.store_url is None:
        raise ConfigError("no metadata store configured", hint="pass --store-url or set AUDITOR_STORE_URL")
    return MetadataStore(settings.store_url.get_secret_value(), settings.store_table)


def open_search(settings: Settings) -> SearchIndex:
    if not settings.search_url:
        raise ConfigError("no search cluster configured", hint="pass --search-url or set AUDITOR_SEARCH_URL")
    return SearchIndex(
        settings.search_url,
        settings.search_kind,
        username=settings.search_username,
        password=settings.search_password.get_secret_value() if settings.search_password else None,
        verify_certs=settings.search_verify_certs,
        ca_certs=settings.search_ca_certs,
        timeout=settings.search_timeout_seconds,
        retries=settings.search_retries,
    )


def open_events(settings: Settings, warnings: list[str]) -> EventLog | None:
    """The event log, or None (with a warning) when Kafka is not configured or unreachable.

    A broker that refuses the login or whose certificate fails verification is a setting to fix:
    `AccessRefused` (exit 3), not a scan carried on with weaker verdicts. With `transport =
    "pgqueue"` the log is DataHub's PostgreSQL queue (backends/pgqueue.py)."""
    if settings.transport == "pgqueue":
        from auditor.backends.pgqueue_open import open_pgqueue_events

        return open_pgqueue_events(settings, warnings)  # type: ignore[return-value]
    if not settings.kafka_bootstrap:
        warnings.append(f"no Kafka configured: {WEAKER}")
        return None
    events = None
    try:
        events = EventLog(kafka_config(settings), settings.schema_registry_url)
        topic, on = settings.mcl_versioned_topic, settings.kafka_bootstrap
        if events.partitions(topic) == 0:
            why = events.topic_errors.get(topic)  # not authorized, say
            warnings.append(
                f"topic {topic} on {on}: {why}: {WEAKER}"
                if why
                else f"topic {topic} not found on {on}: {WEAKER}"
            )
            events.close()
            return None
        return events
    except AccessRefused:
        if events is not None:
            events.close()
        raise
    except BackendUnavailable as exc:
        warnings.append(f"{exc}: {WEAKER}")
        return None


def open_state(settings: Settings, use: bool = True) -> ScanState:
    """The state file (or a throw-away in-memory state when `use` is false)."""
    return ScanState(settings.state_file if use else None)
