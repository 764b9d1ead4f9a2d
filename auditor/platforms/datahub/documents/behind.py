"""An index ahead of its store: the search side saw a later write than the aspect table holds.

DataHub writes an aspect's system-metadata document (`system_metadata_service_v1`) from the MCL
it applies: its `runId` and `lastUpdated` are the MCL's `systemMetadata.runId` and
`lastObserved`. A document whose `lastUpdated` is later than its row's `lastObserved`, under
another `runId`, records a write the row does not show. Two things leave one:

- the store is behind: a database replica that lags, or a database restored from an older
  backup. The index applied the newer write; the row is the older one. The entity document
  then holds content the row does not have (the newer write's values).
- a re-emission: DataHub's backfill steps (datahub-upgrade's `AbstractMCLStep` subclasses: an
  UPSERT MCL per aspect with the step's id as `runId` and the run's time as `lastObserved`) and
  a RESTATE replay send the row's own content again without writing the row. The entity
  document holds the row's content: nothing differs but the system metadata's bookkeeping.

They are told apart by content: a later write whose aspect's fields in the document differ from
what the row projects is the store behind (never repaired by writing the row over it); one whose
fields agree is a re-emission (not a divergence at all). An aspect that projects no field of the
document cannot show a difference: its later write counts as a re-emission.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from auditor.platforms.datahub.documents.compare import FieldDiff
from auditor.platforms.datahub.documents.entity import JoinedEntity
from auditor.platforms.datahub.documents.expected import ExpectedDocument

REMOVED = "removed"  # written from the `status` aspect (not in `field_aspects`)


@dataclass(frozen=True, slots=True)
class LaterWrite:
    """One aspect whose system-metadata document records a later write than its row."""

    aspect: str
    index_run_id: str | None
    store_run_id: str | None
    index_updated: int  # the document's `lastUpdated`, epoch ms
    store_observed: int  # the row's `systemMetadata.lastObserved`, epoch ms

    @property
    def ahead_seconds(self) -> float:
        return (self.index_updated - self.store_observed) / 1000.0

    @property
    def index_time(self) -> datetime:
        return datetime.fromtimestamp(self.index_updated / 1000.0, UTC)

    def to_json(self, fields: Iterable[str] = ()) -> dict[str, Any]:
        return {
            "aspect": self.aspect,
            "index_run_id": self.index_run_id,
            "store_run_id": self.store_run_id,
            "index_updated": _iso(self.index_updated),
            "store_observed": _iso(self.store_observed),
            "ahead_seconds": round(self.ahead_seconds, 3),
            "fields": sorted(fields),
        }


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000.0, UTC).isoformat(timespec="milliseconds")


def _ms(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def later_write(aspect: str, row_meta: Mapping[str, Any], doc: Mapping[str, Any] | None) -> LaterWrite | None:
    """The later write `doc` records over the row's system metadata, if it records one: a later
    `lastUpdated` than the row's `lastObserved` and another `runId`."""
    if doc is None:
        return None
    updated, observed = _ms(doc.get("lastUpdated")), _ms(row_meta.get("lastObserved"))
    if updated is None or observed is None or updated <= observed:
        return None
    run, own = doc.get("runId"), row_meta.get("runId")
    if run == own:
        return None
    return LaterWrite(aspect, _text(run), _text(own), updated, observed)


def backfilled(doc: Mapping[str, Any], written: datetime | None, steps: frozenset[str]) -> bool:
    """Whether the system-metadata document `doc` is a finished upgrade step's re-emission of its
    row: its `runId` is the id of a step the deployment recorded as finished (`steps`) and its
    `lastUpdated` (the step's run) is no earlier than the row's version was `written`, so the step
    re-emitted that very version. Such a document keeps the step's `runId` and time while the row
    keeps the ingestion's, whichever `lastObserved` is later (a later re-ingestion that changed
    nothing moves the row's and emits no MCL): nothing to repair."""
    run, updated = doc.get("runId"), _ms(doc.get("lastUpdated"))
    if not isinstance(run, str) or run not in steps or updated is None or written is None:
        return False
    return updated >= int(written.timestamp() * 1000)


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def later_writes(entity: JoinedEntity) -> dict[str, LaterWrite]:
    """Per aspect with a row, the later write its system-metadata document records (if any)."""
    if entity.rows is None or not entity.system_metadata:
        return {}
    docs = {d.get("aspect"): d for d in entity.system_metadata}
    out = {}
    for aspect in entity.rows.rows:
        found = later_write(aspect, entity.system_metadata_of(aspect) or {}, docs.get(aspect))
        if found is not None:
            out[aspect] = found
    return out


def behind(
    later: Mapping[str, LaterWrite], expected: ExpectedDocument, diffs: Iterable[FieldDiff]
) -> dict[str, list[str]]:
    """Of the later writes, the ones the row lacks: aspect -> the document's fields it wrote that
    differ from what the row projects (a field several aspects write counts for each)."""
    if not later:
        return {}
    out: dict[str, list[str]] = {}
    for d in diffs:
        writers = ("status",) if d.field == REMOVED else expected.field_aspects.get(d.field, ())
        for aspect in writers:
            if aspect in later:
                out.setdefault(aspect, []).append(d.field)
    return out
