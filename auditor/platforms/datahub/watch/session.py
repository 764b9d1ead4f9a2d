"""Opening a watch from the settings: its own consumer, the index reads, the MAE group's samples."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from auditor.backends.connect import kafka_config, open_search
from auditor.backends.registry import registry_of
from auditor.backends.searchable import searchable_docs
from auditor.core.watch_model import WatchConfig
from auditor.errors import ConfigError
from auditor.platforms.datahub.backends.events import EventLog
from auditor.platforms.datahub.backends.mcl_tail import MclTail, refuse_mae_group
from auditor.platforms.datahub.registry.loader import load_cached
from auditor.platforms.datahub.watch.run import Watch
from auditor.settings.model import Settings


@contextmanager
def open_watch(
    settings: Settings, config: WatchConfig, group: str, topics: Sequence[str] = (), start: str = "latest"
) -> Iterator[Watch]:
    """A ready watch; its consumer leaves the group (after a last commit) when the block ends."""
    if settings.transport == "pgqueue":
        raise ConfigError(
            "the watch tails Kafka's change-log topics in a consumer group of its own: not supported "
            "on pgQueue (a group registered on the queue would hold back its aggressive retention)",
            hint="run `auditor scan` on a schedule (docs/scheduling.md), or `auditor probe` for the latency",
        )
    if not settings.kafka_bootstrap:
        raise ConfigError(
            "the watch tails the change-log topics: no Kafka configured",
            hint="pass --kafka or set KAFKA_BOOTSTRAP_SERVER",
        )
    if not config.mae_group:
        config = replace(config, mae_group=settings.mae_consumer_group)
    refuse_mae_group(group, config.mae_group)
    topics = tuple(topics) or (settings.mcl_versioned_topic,)
    search = open_search(settings)
    conf = kafka_config(settings)
    events = EventLog(conf, registry_of(settings))
    tail: MclTail | None = None
    try:
        tail = MclTail(conf, registry_of(settings), group, topics, config.mae_group, start)

        def read(index: str, ids: list[str]) -> dict[str, dict[str, Any]]:
            return searchable_docs(search, index, ids)

        def sample() -> list[Any]:
            return events.sample(topics, config.mae_group)

        yield Watch(load_cached(), tail, read, sample, config)
    finally:
        if tail is not None:
            tail.close()
        events.close()
        search.close()
