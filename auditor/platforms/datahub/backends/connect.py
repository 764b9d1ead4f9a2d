"""Opening DataHub's backends from the settings: the aspect table (or a federation of them) and
the change log (Kafka, or pgQueue without it)."""

from __future__ import annotations

from auditor.backends.connect import WEAKER, kafka_config
from auditor.backends.db_auth import store_engine
from auditor.backends.registry import registry_of
from auditor.errors import AccessRefused, BackendUnavailable, ConfigError
from auditor.platforms.datahub.backends.events import EventLog
from auditor.platforms.datahub.backends.store import MetadataStore
from auditor.settings.model import Settings


def open_store(settings: Settings) -> MetadataStore:
    if settings.stores:  # a federation: several stores read as one (docs/federation.md)
        from auditor.platforms.datahub.backends.federated import FederatedStore

        members = [
            (
                e.name,
                MetadataStore(
                    e.url.get_secret_value(), e.table, engine=store_engine(e.url.get_secret_value(), settings)
                ),
            )
            for e in settings.stores
        ]
        return FederatedStore(members)  # type: ignore[return-value]
    if settings.store_url is None:
        raise ConfigError("no metadata store configured", hint="pass --store-url or set AUDITOR_STORE_URL")
    url = settings.store_url.get_secret_value()
    return MetadataStore(url, settings.store_table, engine=store_engine(url, settings))


def open_events(settings: Settings, warnings: list[str]) -> EventLog | None:
    """The event log, or None (with a warning) when Kafka is not configured or unreachable.

    A broker that refuses the login or whose certificate fails verification is a setting to fix:
    `AccessRefused` (exit 3), not a scan carried on with weaker verdicts. With `transport =
    "pgqueue"` the log is DataHub's PostgreSQL queue (backends/pgqueue.py)."""
    if settings.transport == "pgqueue":
        from auditor.platforms.datahub.backends.pgqueue_open import open_pgqueue_events

        return open_pgqueue_events(settings, warnings)  # type: ignore[return-value]
    if not settings.kafka_bootstrap:
        warnings.append(f"no Kafka configured: {WEAKER}")
        return None
    events = None
    try:
        events = EventLog(kafka_config(settings), registry_of(settings))
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
        if events is not None:  # its clients destroyed now, not left to the interpreter's exit
            events.close()
        warnings.append(f"{exc}: {WEAKER}")
        return None
