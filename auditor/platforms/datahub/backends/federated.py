"""A federation: several metadata stores read as one, their urn-ordered streams merged k ways."""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from auditor.backends.protocols import Capability
from auditor.backends.replica import Replica, of_stores
from auditor.core.join import JoinOrderError
from auditor.core.model import Selection
from auditor.core.records import EntityRows, RowsDigest, as_utc
from auditor.errors import AuditorError, BackendUnavailable, ConfigError
from auditor.platforms.datahub.backends.store import MetadataStore


class FederationUnsupported(ConfigError, AttributeError):
    """Something only a single aspect table supports was asked of a federation."""


@dataclass(frozen=True, slots=True)
class StoreClaim:
    """What one store holds of a urn: how many version-0 aspects, and its newest write."""

    store: str
    aspects: int
    newest: Any  # createdon as the driver returned it

    @property
    def newest_at(self) -> datetime:
        return as_utc(self.newest)


@dataclass(frozen=True, slots=True)
class FederatedRows(EntityRows):
    """One urn's version-0 rows as a federation read them: the store they come from, and, when
    more than one store holds the urn (a conflict), every store's claim (the rows are then the
    newest writer's)."""

    store: str = ""
    claims: tuple[StoreClaim, ...] = ()  # empty unless a conflict

    @property
    def conflict(self) -> bool:
        return len(self.claims) > 1

    @property
    def holders(self) -> tuple[str, ...]:
        return tuple(c.store for c in self.claims) or (self.store,)


def _claim(store: str, rows: EntityRows) -> StoreClaim:
    return StoreClaim(store, len(rows.rows), max((r.created for r in rows.rows.values()), default=None))


def _newest_first(claim: StoreClaim, position: int) -> tuple[bool, Any, int]:
    # the newest write wins (its MCL is the one the shared consumer applied last); ties: config order
    return (claim.newest is not None, claim.newest, -position)


def merge_stores(streams: Sequence[tuple[str, Iterator[EntityRows]]]) -> Iterator[FederatedRows]:
    """The union of urn-ordered streams, one entity per urn, in urn byte order (memory: one
    entity per store). A urn in several stores comes once, carrying every store's claim; a
    stream that goes backwards (or repeats a urn) stops the merge (JoinOrderError)."""
    heap: list[tuple[str, int, EntityRows]] = []
    last: list[str | None] = [None] * len(streams)

    def advance(i: int) -> None:
        name, stream = streams[i]
        entity = next(stream, None)
        if entity is None:
            return
        previous = last[i]
        if previous is not None and entity.urn <= previous:
            raise JoinOrderError(
                f"store {name!r} is not in urn byte order ({entity.urn!r} after {previous!r}): "
                "the scan stopped",
                hint='check the collation (binary on MySQL, COLLATE "C" on PostgreSQL)',
            )
        last[i] = entity.urn
        heapq.heappush(heap, (entity.urn, i, entity))

    for i in range(len(streams)):
        advance(i)
    names = [name for name, _ in streams]
    while heap:
        urn, i, entity = heapq.heappop(heap)
        if not heap or heap[0][0] != urn:  # one store holds it (the common case: no claims built)
            advance(i)
            yield FederatedRows(urn, entity.rows, entity.duplicated, store=names[i])
            continue
        held = [(i, entity)]
        while heap and heap[0][0] == urn:
            j, other = heapq.heappop(heap)[1:]
            held.append((j, other))
        for j, _ in held:
            advance(j)
        claims = [(j, _claim(streams[j][0], e), e) for j, e in held]
        claims.sort(key=lambda c: c[0])  # config order
        j, chosen, rows = max(claims, key=lambda c: _newest_first(c[1], c[0]))
        yield FederatedRows(
            rows.urn, rows.rows, rows.duplicated, store=chosen.store, claims=tuple(c[1] for c in claims)
        )


def _named(name: str, stream: Iterator[EntityRows]) -> Iterator[EntityRows]:
    """A store's stream whose failure names the store (a silent smaller union is never read)."""
    try:
        yield from stream
    except JoinOrderError:
        raise
    except AuditorError as exc:
        raise BackendUnavailable(f"store {name!r}: {exc}", hint=exc.hint) from None


