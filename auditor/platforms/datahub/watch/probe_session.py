"""Opening the probe's writer and readers from the settings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from auditor.backends.connect import kafka_config, open_search
from auditor.backends.registry import registry_of
from auditor.backends.searchable import searchable_docs
from auditor.core.watch_model import ProbeResult
from auditor.errors import ConfigError
from auditor.platforms.datahub.backends.canary_writer import GmsCanaryWriter, StoreCanaryWriter
from auditor.platforms.datahub.backends.events import EventLog
from auditor.platforms.datahub.backends.producer import MclProducer
from auditor.platforms.datahub.registry.loader import load_cached
from auditor.platforms.datahub.watch.probe import CANARY_KEY, CANARY_URN, probe
from auditor.rebuild.datahub.mcl import RestateBuilder
from auditor.settings.model import Settings


class CanaryWriter:
    """One of the two write paths, with the canary's removal."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.path = inner.path

    def write(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return dict(self.inner.write(*args, **kwargs))

    def remove_canary(self) -> None:
        if isinstance(self.inner, StoreCanaryWriter):
            self.inner.remove(CANARY_URN, CANARY_KEY[0])
        else:
            self.inner.remove(CANARY_URN)


@contextmanager
def open_writer(
    settings: Settings, gms_url: str | None, gms_token: str | None, topic: str | None
) -> Iterator[CanaryWriter]:
    if gms_url:
        inner: Any = GmsCanaryWriter(gms_url, gms_token)
    else:
        if settings.store_url is None:
            raise ConfigError(
                "--via-store writes the canary's row: no metadata store configured", hint="pass --store-url"
            )
        if settings.transport == "pgqueue":  # the canary's MCL inserted into DataHub's queue
            from auditor.platforms.datahub.backends.pgqueue_open import open_pgqueue_producer

            producer: MclProducer = open_pgqueue_producer(settings, topic)
        elif not settings.kafka_bootstrap:
            raise ConfigError(
                "--via-store produces the canary's MCL: no Kafka configured", hint="pass --kafka"
            )
        else:
            producer = MclProducer(
                kafka_config(settings), registry_of(settings), topic or settings.mcl_versioned_topic
            )
        inner = StoreCanaryWriter(
            settings.store_url.get_secret_value(),
            settings.store_table,
            producer,
            RestateBuilder(producer.schema_str),
        )
    try:
        yield CanaryWriter(inner)
    finally:
        inner.close()


def run_probe(
    settings: Settings, writer: CanaryWriter, slo: float, timeout: float, interval: float, topic: str | None
) -> ProbeResult:
    search = open_search(settings)
    events: Any = None
    if settings.transport == "pgqueue":
        from auditor.platforms.datahub.backends.pgqueue_open import open_pgqueue_events

        events = open_pgqueue_events(settings, [])
    elif settings.kafka_bootstrap:
        events = EventLog(kafka_config(settings), registry_of(settings))
    try:

        def read(index: str, ids: list[str]) -> dict[str, dict[str, Any]]:
            return searchable_docs(search, index, ids)

        return probe(
            load_cached(),
            writer,
            read,
            slo_seconds=slo,
            timeout=timeout,
            interval=interval,
            index_prefix=settings.index_prefix,
            events=events,
            topic=topic or settings.mcl_versioned_topic,
        )
    finally:
        if events is not None:
            events.close()
        search.close()
