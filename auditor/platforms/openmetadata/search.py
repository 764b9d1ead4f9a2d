"""OpenMetadata's search side: `<clusterAlias>_<entity>_search_index`, read in id order.

An index is read through its name or, when the name does not exist, its alias (after
OpenMetadata's own recreateIndex the name may itself be an alias). OpenMetadata maps `id` as
text in several releases and `_id` cannot be sorted on Elasticsearch 8+, so the documents are
read with a scroll in `_doc` order (the cheapest read) and put in id order through a temporary
file of sorted runs (auditor/platforms/openmetadata/spill.py): memory stays flat whatever the number of
documents; the disk holds only the compared fields.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from auditor.backends.search import SearchIndex
from auditor.backends.search_retry import not_found
from auditor.errors import BackendUnavailable
from auditor.platforms.openmetadata.fields import DOC_SOURCE, Key
from auditor.platforms.openmetadata.naming import OmEntity
from auditor.platforms.openmetadata.records import OmDoc
from auditor.platforms.openmetadata.spill import SortedDocs

PAGE = 2000


def _body(response: Any) -> Any:
    return response.body if hasattr(response, "body") else response


class OmSearch:
    """Read access to OpenMetadata's entity indices (writes go through IndexWriter)."""

    def __init__(self, search: SearchIndex, cluster_alias: str = "") -> None:
        self.search = search
        self.client = search.client
        self.cluster_alias = cluster_alias
        self.description = search.description
        self.docs_read = 0
        self.spill_dir: str | None = None  # where the sort spills (None: the system's temp dir)
        self.readers = 0  # a whole-table scan's spills made by a reader process (settings.scan_readers)

    def _fail(self, what: str, exc: Exception) -> BackendUnavailable:
        return BackendUnavailable(f"search cluster {self.description}: {what} failed: {exc}")

    def resolve(self, entity: OmEntity) -> tuple[str | None, list[str]]:
        """The name to read the entity's docs through (its index name, else its own alias) and the
        concrete indices behind it; (None, []) when neither exists."""
        for name in (entity.index_name(self.cluster_alias), entity.aliases(self.cluster_alias)[0]):
            try:
                found = self.client.indices.get_alias(index=name)
            except Exception as exc:
                if not_found(exc):
                    continue
                raise self._fail(f"resolving {name}", exc) from None
            return name, sorted(_body(found))
        return None, []

    def resolve_all(self, entities: Sequence[OmEntity]) -> dict[str, tuple[str, list[str]]]:
        """`resolve` for many types in one request (the names and aliases of all of them, the
        missing ignored): entity type -> (name, concrete indices), the types with neither left out."""
        names = {
            e.entity_type: (e.index_name(self.cluster_alias), e.aliases(self.cluster_alias)[0])
            for e in entities
        }
        asked = sorted({n for pair in names.values() for n in pair})
        if not asked:
            return {}
        try:
            found = _body(self.client.indices.get_alias(index=",".join(asked), ignore_unavailable=True))
        except Exception as exc:
            if not_found(exc):
                return {}
            raise self._fail("resolving the entity indices", exc) from None
        out: dict[str, tuple[str, list[str]]] = {}
        for kind, pair in names.items():
            for name in pair:
                behind = sorted(
                    i for i, held in found.items() if i == name or name in (held.get("aliases") or {})
                )
                if behind:
                    out[kind] = (name, behind)
                    break
        return out

    def find_everywhere(
        self, entities: Sequence[OmEntity], asked: str, *, by_id: bool
    ) -> list[tuple[OmEntity, str]]:
        """(entity type, `_id`) of every document whose id (or fullyQualifiedName) is `asked`, in
        the indices of these types: one request resolves them, one search reads them all (a
        triage of an orphan asked each type's index on its own, two round trips a type)."""
        resolved = self.resolve_all(entities)
        if not resolved:
            return []
        kinds = {e.entity_type: e for e in entities}
        of_index = {i: kinds[kind] for kind, (_, behind) in resolved.items() for i in behind}
        names = ",".join(sorted({name for name, _ in resolved.values()}))
        query = {"ids": {"values": [asked]}} if by_id else {"term": {"fullyQualifiedName": asked}}
        body = {"size": 10 * len(resolved), "query": query, "_source": list(DOC_SOURCE)}
        try:
            hits = self.search._call(self.client.search, index=names, body=body, ignore_unavailable=True)
        except Exception as exc:
            raise self._fail(f"reading {names}", exc) from None
        found = set()
        for hit in _body(hits)["hits"]["hits"]:
            self.docs_read += 1
            if hit["_index"] in of_index:
                found.add((of_index[hit["_index"]].entity_type, hit["_id"]))
        order = {e.entity_type: n for n, e in enumerate(entities)}
        return [(kinds[k], i) for k, i in sorted(found, key=lambda f: (order[f[0]], f[1]))]

    def _scroll(
        self, name: str, source: Sequence[str] | bool, few: bool = False
    ) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """Every doc behind `name` in `_doc` order. `few` (its count says it fits in a page): a
        plain search first, the whole answer when it does (one round trip, where a scroll's
        opening, its next page and its clearing were three); a full page goes on to the scroll."""
        body: dict[str, Any] = {"size": PAGE, "sort": ["_doc"], "query": {"match_all": {}}}
        body["_source"] = source if isinstance(source, bool) else list(source)
        try:
            if few:
                hits = _body(self.search._call(self.client.search, index=name, body=body))["hits"]["hits"]
                if len(hits) < PAGE:
                    self.search.docs_read += len(hits)
                    for hit in hits:
                        self.docs_read += 1
                        yield hit["_id"], hit["_index"], hit.get("_source") or {}
                    return
                del hits
            for hit in self.search.scroll_hits(name, body):
                self.docs_read += 1
                yield hit["_id"], hit["_index"], hit.get("_source") or {}
        except Exception as exc:  # scroll_hits raises the client's own errors
            raise self._fail(f"reading {name}", exc) from None

    def spill(
        self,
        name: str,
        key: Callable[[dict[str, Any]], Key | None] | None = None,
        source: Sequence[str] | bool = DOC_SOURCE,
        ids: frozenset[str] | None = None,
        stop: threading.Event | None = None,
        few: bool = False,
    ) -> SortedDocs:
        """Every doc behind `name`, put aside to be read back in `_id` byte order (a doc under two
        indices: both, in turn). `key`: each doc's comparison key; `ids`: only these (the rest is
        skipped as it is read); `stop`: once set, the read ends early (the caller gave up); `few`:
        see `_scroll`."""
        docs = SortedDocs(self.spill_dir)
        try:
            for doc_id, index, src in self._scroll(name, source, few):
                if stop is not None and stop.is_set():
                    break
                if ids is None or doc_id in ids:
                    docs.add(doc_id, index, key(src) if key else None, src)
            return docs.sort()
        except BaseException:
            docs.close()
            raise

    def stream_sorted(
        self, name: str, source: Sequence[str] | bool = DOC_SOURCE, ids: frozenset[str] | None = None
    ) -> Iterator[OmDoc]:
        """Every doc behind `name` in `_id` byte order (see `spill`)."""
        docs = self.spill(name, source=source, ids=ids)
        try:
            for item in docs:
                yield item.doc()
        finally:
            docs.close()

    def get(
        self, name: str, ids: Sequence[str], source: Sequence[str] | bool = DOC_SOURCE
    ) -> dict[str, OmDoc]:
        """The docs with these `_id`s behind `name` (an ids query: an alias over several indices too)."""
        out: dict[str, OmDoc] = {}
        for i in range(0, len(ids), 1000):
            chunk = list(ids[i : i + 1000])
            body: dict[str, Any] = {"size": len(chunk) * 2, "query": {"ids": {"values": chunk}}}
            out.update(self._query(name, body, source))
        return out

    def find_by_fqn(self, name: str, fqn: str) -> dict[str, OmDoc]:
        """The docs behind `name` whose fullyQualifiedName is `fqn` (a triage of an orphan: no row)."""
        return self._query(name, {"size": 10, "query": {"term": {"fullyQualifiedName": fqn}}}, DOC_SOURCE)

    def _query(self, name: str, body: dict[str, Any], source: Sequence[str] | bool) -> dict[str, OmDoc]:
        """The hits of one search (none when the index does not exist), by `_id`."""
        body["_source"] = source if isinstance(source, bool) else list(source)
        try:
            found = self.search._call(self.client.search, index=name, body=body)
        except Exception as exc:
            if "index_not_found" in str(exc):
                return {}
            raise self._fail(f"reading {name}", exc) from None
        out: dict[str, OmDoc] = {}
        for hit in found["hits"]["hits"]:
            self.docs_read += 1
            out[hit["_id"]] = OmDoc(hit["_id"], hit["_index"], hit.get("_source") or {})
        return out

    def rebuild_index(self, entity: OmEntity) -> str | None:
        """The newest `<index>_rebuild_<epoch ms>` without an alias: the index a 2.0 reindex is
        building for the type (DefaultRecreateHandler), where live writes go until its promotion."""
        canonical = entity.index_name(self.cluster_alias)
        found = self.search.index_meta(f"{canonical}_rebuild_*")
        building = [
            i for i, (aliases, _) in found.items() if not aliases and i[len(canonical) + 9 :].isdigit()
        ]
        return max(building, key=lambda i: int(i[len(canonical) + 9 :]), default=None)

    def realtime(self, index: str, ids: Sequence[str]) -> dict[str, OmDoc]:
        """The docs of these ids in `index` by a real-time multi-get (a rebuild index is not refreshed
        until its promotion, so a search would not see them)."""
        out: dict[str, OmDoc] = {}
        for i in range(0, len(ids), 1000):
            for doc_id, src in self.search.get_many(index, list(ids[i : i + 1000])).items():
                self.docs_read += 1
                out[doc_id] = OmDoc(doc_id, index, src)
        return out

    def count(self, name: str) -> int:
        try:
            return int(_body(self.search._call(self.client.count, index=name))["count"])
        except Exception as exc:
            raise self._fail(f"counting {name}", exc) from None

    def close(self) -> None:
        self.search.close()
