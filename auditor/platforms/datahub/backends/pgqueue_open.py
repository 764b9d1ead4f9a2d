"""Opening the pgQueue event log and producer from the settings (`transport = "pgqueue"`)."""

from __future__ import annotations

from auditor.backends.registry import registry_of
from auditor.errors import AccessRefused, BackendUnavailable, ConfigError
from auditor.platforms.datahub.backends.pgqueue import PgQueueEvents
from auditor.platforms.datahub.backends.pgqueue_producer import PgQueueProducer
from auditor.settings.model import Settings

WEAKER = "verdicts rest on time and history only (weaker)"


def queue_url(settings: Settings) -> str:
    url = settings.pgqueue_url or settings.store_url
    if url is None:
        raise ConfigError(
            "transport pgqueue: no database configured for the queue",
            hint="set [pgqueue] url (AUDITOR_PGQUEUE_URL) or the store URL (the queue is in DataHub's "
            "database)",
        )
    return url.get_secret_value()


def open_pgqueue_events(settings: Settings, warnings: list[str]) -> PgQueueEvents | None:
    """The queue's event log, or None (with a warning) when its tables or topic are not there."""
    events = None
    try:
        events = PgQueueEvents(
            queue_url(settings),
            settings.pgqueue_schema,
            settings.pgqueue_table_prefix,
            registry_of(settings),
        )
        topic = settings.mcl_versioned_topic
        if events.partitions(topic) == 0:
            why = events.topic_errors.get(topic) or f"topic {topic} not found in {events.p}_topic"
            warnings.append(f"{events.description}: {why}: {WEAKER}")
            events.close()
            return None
        for group, partition, offset, last in events.stuck_ahead(topic):
            if group == settings.mae_consumer_group:
                warnings.append(
                    f"pgQueue {topic}[{partition}]: group {group}'s offset {offset} is past the end of the "
                    "log "
                    f"({last}: STUCK_AHEAD, after retention or a reset of the queue): it skips the messages "
                    "enqueued below it, and a replay cannot reach it (reindex instead)"
                )
        return events
    except AccessRefused:
        if events is not None:
            events.close()
        raise
    except BackendUnavailable as exc:
        if events is not None:
            events.close()
        warnings.append(f"{exc}: {WEAKER}")
        return None


def open_pgqueue_producer(settings: Settings, topic: str | None = None) -> PgQueueProducer:
    """The replay's (or the probe's) producer into the versioned change-log topic of the queue."""
    events = PgQueueEvents(
        queue_url(settings),
        settings.pgqueue_schema,
        settings.pgqueue_table_prefix,
        registry_of(settings),
    )
    try:
        return PgQueueProducer(events, registry_of(settings), topic or settings.mcl_versioned_topic)
    except BaseException:
        events.close()
        raise
