"""What the OpenMetadata backends return: an entity's row (with owners and tags), a doc, a retry."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class OmRow:
    """One entity row: its id, the raw JSON, the generated columns, its owners and tag usages."""

    id: str
    json: Any  # text (MySQL/MariaDB) or already decoded (PostgreSQL jsonb)
    updated_at: int | None  # the generated updatedAt column (epoch milliseconds)
    deleted: bool | None  # the generated deleted column
    owners: tuple[dict[str, Any], ...] = ()  # entity_relationship owns=8: {"id", "type"}
    tags: tuple[dict[str, Any], ...] = ()  # tag_usage: {"tagFQN", "source", "labelType", "state"}
    domains: tuple[dict[str, Any], ...] = ()  # entity_relationship has=10 from a domain (or inherited)
    own_hash: str | None = None  # the hash of the JSON's FQN, where the children's tags were looked up
    # entity_relationship rows to the entity a document derives from besides owners and domains
    # (auditor/platforms/openmetadata/relations.py): {"r": relation, "id", "type", "json"}
    links: tuple[dict[str, Any], ...] = ()
    # the JSON's text as read, kept beside `json` once that holds it decoded: a row put aside
    # while its documents are read (spill.RowFile) is written as this text, a copy of bytes,
    # where pickling the decoded entity cost 7 us a row; read back only if its pair differs
    text: str | bytes | None = field(default=None, compare=False, repr=False)

    @property
    def fingerprint(self) -> tuple[Any, ...]:
        """What changes when the entity is written (re-observation compares it)."""
        owners = tuple(sorted(str(o.get("id")) for o in self.owners))
        tags = tuple(sorted(str(t.get("tagFQN")) for t in self.tags))
        domains = tuple(sorted(str(d.get("id")) for d in self.domains))  # "add assets" moves only these
        # a lineage edge, a follower or a vote moves only entity_relationship, never the row
        links = tuple(
            sorted((int(x.get("r") or 0), str(x.get("id")), str(x.get("json"))) for x in self.links)
        )
        return (self.updated_at, self.deleted, owners, tags, domains, links)


_new, _set = object.__new__, object.__setattr__


def om_row(
    row_id: str,
    json: Any,
    updated_at: int | None,
    deleted: bool | None,
    owners: tuple[dict[str, Any], ...],
    tags: tuple[dict[str, Any], ...],
    domains: tuple[dict[str, Any], ...],
    own_hash: str | None = None,
    links: tuple[dict[str, Any], ...] = (),
    text: str | bytes | None = None,
) -> OmRow:
    """`OmRow(...)` with every field given, made without the frozen dataclass's `__init__` (which
    sets each field through `object.__setattr__`: 1.4 us a row where this takes 0.5, and a scan
    makes one or two for every row); the same object, equal to the one `__init__` makes."""
    row = _new(OmRow)
    _set(row, "__dict__", {"id": row_id, "json": json, "updated_at": updated_at, "deleted": deleted,
                           "owners": owners, "tags": tags, "domains": domains, "own_hash": own_hash,
                           "links": links, "text": text})  # fmt: skip
    return row


@dataclass(frozen=True)
class OmDoc:
    """One search document: its `_id`, the index it was read from and its (filtered) source."""

    id: str
    index: str
    source: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RetryRow:
    """A `search_index_retry_queue` row: work the server still owes the search index."""

    entity_id: str
    entity_fqn: str
    status: str
    retry_count: int | None = None
    failure_reason: str | None = None
    entity_type: str | None = None
    claimed_at: datetime | None = None
