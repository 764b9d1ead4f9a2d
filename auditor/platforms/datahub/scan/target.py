"""Where a DataHub scan looks (its target, from the settings) and the backends it reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from auditor.backends.protocols import Events, Search, State, Store
from auditor.platforms.datahub.naming import MAE_CONSUMER_GROUP, MCL_TIMESERIES_TOPIC, MCL_VERSIONED_TOPIC
from auditor.platforms.datahub.versions.view import IndexRules

if TYPE_CHECKING:
    from auditor.platforms.datahub.scan.join import Witness


@dataclass(frozen=True)
class ScanTarget:
    """Where a scan looks and how it judges by default (taken from the settings)."""

    index_prefix: str = ""
    versioned_topic: str = MCL_VERSIONED_TOPIC
    timeseries_topic: str = MCL_TIMESERIES_TOPIC
    group: str = MAE_CONSUMER_GROUP
    grace: float = 300.0
    sample_window: float = 10.0
    visibility: float = 3.0
    prefetch: bool = False  # the streams read in threads beside the join (settings.scan_prefetch)
    readers: int = 0  # index streams read by processes of their own (settings.scan_readers)
    # entity type -> the index to read instead of the live one (a full rebuild verifies its new index)
    entity_indices: tuple[tuple[str, str], ...] = ()
    type_field: str | None = None  # a unified (V3) index: the field naming each document's type
    platform_version: str | None = None  # the release that wrote the data (None: found from it)
    gms_url: str | None = None  # GMS, whose /config names its release


@dataclass
class ScanBackends:
    """The backends one scan reads (events None: no Kafka)."""

    store: Store
    search: Search
    events: Events | None
    state: State
    # the release and mappings the last scan over these backends judged by (a triage's walk
    # shows the document by the same rules)
    versions: IndexRules | None = None
    # a triage's urn: what the scan's joins read of it, kept for the walk to show (join.Witness)
    witness: Witness | None = None
