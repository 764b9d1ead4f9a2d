"""The auditor's data: findings, consumer positions, verdicts, selections and the report."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from auditor.core.sanity import StoreSmaller
from auditor.errors import ConfigError
from auditor.exit_codes import ExitCode


class Kind(StrEnum):
    """What differs between the truth (the aspect table) and a projection."""

    MISSING_DOCUMENT = "missing_document"
    ORPHAN_DOCUMENT = "orphan_document"
    STALE_FIELDS = "stale_fields"
    # a field the current aspect no longer has, kept by DataHub's partial (per-aspect) upsert:
    # a RESTATE replay cannot clear it, only a whole-document rewrite can
    FIELD_LEFT_BEHIND = "field_left_behind"
    SOFT_DELETE_MISMATCH = "soft_delete_mismatch"
    STALE_SYSTEM_METADATA = "stale_system_metadata"
    MISSING_EDGE = "missing_edge"
    ORPHAN_EDGE = "orphan_edge"
    MALFORMED_ASPECT = "malformed_aspect"
    # a federation: the urn has rows in two or more stores (which one the index shows is a race)
    STORE_CONFLICT = "store_conflict"
    # written by an older release of the platform (an upgrade whose reindex never ran): it lacks
    # only the fields today's release adds; nothing was lost, a reindex of its type brings it up
    OUTDATED_DOCUMENT = "outdated_document"
    # a whole index absent: its entities have rows and no document anywhere (one finding per
    # index, its count in the details; a deleted index, a rebuild that removed it)
    MISSING_INDEX = "missing_index"
    # an alias (or read pattern) over several indices holding the same document: search
    # returns every copy, a stale one included
    DUPLICATE_DOCUMENT = "duplicate_document"
    # the index holds a later write than the store (a lagging replica, a database restored from an
    # older backup): the store is behind, not the index; never repaired by writing the older rows
    STORE_BEHIND = "store_behind"


class PlatformKind(str):
    """A kind of difference only one platform has, named `<platform>.<kind>` ("acme.stale_lineage").

    `Kind` is the vocabulary every platform shares; a platform adds one of its own without
    editing the kernel, in its own namespace (its findings' `details.platform`), and the shared
    rules treat it as any other difference (a verdict by time, history and the change log; the
    repairs its check declares). It reads and writes as its text, as a `Kind` does."""

    __slots__ = ()

    def __new__(cls, platform: str, name: str) -> PlatformKind:
        for part in (platform, name):
            if not part or not all(c.isascii() and (c.isalnum() or c == "_") for c in part):
                raise ValueError(
                    f"a platform's kind is <platform>.<kind>, in [a-z0-9_]: not {platform}.{name}"
                )
        return super().__new__(cls, f"{platform}.{name}")

    @property
    def value(self) -> str:
        return str(self)

    @property
    def platform(self) -> str:
        return self.partition(".")[0]


AnyKind = Kind | PlatformKind


def kind_of(value: str) -> AnyKind:
    """A kind as a report writes it: the kernel's, or a platform's own `<platform>.<kind>`."""
    try:
        return Kind(value)
    except ValueError:
        platform, dot, name = value.partition(".")
        if not dot:
            raise ValueError(
                f"unknown kind {value!r} (a platform's own is named <platform>.<kind>)"
            ) from None
        return PlatformKind(platform, name)


class Verdict(StrEnum):
    """Will the difference converge by itself?"""

    IN_FLIGHT = "in_flight"
    STALLED = "stalled"
    DIVERGED = "diverged"
    # a row the auditor could not read: reported, never repaired blindly
    INVALID = "invalid"
    # a document an older release of the platform wrote: it will not converge by itself, but
    # nothing is lost and nobody is paged; a reindex of its type (RestoreIndices) is due
    OUTDATED = "outdated"
    # the store is behind the index (a lagging replica past its lag, a restored database): the
    # index is not wrong, and no repair writes the store's older state over it unless told to
    STORE_BEHIND = "store_behind"

    @property
    def rank(self) -> int:
        """Worst first: invalid, diverged, stalled, store behind, outdated, in flight."""
        return SEVERITY.index(self)


SEVERITY = (
    Verdict.INVALID,
    Verdict.DIVERGED,
    Verdict.STALLED,
    Verdict.STORE_BEHIND,
    Verdict.OUTDATED,
    Verdict.IN_FLIGHT,
)


class Cause(StrEnum):
    """Why a divergence will not converge; the diverged subkind when it is more than the kind."""

    EVENT_NEVER_PUBLISHED = "event_never_published"
    INDEX_BEHIND_RESTORE = "index_behind_restore"
    LOST_TO_RETENTION = "lost_to_retention"  # its MCL deleted by retention before the group read it


class RepairKind(StrEnum):
    """What actually fixes a finding; checks declare it, the plan collects it, rebuild does it."""

    REPLAY_ASPECT = "replay_aspect"  # a RESTATE MCL of the aspect (all aspects when none is named)
    REWRITE_DOCUMENT = "rewrite_document"  # the whole entity doc from the rows (clears leftovers)
    DELETE_DOCUMENT = "delete_document"  # an orphan: its doc, system-metadata docs and edges
    REWRITE_SYSTEM_METADATA = "rewrite_system_metadata"  # the (urn, aspect) docs from the rows
    REWRITE_EDGES = "rewrite_edges"  # the entity's edges from its aspects
    REPLAY_WINDOW = "replay_window"  # everything written since an index's restore point
    RESTART_CONSUMER = "restart_consumer"  # nothing to write: the consumer must move again
    FIX_ROW = "fix_row"  # nothing to write: the row itself is wrong
    # on a whole index, by the platform's own job (no urn): create it with the platform's
    # mappings, then reindex its type; take an index holding stale copies out of an alias
    RECREATE_INDEX = "recreate_index"
    ALIAS_ONE_INDEX = "alias_one_index"


class PartitionHealth(StrEnum):
    """A change-log partition's consumer status over the sampling window (after Burrow)."""

    OK = "ok"
    LAGGING = "lagging"  # behind but progressing
    STALLED = "stalled"  # a member is there, the committed offset does not move, lag > 0
    STOPPED = "stopped"  # no member consumes and lag > 0
    REWOUND = "rewound"  # the committed offset went backwards
    UNKNOWN = "unknown"  # no offset committed yet, or no sample


@dataclass(frozen=True, slots=True)
class Finding:
    """One observed difference between the truth and a projection, before classification."""

    check: str
    kind: AnyKind  # the kernel's, or its platform's own (`PlatformKind`, in its namespace)
    urn: str
    entity_type: str
    index: str | None = None
    aspect: str | None = None
    # the newest createdon among the rows that explain the difference (None: no row, e.g. orphan)
    changed_at: datetime | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    # what repairs it when it is a divergence, as its check declares
    repairs: tuple[RepairKind, ...] = ()
    # a federation: the store whose rows it rests on (every store holding the urn for a
    # conflict; none: no store holds the urn, an orphan; or a single-store scan)
    stores: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.kind, PlatformKind) and self.details.get("platform") not in (
            None,
            self.kind.platform,
        ):
            raise ValueError(
                f"a {self.details.get('platform')} finding of {self.kind.platform}'s kind {self.kind}"
            )

    @property
    def key(self) -> str:
        """Stable identity across scans (for the state file)."""
        return f"{self.check}|{self.index or ''}|{self.urn}|{self.aspect or ''}"

    @property
    def platform(self) -> str:
        """The platform the finding belongs to: `details.platform`, which every platform's findings
        carry (a report written before DataHub's did has it filled in when read). None is an
        error, never a default: the reports, the repairs and the triage ask the platform it names."""
        name = self.details.get("platform")
        if not name:
            raise ValueError(f"finding {self.key!r} names no platform (details.platform)")
        return str(name)