class FederatedStore:
    """Several named aspect tables read as one store (read-only)."""

    capabilities = frozenset({Capability.READ})

    def __init__(self, stores: Sequence[tuple[str, MetadataStore]]) -> None:
        if not stores:
            raise ConfigError("a federation needs at least one store")
        self.stores = list(stores)
        self.names = tuple(name for name, _ in stores)
        self.description = "federation of " + ", ".join(f"{n} ({s.description})" for n, s in stores)

    @property
    def resumed(self) -> int:
        return sum(s.resumed for _, s in self.stores)

    @resumed.setter
    def resumed(self, value: int) -> None:  # the Protocol's attribute; the members count
        raise AttributeError("a federation's resumed reads are its stores'")

    @property
    def rows_read(self) -> int:
        return sum(s.rows_read for _, s in self.stores)

    @rows_read.setter
    def rows_read(self, value: int) -> None:
        raise AttributeError("a federation's rows read are its stores'")

    def rows_read_by_store(self) -> dict[str, int]:
        return {name: s.rows_read for name, s in self.stores}

    def close(self) -> None:
        for _, store in self.stores:
            store.close()

    def stream_entities(
        self,
        entity_types: tuple[str, ...] = (),
        urn_like: str | None = None,
        since: datetime | None = None,
        urns: tuple[str, ...] = (),
        urn_range: tuple[str | None, str | None] | None = None,
    ) -> Iterator[EntityRows]:
        """Every store's entities merged in urn byte order (FederatedRows: who holds each)."""
        streams = [
            (name, _named(name, store.stream_entities(entity_types, urn_like, since, urns, urn_range)))
            for name, store in self.stores
        ]
        return merge_stores(streams)

    def replica(self) -> Replica:
        """Whether its stores are replicas, as behind as the laggiest (each store named)."""
        return of_stores([(name, store.replica()) for name, store in self.stores])

    def _each(self, what: str, call: Any) -> list[Any]:
        out = []
        for name, store in self.stores:
            try:
                out.append(call(store))
            except AuditorError as exc:
                raise BackendUnavailable(f"store {name!r}: {exc}", hint=exc.hint) from None
        return out

    def count_changed_since(self, entity_type: str, since: datetime) -> int:
        return sum(self._each("count", lambda s: s.count_changed_since(entity_type, since)))

    def versions(self, urn: str) -> dict[str, tuple[int, str | None]]:
        out: dict[str, tuple[int, str | None]] = {}
        for found in self._each("versions", lambda s: s.versions(urn)):
            out.update(found)
        return out

    def fingerprints(self, urns: tuple[str, ...]) -> dict[tuple[str, str], tuple[Any, str]]:
        out: dict[tuple[str, str], tuple[Any, str]] = {}
        for found in self._each("fingerprints", lambda s: s.fingerprints(urns)):
            out.update(found)
        return out

    def urns_digest(self, urns: tuple[str, ...]) -> RowsDigest:
        total = RowsDigest()
        for digest in self._each("digest", lambda s: s.urns_digest(urns)):
            total = total + digest
        return total

    def upgrade_rows(self) -> list[tuple[str, str, datetime | None]]:
        """Every store's upgrade steps (the stores of one federation run one release line)."""
        rows = [r for found in self._each("upgrades", lambda s: s.upgrade_rows()) for r in found]
        return sorted(rows, key=lambda r: (r[2] is None, r[2] or datetime.min.replace(tzinfo=UTC), r[0]))

    def ping(self) -> str:
        """Every store's server version; the first unreachable store fails it, named."""
        versions = self._each("ping", lambda s: s.ping())
        return "; ".join(f"{name}: {v}" for name, v in zip(self.names, versions, strict=True))

    def count_rows(self, selection: Selection) -> int:
        """Version-0 rows a repair of `selection` would walk, over every store."""
        return sum(self._each("count", lambda s: s.count_rows(selection)))

    def urn_weights(self, entity_types: tuple[str, ...] = ()) -> Iterator[tuple[str, int]]:
        raise FederationUnsupported(
            "a shard plan of a federation is not supported yet",
            hint="shard a federation with --shard i/N alone (each job reads every store, keeps its urns)",
        )

    def __getattr__(self, name: str) -> Any:
        """What only one aspect table can do (a repair's pages, a restore's high-water mark)."""
        if name.startswith("_"):
            raise AttributeError(name)
        raise FederationUnsupported(
            f"this needs one aspect table, not a federation of stores (needs {name})",
            hint="a federated report is repaired with `auditor rebuild replay|reindex --from-report`; "
            "filters, after-restore and shard plans work on one store at a time (--store-url), "
            "see docs/federation.md",
        )
