"""A plain reader of what an OpenMetadata scan reads: the yardstick of the scan's own CPU (issue
53: "one that reads the same rows (the relationship and tag tables included) and documents,
parses both and compares each pair as plain dictionaries, nothing more").

Nothing of the project's reading: the database's own driver (a DBAPI connection), urllib3 and
orjson. It reads every entity table's `id`, JSON and name hash, the `entity_relationship` rows
the documents take fields from (contains, owns, has, follows, upstream, voted) and `tag_usage`;
every index's documents with the fields the scan asks for, scrolled 2,000 a page; parses each row's
JSON, each relationship's and each document; and compares each row with its document as plain
dictionaries over the fields the scan compares (`plain_row`, `plain_doc`): the scalars and
`deleted`, owners and domains (a table's or schema's inherited from its parent when it has none of
its own), tags (its own usages, its children's for the types whose documents carry them: every
usage under its name hash), the tier, the classification and glossary tag names, the service (up
the `contains` rows), the upstream entities, the followers and the votes. What it does with a pair
is count whether it differs: on a catalog where the scan finds nothing it finds nothing (the bench
prints both counts), so it makes the comparison the scan makes, done the plainest way.

(Until 2026-12-08 it compared the scalars, own tags, owners and domains only: on the bench's
consistent 20,000-entity catalog it counted 8,701 pairs as differing, the inherited owners and the
children's tags it did not read, and the fields it read and did not compare.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson
import urllib3

PAGE = 2000
CONTAINS, OWNS, HAS, FOLLOWS, UPSTREAM, VOTED = 0, 8, 10, 11, 13, 18
RELATIONS = (CONTAINS, OWNS, HAS, FOLLOWS, UPSTREAM, VOTED)
SCALARS = ("version", "updatedAt", "name", "fullyQualifiedName", "description")
# the types whose documents carry their children's tags (columns, tasks, fields)
CHILD_TAGGED = {"table", "pipeline", "topic", "container", "dashboardDataModel", "mlmodel", "searchIndex"}
# the types that take their parent's owners and domains when they have none (the parent's type)
INHERITS = {"table": "databaseSchema", "storedProcedure": "databaseSchema", "databaseSchema": "database"}
Links = dict[str, list[tuple[str, str, int, Any]]]  # toId -> (fromId, fromEntity, relation, json)
Memo = tuple[dict[str, tuple[list[str], list[str]]], dict[str, str | None]]


class OmPlainReader:
    def __init__(self, dbapi: Any, postgres: bool, search_url: str) -> None:
        self.db, self.postgres = dbapi, postgres
        self.base = search_url.rstrip("/")
        self.http = urllib3.PoolManager(maxsize=2)

    def _rows(self, sql: str) -> Sequence[Any]:
        cursor = self.db.cursor()
        try:
            cursor.execute(sql)
            return cursor.fetchall()
        finally:
            cursor.close()

    def _columns(self, table: str) -> set[str]:
        cursor = self.db.cursor()
        try:
            cursor.execute(f"SELECT * FROM {table} WHERE 1 = 0")
            return {str(d[0]).lower() for d in cursor.description}
        finally:
            cursor.close()

    def _text(self, column: str) -> str:
        return f"{column}::text" if self.postgres else column

    def links(self) -> Links:
        """toId -> its relationship rows, each one's JSON parsed."""
        by_to: Links = {}
        sql = (
            f"SELECT toId, fromId, fromEntity, relation, {self._text('json')} FROM entity_relationship "
            f"WHERE relation IN ({', '.join(map(str, RELATIONS))})"
        )
        for to_id, from_id, from_entity, relation, raw in self._rows(sql):
            link = (from_id, from_entity, relation, orjson.loads(raw) if raw else None)
            by_to.setdefault(to_id, []).append(link)
        return by_to

    def tags(self) -> tuple[dict[str, list[tuple[str, str]]], dict[str, list[tuple[str, str]]]]:
        """(targetFQNHash -> its labels, name hash -> every label under it), each label (tag, source)."""
        own: dict[str, list[tuple[str, str]]] = {}
        under: dict[str, list[tuple[str, str]]] = {}
        sql = "SELECT targetFQNHash, tagFQN, source, labelType, state FROM tag_usage"  # the scan's columns
        for target, fqn, source, _, _ in self._rows(sql):
            label = (fqn, "glossary" if source in (1, "1", "Glossary") else "classification")
            own.setdefault(target, []).append(label)
            cut = target.rfind(".")
            while cut > 0:
                under.setdefault(target[:cut], []).append(label)
                cut = target.rfind(".", 0, cut)
        return own, under

    def table(self, entity_type: str, table: str) -> dict[str, tuple[dict[str, Any], str | None]]:
        """id -> (the row's JSON parsed, its name hash)."""
        cols = self._columns(table)
        hashed = "fqnhash" if "fqnhash" in cols else "namehash" if "namehash" in cols else "NULL"
        return {
            entity_id: (orjson.loads(raw), key)
            for entity_id, raw, key in self._rows(f"SELECT id, {self._text('json')}, {hashed} FROM {table}")
        }

    def _call(self, method: str, path: str, body: dict[str, Any]) -> Any:
        response = self.http.request(
            method, self.base + path, body=orjson.dumps(body), headers={"Content-Type": "application/json"}
        )
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: {response.status} {response.data[:300]!r}")
        return orjson.loads(response.data)

    def docs(self, index: str, source: Sequence[str]) -> dict[str, dict[str, Any]]:
        """`_id` -> `_source` of every document of `index` (a scroll in `_doc` order)."""
        body = {"size": PAGE, "sort": ["_doc"], "query": {"match_all": {}}, "_source": list(source)}
        page = self._call("POST", f"/{index}/_search?scroll=5m", body)
        out: dict[str, dict[str, Any]] = {}
        scroll = page.get("_scroll_id")
        try:
            while True:
                hits = page["hits"]["hits"]
                for hit in hits:
                    out[hit["_id"]] = hit.get("_source") or {}
                if len(hits) < PAGE:
                    return out
                page = self._call("POST", "/_search/scroll", {"scroll": "5m", "scroll_id": scroll})
                scroll = page.get("_scroll_id") or scroll
        finally:
            self._call("DELETE", "/_search/scroll", {"scroll_id": [scroll]})

    def read(self, pairs: Iterable[tuple[str, str, str]], source: Sequence[str]) -> tuple[int, int]:
        """Every (entity type, table, index) read and compared: (rows and documents read, pairs
        that differ)."""
        links, (own, under) = self.links(), self.tags()
        memo: Memo = ({}, {})  # each parent's owners and domains, each entity's service: once a read
        read = differ = 0
        for entity_type, table, index in pairs:
            rows, docs = self.table(entity_type, table), self.docs(index, source)
            read += len(rows) + len(docs)
            for entity_id in rows.keys() | docs.keys():
                row, doc = rows.get(entity_id), docs.get(entity_id)
                if row is None or doc is None:
                    differ += 1
                    continue
                labels = own.get(row[1], []) if row[1] else []
                if entity_type in CHILD_TAGGED and row[1]:
                    labels = labels + under.get(row[1], [])
                differ += plain_row(entity_type, entity_id, row[0], labels, links, memo) != plain_doc(doc)
        return read, differ