@dataclass(frozen=True, slots=True)
class PartitionPosition:
    """The MAE group's position on one change-log partition, sampled over a window."""

    topic: str
    partition: int
    committed: int | None  # committed offset (None: the group never committed here)
    end: int  # log end offset (high watermark)
    start: int  # log start offset (low watermark)
    position_time: datetime | None  # timestamp of the message at the committed offset
    health: PartitionHealth
    rate: float | None  # offsets consumed per second over the window
    members: int  # active members of the group (whole group)
    first_committed: int | None = None  # committed offset at the start of the window
    window_seconds: float = 0.0
    first_end: int | None = None  # log end offset at the start of the window

    @property
    def first_lag(self) -> int | None:
        """The lag when the window opened (None: not sampled then)."""
        if self.first_end is None:
            return None
        base = self.first_committed if self.first_committed is not None else self.start
        return max(0, self.first_end - base)

    @property
    def lag(self) -> int:
        return max(0, self.end - (self.committed if self.committed is not None else self.start))

    @property
    def lost_to_retention(self) -> tuple[int, int] | None:
        """(first, last) offsets retention deleted before the group read them: its committed
        offset is below the log's start. None when it read everything retention removed."""
        if self.committed is None or self.committed >= self.start:
            return None
        return self.committed, self.start - 1

    @property
    def eta_seconds(self) -> float | None:
        if self.lag == 0:
            return 0.0
        if self.rate and self.rate > 0:
            return self.lag / self.rate
        return None


