"""Small in-memory fakes of the backend Protocols, for the pipeline's logic (no I/O claimed)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from auditor.backends.protocols import Capability
from auditor.core.classify import History
from auditor.core.model import Finding, RunSummary
from auditor.core.records import AspectRow, CommitRun, EntityRows, MclHit, OffsetSample, RowsDigest

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
TOPIC = "MetadataChangeLog_Versioned_v1"


def rows(urn: str, aspects: dict[str, dict[str, Any]], at: datetime = T0) -> EntityRows:
    """An entity's version-0 rows, written at `at`."""
    naive = at.astimezone(UTC).replace(tzinfo=None)
    made = {
        name: AspectRow(name, json.dumps(value), json.dumps({"runId": "r", "lastObserved": 1}), naive)
        for name, value in aspects.items()
    }
    return EntityRows(urn, made)


class FakeStore:
    """The aspect table as a dict; `before_read` runs before every read (a live writer)."""

    description = "fake store"
    capabilities = frozenset({Capability.READ})
    resumed = 0
    rows_read = 0

    def __init__(self, entities: Iterable[EntityRows], log: list[str] | None = None) -> None:
        self.entities = {e.urn: e for e in entities}
        self.log = log if log is not None else []
        self.before_read: Callable[[FakeStore], None] | None = None

    def stream_entities(
        self,
        entity_types: tuple[str, ...] = (),
        urn_like: str | None = None,
        since: datetime | None = None,
        urns: tuple[str, ...] = (),
        urn_range: tuple[str | None, str | None] | None = None,
    ) -> Iterator[EntityRows]:
        if self.before_read is not None:
            self.before_read(self)
        self.log.append("rows")
        lo, hi = urn_range or (None, None)
        for urn in sorted(self.entities):
            if urns and urn not in urns:
                continue
            if (lo is not None and urn < lo) or (hi is not None and urn >= hi):
                continue
            if entity_types and not any(urn.startswith(f"urn:li:{t}:") for t in entity_types):
                continue
            yield self.entities[urn]

    def fingerprints(self, urns: tuple[str, ...]) -> dict[tuple[str, str], tuple[Any, str]]:
        from auditor.platforms.datahub.backends.store import row_fingerprint

        if self.before_read is not None:
            self.before_read(self)
        self.log.append("fingerprints")
        return {
            (u, a): row_fingerprint(r)
            for u in urns
            if u in self.entities
            for a, r in self.entities[u].rows.items()
        }

    def urns_digest(self, urns: tuple[str, ...]) -> RowsDigest:
        from auditor.core.records import rows_digest

        if self.before_read is not None:
            self.before_read(self)
        self.log.append("digest")
        return rows_digest((u, r) for u in urns if u in self.entities for r in self.entities[u].rows.values())

    def versions(self, urn: str) -> dict[str, tuple[int, str | None]]:
        entity = self.entities.get(urn)
        return {a: (1, "urn:li:corpuser:fake") for a in entity.rows} if entity else {}

    def count_changed_since(self, entity_type: str, since: datetime) -> int:
        return sum(
            1
            for u, e in self.entities.items()
            if u.startswith(f"urn:li:{entity_type}:") and e.changed_at >= since
        )

    def ping(self) -> str:
        return "fake 1.0"


def _matches(doc_id: str, doc: dict[str, Any], query: dict[str, Any] | None) -> bool:
    """Whether a doc matches what the tool's queries use: a bool of `terms` (on any field, dotted),
    `should` of prefixes on the urn, and `must_not` of ids."""
    bool_ = (query or {}).get("bool", {})
    for part in bool_.get("filter", []):
        if "terms" in part:
            field, values = next(iter(part["terms"].items()))
            if _field(doc, field) not in set(values):
                return False
        prefixes = [next(iter(s["prefix"].values())) for s in part.get("bool", {}).get("should", [])]
        if prefixes and not any(str(doc.get("urn", "")).startswith(p) for p in prefixes):
            return False
    excluded = {i for part in bool_.get("must_not", []) for i in part.get("ids", {}).get("values", [])}
    return doc_id not in excluded


def _field(doc: dict[str, Any], field: str) -> Any:
    value: Any = doc
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