def _tier_apart(names: Iterable[str]) -> list[str]:
    return sorted({n for n in names if not n.startswith("Tier.")})


def _own_and_parent(
    entity_id: str, links: Links, parent_type: str | None
) -> tuple[list[str], list[str], str | None]:
    owners, domains, parent = [], [], None
    for from_id, from_entity, relation, _ in links.get(entity_id, ()):
        if relation == OWNS:
            owners.append(from_id)
        elif relation == HAS and from_entity == "domain":
            domains.append(from_id)
        elif relation == CONTAINS and from_entity == parent_type:
            parent = from_id
    return owners, domains, parent


def _effective(entity_type: str, entity_id: str, links: Links, memo: Memo) -> tuple[list[str], list[str]]:
    """Owners and domains, each inherited from the parent when the entity has none."""
    if entity_id in memo[0]:
        return memo[0][entity_id]
    parent_type = INHERITS.get(entity_type) or ("databaseService" if entity_type == "database" else None)
    owners, domains, parent = _own_and_parent(entity_id, links, parent_type)
    if parent and (not owners or not domains):
        up_owners, up_domains = _effective(parent_type or "", parent, links, memo)
        if not owners and entity_type in INHERITS:
            owners = up_owners
        domains = domains or up_domains
    if entity_type not in CHILD_TAGGED:  # a parent (a table is nobody's)
        memo[0][entity_id] = owners, domains
    return owners, domains