@dataclass(frozen=True, slots=True)
class Observation:
    """When each side of a finding was read: only rows -> offsets -> docs -> rows proves divergence.

    The rows were read (`rows_read_at`), then the consumer's offsets sampled
    (`offsets_sampled_at`, None without Kafka), then the documents read (`docs_read_at`), then
    the rows read again (`rows_confirmed_at`) and found unchanged: the documents were read after
    the consumer had passed every MCL below the sampled offsets.
    """

    rows_read_at: datetime
    offsets_sampled_at: datetime | None
    docs_read_at: datetime
    rows_confirmed_at: datetime
    rounds: int = 1  # re-observations it took to read the entity while its rows held still
    settled: bool = True  # False: its rows changed in every round (a live write each time)


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a verdict rests on."""

    reason: str
    partition: int | None = None
    topic: str | None = None
    partition_health: PartitionHealth | None = None
    position_time: datetime | None = None
    lag: int | None = None
    rate: float | None = None
    eta_seconds: float | None = None
    mcl_found: bool | None = None  # was the change's MCL found on the topic (None: not looked)
    mcl_offset: int | None = None
    seen_before: int = 0  # scans that saw this finding before this one
    first_seen: datetime | None = None
    kafka: bool = True  # False: no Kafka evidence, verdict from time and history only
    observed: Observation | None = None  # the causally ordered re-observation it rests on


@dataclass(frozen=True, slots=True)
class Classified:
    """A finding with exactly one verdict, its diverged subkind and the evidence."""

    finding: Finding
    verdict: Verdict
    subkind: str
    evidence: Evidence


@dataclass(frozen=True)
class Selection:
    """Which part of the catalog a scan, a triage or a rebuild covers."""

    entity_types: tuple[str, ...] = ()
    urn_like: str | None = None  # SQL LIKE on the urn (`%`, `_`)
    since: datetime | None = None  # entities with a row written at or after this instant
    shard: tuple[int, int] | None = None  # (i, n), 0 <= i < n
    # shard i's urns from a shard plan: [lo, hi) by code point (None: open), read as a range by
    # both sides; without it a shard is every urn whose crc32 is i modulo n (read whole, kept)
    urn_range: tuple[str | None, str | None] | None = None
    urns: tuple[str, ...] = ()  # exact urns (triage, re-observation, targeted rebuilds)
    aspects: tuple[str, ...] = ()  # a rebuild of these aspects only
    until: datetime | None = None  # a rebuild of rows written before this instant

    def __post_init__(self) -> None:
        like = self.urn_like
        if like and (len(like) - len(like.rstrip("\\"))) % 2:
            raise ConfigError(
                f"the urn pattern {like!r} ends with a lone backslash, LIKE's escape character",
                hint="write \\\\ for a literal backslash, \\% or \\_ for a literal % or _",
            )

    def in_shard(self, urn: str) -> bool:
        if self.urn_range is not None:
            lo, hi = self.urn_range
            return (lo is None or urn >= lo) and (hi is None or urn < hi)
        if self.shard is None:
            return True
        i, n = self.shard
        return zlib.crc32(urn.encode("utf-8")) % n == i

    @property
    def narrowed(self) -> bool:
        """True when the selection covers only part of its entity types."""
        return bool(self.since or self.urn_like or self.urns)


@dataclass(frozen=True)
class RunSummary:
    """One past scan as the state file remembers it: for the trend of persistent findings."""

    started_at: datetime
    entities: int
    verdicts: dict[str, int]  # verdict -> findings
    exit_code: int


@dataclass(frozen=True)
class Section:
    """A platform's own top-level section of a report: its value when the scan found nothing to
    say, and how the sections of a scan's shards merge into one (into, part) -> merged."""

    empty: Callable[[], Any]
    merge: Callable[[Any, Any], Any]


