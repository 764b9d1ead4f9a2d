"""What the pipelines need of each backend (Protocols), and what a backend declares it can do."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from auditor.errors import ConfigError

if TYPE_CHECKING:  # names in signatures only: a reader process imports this module, not the model
    from auditor.core.classify import History
    from auditor.core.model import Finding, RunSummary
    from auditor.core.records import CommitRun, EntityRows, MclHit, OffsetSample, RowsDigest


class Capability(StrEnum):
    """What a backend can do; a pipeline checks for what it needs before it starts."""

    READ = "read"
    BULK_WRITE = "bulk_write"
    DELETE = "delete"
    ALIAS = "alias"
    PRODUCE = "produce"


def require(backend: Any, capability: Capability, needed_for: str) -> None:
    """Refuse, before a pipeline starts, a backend that does not declare what it needs."""
    if capability not in getattr(backend, "capabilities", frozenset()):
        where = getattr(backend, "description", type(backend).__name__)
        raise ConfigError(f"{where} cannot {capability.value.replace('_', ' ')}: {needed_for} needs it")


class Store(Protocol):
    """DataHub's aspect table, read in urn byte order."""

    description: str
    capabilities: frozenset[Capability]
    resumed: int  # reads resumed after a lost connection
    rows_read: int  # rows the row streams fetched

    def stream_entities(
        self,
        entity_types: tuple[str, ...] = (),
        urn_like: str | None = None,
        since: datetime | None = None,
        urns: tuple[str, ...] = (),
        urn_range: tuple[str | None, str | None] | None = None,
    ) -> Iterator[EntityRows]: ...

    def count_changed_since(self, entity_type: str, since: datetime) -> int: ...

    def versions(self, urn: str) -> dict[str, tuple[int, str | None]]: ...

    def fingerprints(self, urns: tuple[str, ...]) -> dict[tuple[str, str], tuple[Any, str]]: ...

    def urns_digest(self, urns: tuple[str, ...]) -> RowsDigest: ...

    def ping(self) -> str: ...


class Search(Protocol):
    """The search cluster: index listing and urn-ordered streams of documents."""

    description: str
    capabilities: frozenset[Capability]
    retried: int  # requests sent again after a 429/5xx, a timeout or a dropped connection
    docs_read: int  # documents the streams fetched

    def version(self) -> str: ...

    def indices(self, pattern: str = "*") -> dict[str, int]: ...

    def names(self, pattern: str = "*") -> set[str]: ...  # `indices`' keys, without the counting

    # index (and alias) -> the top-level fields its mapping holds (an index left out: unknown)
    def mapped_fields(self, pattern: str) -> dict[str, frozenset[str]]: ...

    def stream(
        self,
        index: str,
        sort: Sequence[str],
        *,
        query: dict[str, Any] | None = None,
        source: Sequence[str] | bool = True,
        page: int = 2000,
        few: bool = False,
        from_sort: bool = False,  # the doc as its sort keys hold it (no `_source` read)
        answered: list[dict[str, Any]] | None = None,  # the hits an `_msearch` already returned
    ) -> Iterator[tuple[str, dict[str, Any]]]: ...

    def get_many(self, index: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]: ...

    # `_id` -> (`_source`, (seq_no, primary_term) or None) of the docs that exist: what a write
    # conditioned on the doc not having changed since names
    def get_versioned(
        self, index: str, ids: Sequence[str]
    ) -> dict[str, tuple[dict[str, Any], tuple[int, int] | None]]: ...


class Events(Protocol):
    """The change-log topics and the MAE group's offsets (never joined, never committed)."""

    description: str
    capabilities: frozenset[Capability]
    decode_failures: int  # MCLs of interest whose value could not be decoded
    decode_error: str | None  # the first such failure, said
    not_mcl: int  # messages keyed by a urn of interest that are not Confluent-framed Avro: ignored

    def partitions(self, topic: str) -> int: ...

    def partition_of(self, urn: str, partitions: int) -> int: ...  # the urn's partition

    def sample(self, topics: Iterable[str], group: str) -> list[OffsetSample]: ...

    def message_time(self, topic: str, partition: int, offset: int) -> datetime | None: ...

    def offset_for_time(self, topic: str, partition: int, when: datetime) -> int | None: ...

    def find(
        self, topic: str, partition: int, urns: set[str], start: int, stop: int, cap: int
    ) -> tuple[list[MclHit], bool]: ...

    def commit_times(
        self, group: str, wanted: set[tuple[str, int]], lookback: float
    ) -> dict[tuple[str, int], CommitRun] | None: ...

    def close(self) -> None: ...


class State(Protocol):
    """What earlier scans saw: findings and consumer offsets."""

    def history(self, keys: Iterable[str]) -> dict[str, History]: ...

    def record_findings(
        self,
        findings: Iterable[Finding],
        now: datetime,
        scope_types: tuple[str, ...],
        forget_unseen: bool = True,
    ) -> None: ...

    def previous_samples(self, group: str) -> dict[tuple[str, int], OffsetSample]: ...

    def record_samples(self, group: str, samples: Iterable[OffsetSample]) -> None: ...

    def record_run(self, scope: str, run: RunSummary) -> None: ...

    def runs(self, scope: str, limit: int = 100) -> list[RunSummary]: ...

    def close(self) -> None: ...