def _service(entity_id: str, links: Links, memo: Memo, depth: int = 0) -> str | None:
    """The service up the `contains` rows (a table's through its schema and database)."""
    if entity_id in memo[1]:
        return memo[1][entity_id]
    parents = [(f, e) for f, e, r, _ in links.get(entity_id, ()) if r == CONTAINS]
    for from_id, from_entity in sorted(parents):
        if from_entity.endswith("Service"):
            return from_id
    for from_id, _ in sorted(parents):
        if depth < 4:
            found = memo[1][from_id] = _service(from_id, links, memo, depth + 1)
            if found:
                return found
    return None


def plain_row(
    entity_type: str,
    entity_id: str,
    row: dict[str, Any],
    labels: list[tuple[str, str]],
    links: Links,
    memo: Memo,
) -> dict[str, Any]:
    """The row's compared fields as a plain dictionary, its relationships and tags put on it."""
    out = {k: row.get(k) for k in SCALARS}
    out["deleted"] = bool(row.get("deleted"))
    owners, domains = _effective(entity_type, entity_id, links, memo)
    out["owners"], out["domains"] = sorted(owners), sorted(domains)
    names = [fqn for fqn, _ in labels]
    out["tags"] = _tier_apart(names)
    out["tier"] = next((n for n in names if n.startswith("Tier.")), None)
    out["classificationTags"] = _tier_apart(f for f, s in labels if s == "classification")
    out["glossaryTags"] = _tier_apart(f for f, s in labels if s == "glossary")
    mine = links.get(entity_id, ())
    out["service"] = _service(entity_id, links, memo)
    out["upstream"] = sorted({f for f, _, r, _ in mine if r == UPSTREAM})
    out["followers"] = sorted({f for f, _, r, _ in mine if r == FOLLOWS})
    votes = [j.strip('"') if isinstance(j, str) else j for _, _, r, j in mine if r == VOTED]
    out["totalVotes"] = max(votes.count("votedUp") - votes.count("votedDown"), 0)
    return out


def _ids(refs: Any, key: str = "id") -> list[str]:
    return sorted({str(x.get(key)) for x in refs or () if isinstance(x, dict)})


def plain_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """The document's compared fields as a plain dictionary, shaped as `plain_row`'s."""
    out = {k: doc.get(k) for k in SCALARS}
    out["deleted"] = bool(doc.get("deleted"))
    out["owners"], out["domains"] = _ids(doc.get("owners")), _ids(doc.get("domains"))
    out["tags"] = _tier_apart(_ids(doc.get("tags"), "tagFQN"))
    tier = doc.get("tier")
    out["tier"] = tier.get("tagFQN") if isinstance(tier, dict) else None
    out["classificationTags"] = _tier_apart(doc.get("classificationTags") or ())
    out["glossaryTags"] = _tier_apart(doc.get("glossaryTags") or ())
    service = doc.get("service")
    out["service"] = service.get("id") if isinstance(service, dict) else None
    out["upstream"] = sorted(
        {str((x.get("fromEntity") or {}).get("id")) for x in doc.get("upstreamLineage") or ()}
    )
    followers = doc.get("followers") or ()
    out["followers"] = sorted({str(x.get("id") if isinstance(x, dict) else x) for x in followers})
    out["totalVotes"] = doc.get("totalVotes") or 0
    return out