class FakeSearch:
    """Indices as dicts of `_id -> _source`, streamed in urn order like a PIT + search_after."""

    description = "fake search"
    capabilities = frozenset({Capability.READ})
    retried = 0
    docs_read = 0

    def __init__(self, indices: dict[str, dict[str, dict[str, Any]]], log: list[str] | None = None) -> None:
        self.docs = indices
        self.log = log if log is not None else []
        self.versions: dict[tuple[str, str], int] = {}  # (index, _id) -> seq_no, where it moved

    def version(self) -> str:
        return "fake 1.0"

    def indices(self, pattern: str = "*") -> dict[str, int]:
        return {name: len(docs) for name, docs in self.docs.items()}

    def names(self, pattern: str = "*") -> set[str]:
        return set(self.indices(pattern))

    def mapped_fields(self, pattern: str) -> dict[str, frozenset[str]]:
        return {}  # no mapping known: every field the rules write is expected

    def stream(
        self,
        index: str,
        sort: Sequence[str],
        *,
        query: dict[str, Any] | None = None,
        source: Sequence[str] | bool = True,
        page: int = 2000,
        few: bool = False,
        from_sort: bool = False,
        answered: list[dict[str, Any]] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        self.log.append(f"docs {index}")
        items = sorted(self.docs.get(index, {}).items(), key=lambda kv: str(_field(kv[1], sort[0]) or ""))
        for doc_id, doc in items:
            if _matches(doc_id, doc, query):
                yield doc_id, _sort_keys(doc, sort) if from_sort else dict(doc)

    def get_many(self, index: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {i: self.docs.get(index, {})[i] for i in ids if i in self.docs.get(index, {})}

    def get_versioned(
        self, index: str, ids: Sequence[str]
    ) -> dict[str, tuple[dict[str, Any], tuple[int, int] | None]]:
        """The docs, each at the version `versions` gives it (1 if never written through a fake writer)."""
        found = self.get_many(index, ids)
        return {i: (doc, (self.versions.get((index, i), 1), 1)) for i, doc in found.items()}


def _sort_keys(doc: dict[str, Any], sort: Sequence[str]) -> dict[str, Any]:
    """What an engine's sort values give back of `doc`: the sort fields only."""
    out: dict[str, Any] = {}
    for field in sort:
        *outer, last = field.split(".")
        value: Any = doc
        for part in (*outer, last):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            node = out
            for part in outer:
                node = node.setdefault(part, {})
            node[last] = value
    return out


class FakeEvents:
    """One change-log partition: its MCLs and the MAE group's committed offset."""

    description = "fake kafka"
    capabilities = frozenset({Capability.READ})
    decode_failures = 0
    decode_error: str | None = None
    not_mcl = 0

    def __init__(
        self,
        committed: int,
        end: int,
        hits: Sequence[MclHit] = (),
        log: list[str] | None = None,
        committed_since: float | None = None,
        committed_before: tuple[int, float] | None = None,
    ):
        self.committed, self.end = committed, end
        self.hits = list(hits)
        self.log = log if log is not None else []
        # when the broker's log of the group's commits says the committed offset got its value
        # (None: that log cannot be read, as without an ACL on __consumer_offsets), and the
        # value it had before then, with when that was committed
        self.committed_since = committed_since
        self.committed_before = committed_before

    def partitions(self, topic: str) -> int:
        return 1 if topic == TOPIC else 0

    def sample(self, topics: Iterable[str], group: str) -> list[OffsetSample]:
        self.log.append("offsets")
        now = time.time()
        return [OffsetSample(t, 0, self.committed, 0, self.end, 1, now) for t in topics if t == TOPIC]

    def message_time(self, topic: str, partition: int, offset: int) -> datetime | None:
        return T0

    def offset_for_time(self, topic: str, partition: int, when: datetime) -> int | None:
        return 0

    def find(
        self, topic: str, partition: int, urns: set[str], start: int, stop: int, cap: int
    ) -> tuple[list[MclHit], bool]:
        return [h for h in self.hits if h.urn in urns and start <= h.offset < stop], True

    def commit_times(
        self, group: str, wanted: set[tuple[str, int]], lookback: float
    ) -> dict[tuple[str, int], CommitRun] | None:
        self.log.append("commit log")
        if self.committed_since is None:
            return None
        window_start = time.time() - lookback
        if self.committed_since < window_start:  # as the broker's log read back `lookback`
            return {w: CommitRun(None, window_start) for w in wanted}
        before, before_since = self.committed_before or (None, None)
        run = CommitRun(self.committed, self.committed_since, before, before_since)
        return {w: run for w in wanted}

    def close(self) -> None:
        pass


class FakeState:
    """No history; remembers what it was told."""

    def __init__(self) -> None:
        self.recorded: list[Finding] = []
        self.runs_recorded: list[tuple[str, RunSummary]] = []

    def history(self, keys: Iterable[str]) -> dict[str, History]:
        return {}

    def record_findings(
        self,
        findings: Iterable[Finding],
        now: datetime,
        scope_types: tuple[str, ...],
        forget_unseen: bool = True,
    ) -> None:
        self.recorded.extend(findings)

    def previous_samples(self, group: str) -> dict[tuple[str, int], OffsetSample]:
        return {}

    def record_samples(self, group: str, samples: Iterable[OffsetSample]) -> None:
        pass

    def record_run(self, scope: str, run: RunSummary) -> None:
        self.runs_recorded.append((scope, run))

    def runs(self, scope: str, limit: int = 100) -> list[RunSummary]:
        return [run for s, run in self.runs_recorded if s == scope][-limit:]

    def close(self) -> None:
        pass
