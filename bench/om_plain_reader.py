"""A plain reader of what an OpenMetadata scan reads: the yardstick of the scan's own CPU (issue
53: "one that reads the same rows (the relationship and tag tables included) and documents,
parses both and compares each pair as plain dictionaries, nothing more").

Nothing of the project's reading: the database's own driver (a DBAPI connection), urllib3 and
orjson. It reads every entity table's `id` and JSON (and its name hash, to find its tags), the
`entity_relationship` rows the scan's documents take fields from (owners, domains, containers,
follows, upstream, votes) and `tag_usage`; every index's documents with the fields the scan asks
for, scrolled 2,000 a page; parses each row's JSON and each document; puts each row's
relationships and tags on it as plain lists; and compares each row with its document as plain
dictionaries over the compared fields (`plain`). What it does with a pair is count whether it differs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson
import urllib3

PAGE = 2000
RELATIONS = (0, 8, 10, 11, 13, 18)  # contains, owns, has, follows, upstream, voted
SCALARS = ("version", "updatedAt", "name", "fullyQualifiedName", "description")


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

    def links(self) -> dict[str, list[dict[str, Any]]]:
        """toId -> its relationship rows, each parsed."""
        by_to: dict[str, list[dict[str, Any]]] = {}
        sql = (
            f"SELECT toId, fromId, fromEntity, relation, {self._text('json')} FROM entity_relationship "
            f"WHERE relation IN ({', '.join(map(str, RELATIONS))})"
        )
        for to_id, from_id, from_entity, relation, raw in self._rows(sql):
            link = {
                "id": from_id,
                "type": from_entity,
                "r": relation,
                "json": orjson.loads(raw) if raw else None,
            }
            by_to.setdefault(to_id, []).append(link)
        return by_to

    def tags(self) -> dict[str, list[dict[str, Any]]]:
        """targetFQNHash -> its labels."""
        by_target: dict[str, list[dict[str, Any]]] = {}
        sql = "SELECT targetFQNHash, tagFQN, source, labelType, state FROM tag_usage"
        for target, fqn, source, label, state in self._rows(sql):
            by_target.setdefault(target, []).append(
                {"tagFQN": fqn, "source": source, "labelType": label, "state": state}
            )
        return by_target

    def table(
        self, table: str, links: dict[str, list[dict[str, Any]]], tags: dict[str, list[dict[str, Any]]]
    ) -> dict[str, dict[str, Any]]:
        """id -> the row's JSON parsed, with its owners, domains and tags as plain lists."""
        cols = self._columns(table)
        hashed = "fqnhash" if "fqnhash" in cols else "namehash" if "namehash" in cols else "NULL"
        out: dict[str, dict[str, Any]] = {}
        for entity_id, raw, key in self._rows(f"SELECT id, {self._text('json')}, {hashed} FROM {table}"):
            row = orjson.loads(raw)
            mine = links.get(entity_id, ())
            row["owners"] = [{"id": x["id"], "type": x["type"]} for x in mine if x["r"] == 8]
            row["domains"] = [{"id": x["id"]} for x in mine if x["r"] == 10 and x["type"] == "domain"]
            row["tags"] = [{"tagFQN": t["tagFQN"]} for t in tags.get(key, ())] if key else []
            out[entity_id] = row
        return out

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

    def read(self, pairs: Iterable[tuple[str, str]], source: Sequence[str]) -> tuple[int, int]:
        """Every (table, index) pair read and compared: (rows and documents read, pairs that differ)."""
        links, tags = self.links(), self.tags()
        read = differ = 0
        for table, index in pairs:
            rows, docs = self.table(table, links, tags), self.docs(index, source)
            read += len(rows) + len(docs)
            for entity_id in rows.keys() | docs.keys():
                row, doc = rows.get(entity_id), docs.get(entity_id)
                if row is None or doc is None:
                    differ += 1
                    continue
                differ += plain(row) != plain(doc)
        return read, differ


def plain(entity: dict[str, Any]) -> dict[str, Any]:
    """The compared fields as a plain dictionary: the scalars as they are, the lists as the sorted
    ids or tag names in them (a document's references carry names a row's do not)."""
    out = {k: entity.get(k) for k in SCALARS}
    for field, key in (("owners", "id"), ("domains", "id"), ("tags", "tagFQN")):
        out[field] = sorted(str(x.get(key)) for x in entity.get(field) or () if isinstance(x, dict))
    out["tags"] = [t for t in out["tags"] if not t.startswith("Tier.")]  # the document's `tier`
    return out