CONVERGED_LISTED = 10_000  # converged finding keys a report names (it counts them all)


@dataclass
class Report:
    """The result of a scan: data only; rendering lives in reports/."""

    started_at: datetime
    finished_at: datetime | None = None
    scope: Selection = field(default_factory=Selection)
    index_prefix: str = ""  # DataHub's INDEX_PREFIX the scan read under
    consumer_group: str = ""  # the consumer group whose offsets it sampled (DataHub's MAE group)
    sources: dict[str, str] = field(default_factory=dict)  # descriptions, never credentials
    entities: dict[str, int] = field(default_factory=dict)  # entity type -> entities in the store
    documents: dict[str, int] = field(default_factory=dict)  # index -> docs read
    counts: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (type, verdict, subkind)
    findings: list[Classified] = field(default_factory=list)  # detail, capped
    findings_dropped: int = 0  # findings counted but not kept in detail
    partitions: list[PartitionPosition] = field(default_factory=list)
    kafka_available: bool = False
    warnings: list[str] = field(default_factory=list)
    unknown: dict[str, int] = field(default_factory=dict)  # "type" / "type.aspect" -> rows
    # finding keys that converged (--confirm): the first CONVERGED_LISTED of them, and how many
    converged: list[str] = field(default_factory=list)
    converged_total: int = 0
    # the causal re-observation of the join's candidates: counts, rounds and seconds
    reobserved: dict[str, float] = field(default_factory=dict)
    # what the join fetched: version-0 rows and documents (a shard of a plan, its share only)
    read: dict[str, int] = field(default_factory=dict)
    complete: bool = True
    # a federation: per store, its entities, conflicts, findings and diverged findings
    stores: dict[str, dict[str, int]] = field(default_factory=dict)
    trend: list[RunSummary] = field(default_factory=list)  # past scans of the same scope, oldest first
    # a platform's own top-level sections, each a top-level key of the JSON report, declared by
    # the platform (`Platform.report_sections`: DataHub's `reindex` and `v3`)
    sections: dict[str, Any] = field(default_factory=dict)
    # the store empty or far smaller than the index (most documents orphaned): the report's
    # headline and its exit code (8); its orphans stay in `findings` (core/sanity.py)
    store_smaller: StoreSmaller | None = None

    def total(self, verdict: Verdict) -> int:
        return sum(n for (_, v, _), n in self.counts.items() if v == verdict.value)

    def add_converged(self, keys: list[str], total: int | None = None) -> None:
        """Findings `--confirm` found converged (`total`: how many `keys` stand for, if more):
        all counted, the first CONVERGED_LISTED named."""
        self.converged_total += len(keys) if total is None else total
        self.converged.extend(keys[: max(0, CONVERGED_LISTED - len(self.converged))])

    @property
    def exit_code(self) -> ExitCode:
        """0 nothing persistent, 1 persistent divergence, 3 incomplete, 4 consumer stalled,
        5 documents an older release wrote (and nothing worse): a reindex is due; 8 the store
        far smaller than the index, whatever else was found (its orphans are not the cause); 9 the
        store behind the index (and nothing worse than stalled)."""
        if not self.complete:
            return ExitCode.INCOMPLETE
        if self.store_smaller is not None:
            return ExitCode.STORE_SMALLER
        if self.total(Verdict.DIVERGED) or self.total(Verdict.INVALID):
            return ExitCode.PERSISTENT
        if self.total(Verdict.STALLED):
            return ExitCode.STALLED
        if self.total(Verdict.STORE_BEHIND):
            return ExitCode.STORE_BEHIND
        if self.total(Verdict.OUTDATED):
            return ExitCode.OUTDATED
        return ExitCode.OK
