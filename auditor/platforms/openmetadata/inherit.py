"""Owners and domains an OpenMetadata entity inherits from its parents (setInheritedFields).

A table or stored procedure without owners takes its schema's, a schema its database's; the
same for domains, and a database takes its service's domains (auditor/platforms/openmetadata/derive.py
INHERITS). The parent is the `contains` (0) relationship to the entity, owners are relation
owns (8) to it, domains relation has (10) from a domain. A parent's own relations are read
once per parent type for a stream (one query), or for the parents asked about (a read).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from auditor.backends.dbapi import sql_of
from auditor.platforms.openmetadata.derive import INHERITS

CONTAINS, OWNS, HAS = 0, 8, 10
IN_LIST = 100


class Inheritance:
    """Resolves inherited owners and domains; caches each parent type's relations."""

    def __init__(self, engine: Any, *, whole: bool = False) -> None:
        self.engine, self.whole = engine, whole
        # parent type -> parent id -> (own owners, own domains, its own parent id)
        self._known: dict[str, dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]], str | None]]] = {}
        self._whole: set[str] = set()
        self._done: dict[tuple[str, str | None], tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        self._services: dict[tuple[str, str | None], str | None] = {}  # (type, parent) -> service

    def _load(self, kind: str, ids: Iterable[str] | None) -> None:
        if ids is None and kind in self._whole:
            return  # read already (the stream's case, once per row)
        grand = INHERITS.get(kind, ("", ()))[0]
        table = self._known.setdefault(kind, {})
        if ids is None:
            if kind in self._whole:
                return
            self._whole.add(kind)
            chunks: list[list[str] | None] = [None]
        else:
            wanted = sorted({i for i in ids if i and i not in table})
            if not wanted:
                return
            chunks = [wanted[i : i + IN_LIST] for i in range(0, len(wanted), IN_LIST)]
            for i in wanted:
                table[i] = ([], [], None)
        sql = (
            "SELECT toId, fromId, fromEntity, relation FROM entity_relationship "
            "WHERE toEntity = :kind AND (relation = :owns OR (relation = :has AND fromEntity = 'domain') "
            "OR (relation = :contains AND fromEntity = :grand))"
        )
        with self.engine.connect() as conn:
            for chunk in chunks:
                params: dict[str, Any] = {"kind": kind, "owns": OWNS, "has": HAS, "contains": CONTAINS}
                params["grand"] = grand
                query = sql
                if chunk is not None:
                    query += " AND toId IN (" + ", ".join(f":i{n}" for n in range(len(chunk))) + ")"
                    params.update({f"i{n}": v for n, v in enumerate(chunk)})
                for to_id, from_id, from_entity, relation in conn.execute(sql_of(self.engine)(query), params):
                    owners, domains, parent = table.setdefault(str(to_id), ([], [], None))
                    ref = {"id": str(from_id), "type": str(from_entity)}
                    if relation == OWNS:
                        owners.append(ref)
                    elif relation == HAS:
                        domains.append(ref)
                    else:
                        table[str(to_id)] = (owners, domains, str(from_id))

    def effective(
        self, kind: str, parent_id: str | None, depth: int = 0
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """A parent's owners and domains as its own document holds them: its own, else what it
        inherits itself (marked inherited)."""
        if not kind or not parent_id:
            return [], []
        self._load(kind, None if self.whole else [parent_id])
        owners, domains, grand = self._known.get(kind, {}).get(parent_id, ([], [], None))
        if (not owners or not domains) and kind in INHERITS and grand and depth < 4:
            grand_kind, what = INHERITS[kind]
            up_owners, up_domains = self.effective(grand_kind, grand, depth + 1)
            if not owners and "owners" in what:
                owners = up_owners
            if not domains and "domains" in what:
                domains = up_domains
        return owners, domains

    def preload(self, entity_type: str, parent_ids: Iterable[str]) -> None:
        """Read the parents of a batch of rows, and theirs, up to the service: one IN list per
        level (a re-read asks each parent once, not once per row)."""
        kind = INHERITS.get(entity_type, ("", ()))[0]
        ids = {i for i in parent_ids if i}
        while kind and ids and not self.whole:
            self._load(kind, ids)
            known = self._known.get(kind, {})
            ids = {up for i in ids if (up := known.get(i, ([], [], None))[2])}
            kind = INHERITS.get(kind, ("", ()))[0]

    def service_of(self, entity_type: str, parent_id: str | None) -> str | None:
        """The service of an entity of this type whose parent is `parent_id`, walked up the
        `contains` rows (a table's schema, its database, its service): a schema's or a table's
        service is its database's (the repositories' setDefaultFields). A stream's (`whole`) answers
        are kept per parent: the tables of a schema ask the same walk, one each."""
        if self.whole and (entity_type, parent_id) in self._services:
            return self._services[entity_type, parent_id]
        found = self._service_of(entity_type, parent_id)
        if self.whole:
            self._services[entity_type, parent_id] = found
        return found

    def _service_of(self, entity_type: str, parent_id: str | None) -> str | None:
        kind = INHERITS.get(entity_type, ("", ()))[0]
        for _ in range(4):
            if not kind or not parent_id:
                return None
            if kind.endswith("Service"):
                return parent_id
            self._load(kind, None if self.whole else [parent_id])
            parent_id = self._known.get(kind, {}).get(parent_id, ([], [], None))[2]
            kind = INHERITS.get(kind, ("", ()))[0]
        return None

    def inherited(
        self, entity_type: str, parent_id: str | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """What an entity of this type whose parent is `parent_id` inherits (owners, domains)."""
        if entity_type not in INHERITS:
            return [], []
        if self.whole and (entity_type, parent_id) in self._done:
            return self._done[entity_type, parent_id]
        kind, what = INHERITS[entity_type]
        owners, domains = self.effective(kind, parent_id)
        mark = lambda refs: [dict(r, inherited=True) for r in refs]  # noqa: E731
        got = (mark(owners) if "owners" in what else []), (mark(domains) if "domains" in what else [])
        if self.whole:  # a stream: each parent's answer once (as many as the parents read whole)
            self._done[entity_type, parent_id] = got
        return got
