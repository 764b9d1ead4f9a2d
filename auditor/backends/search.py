"""The search side: OpenSearch or Elasticsearch, read in urn order with point-in-time + search_after.

`SearchIndex` is the reader every platform's scan and repair reads through: it opens the client
(search_client.py), sends each read again on the retry rules (search_retry.py) and streams an
index's documents in sort order. The query a selection makes is search_query.py's.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from auditor.backends.protocols import Capability
from auditor.backends.search_auth import SearchAuth, reason_of, split_userinfo
from auditor.backends.search_client import open_client
from auditor.backends.search_engine import Engine, certificate_refusal, probe

# re-exported: where the tests (and older callers) import them
from auditor.backends.search_query import like_to_wildcard as like_to_wildcard
from auditor.backends.search_query import urn_filter as urn_filter
from auditor.backends.search_retry import BACKOFF_CAP, RETRIES, chain_text, status_of
from auditor.backends.search_retry import RETRY_STATUSES as RETRY_STATUSES
from auditor.backends.search_retry import not_found as not_found
from auditor.backends.search_retry import retryable as retryable
from auditor.core.records import DYNAMIC
from auditor.errors import BackendUnavailable
from auditor.redact import redact_url

log = logging.getLogger(__name__)


def _stream_body(
    sort: Sequence[str],
    query: dict[str, Any] | None,
    source: Sequence[str] | bool,
    page: int,
    from_sort: bool,
) -> dict[str, Any]:
    """A sorted page's search body, as `stream` and `first_pages` send it."""
    return {
        "size": page,
        "sort": [{f: {"order": "asc"}} for f in sort],
        "query": query or {"match_all": {}},
        "_source": False if from_sort else source if isinstance(source, bool) else list(source),
    }


def _source_of(hit: dict[str, Any]) -> dict[str, Any]:
    return hit.get("_source") or {}


def _from_sort(fields: list[str], hit: dict[str, Any]) -> dict[str, Any]:
    """The doc as its sort keys hold it: `source.urn` -> {"source": {"urn": ...}} (a missing
    value stays missing, as it was in `_source`)."""
    doc: dict[str, Any] = {}
    for field, value in zip(fields, hit.get("sort") or (), strict=False):
        if value is None:
            continue
        *outer, last = field.split(".")
        node = doc
        for part in outer:
            node = node.setdefault(part, {})
        node[last] = value
    return doc


class SearchIndex:
    """Read access to a DataHub search cluster (a scan never writes)."""

    capabilities = frozenset({Capability.READ})

    def __init__(
        self,
        url: str,
        kind: str = "auto",
        *,
        username: str | None = None,
        password: str | None = None,
        auth: SearchAuth | None = None,
        verify_certs: bool = True,
        ca_certs: str | None = None,
        timeout: float = 60.0,
        retries: int = RETRIES,
        engine: Engine | None = None,
        lean: bool = False,
    ) -> None:
        """`lean`: a reader process's client, urllib3's requests of search_lean.py instead of the
        full client's (unless they are signed: see there)."""
        self.description = redact_url(url)
        # how to open this client again elsewhere (a reader process: search_readers.py)
        self._spec: dict[str, Any] = {
            "url": url,
            "username": username,
            "password": password,
            "auth": auth,
            "verify_certs": verify_certs,
            "ca_certs": ca_certs,
            "timeout": timeout,
            "retries": retries,
        }
        url, username, password = split_userinfo(url, username, password)
        if auth is None:
            auth = SearchAuth(basic=(username, password or "") if username else None)
        self.auth = auth
        self.url = url
        self.retries = retries
        self.retried = 0  # requests sent again after a 429/5xx, a timeout or a lost connection
        self.docs_read = 0  # documents fetched by the streams (a shard's share of the indices)
        # the engine's version (`GET /`): None when told the kind, or when `GET /` is refused
        self.engine: Engine | None = engine
        if kind == "auto":
            self.engine = self._probe(url, auth, verify_certs, ca_certs)
            kind = self.engine.kind
        # Amazon OpenSearch Service signs with SigV4, which only opensearch-py speaks (the
        # elasticsearch client refuses a server that is not Elastic's): its legacy
        # Elasticsearch 7.10 domains are read with the OpenSearch client too
        self.kind = "opensearch" if auth.aws else kind
        opened = (self.kind, url, auth, verify_certs, ca_certs, timeout, self.engine)
        self.client: Any = None
        if lean:
            from auditor.backends.search_lean import lean_client

            self.client = lean_client(*opened)
        if self.client is None:
            self.client = open_client(*opened)
        self._pit_ok = True

    def spec(self) -> dict[str, Any]:
        """The arguments that open this same client again (in a reader process), the cluster's
        kind and version included so that it is not asked again."""
        return {**self._spec, "kind": self.kind, "engine": self.engine}

    @staticmethod
    def _detect(url: str, auth: SearchAuth | tuple[str, str] | None, verify: bool, ca: str | None) -> str:
        """`opensearch` or `elasticsearch`, by `GET /` (`auth` may be a user and password)."""
        if not isinstance(auth, SearchAuth):
            auth = SearchAuth(basic=auth)
        return SearchIndex._probe(url, auth, verify, ca).kind

    # `GET /`: the engine's kind and version (search_engine.probe)
    _probe = staticmethod(probe)

    def close(self) -> None:
        """Close the client's connection pool."""
        try:
            self.client.close()
        except Exception:  # closing is best effort: the scan's result does not depend on it
            log.debug("closing the search client failed", exc_info=True)

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """One read request; sent again with bounded exponential backoff (0.5 s doubling, at most
        8 s, `retries` times) when the cluster answers 429/502/503/504, times out or drops the
        connection. Reads are idempotent (a page of a point in time, an mget, a count)."""
        attempt = 0
        while True:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                if attempt >= self.retries or not retryable(exc):
                    raise
                attempt += 1
                self.retried += 1
                pause = min(BACKOFF_CAP, 0.5 * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
                log.info(
                    "search cluster: %s; retry %d/%d in %.1fs", status_of(exc), attempt, self.retries, pause
                )
                time.sleep(pause)

    def _fail(self, what: str, exc: Exception) -> BackendUnavailable:
        status = status_of(exc)
        if status in (401, 403):
            return self.auth.refused(self.description, what, status, reason_of(exc))
        refused = certificate_refusal(self.description, self.auth, chain_text(exc))
        if refused is not None:  # the TLS handshake refused the client certificate
            return refused
        return BackendUnavailable(f"search cluster {self.description}: {what} failed: {exc}")

    # -- cluster ------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        try:
            return dict(self._call(self.client.info))
        except Exception as exc:
            raise self._fail("info", exc) from None

    def version(self) -> str:
        """`opensearch 2.19.4`; a role without the cluster's `monitor` privilege is refused `GET /`
        on a real Elasticsearch: the kind alone then (the scan needs no more)."""
        try:
            v = dict(self._call(self.client.info)).get("version", {})
        except Exception as exc:
            if status_of(exc) == 403:
                return f"{self.kind} (version not readable: GET / needs the cluster monitor privilege)"
            raise self._fail("info", exc) from None
        return f"{v.get('distribution', 'elasticsearch')} {v.get('number', '?')}"

    def max_of(self, index: str, field_name: str) -> float | None:
        """The largest value of a numeric field in an index (None: no doc has it, or no index)."""
        body = {"size": 0, "aggs": {"m": {"max": {"field": field_name}}}}
        try:
            if self.kind == "elasticsearch":
                found = self._call(self.client.search, index=index, size=0, aggs=body["aggs"])
            else:
                found = self._call(self.client.search, index=index, body=body)
        except Exception as exc:
            if not_found(exc):
                return None
            raise self._fail(f"max({field_name}) of {index}", exc) from None
        value = found["aggregations"]["m"].get("value")
        return float(value) if value is not None else None

    def indices(self, pattern: str = "*") -> dict[str, int]:
        """Index (or alias) name -> document count, aliases resolved to their names.

        With index privileges only (`view_index_metadata` lists the indices and their aliases,
        `read` counts): the `_cat` APIs would need the cluster's `monitor` privilege, which a
        read-only role for DataHub's indices has no reason to hold."""
        try:
            listed = self._call(self.client.indices.get_alias, index=pattern)
            aggs = {"i": {"terms": {"field": "_index", "size": 65536}}}
            if self.kind == "elasticsearch":
                counted = self._call(self.client.search, index=pattern, size=0, aggs=aggs)
            else:
                counted = self._call(self.client.search, index=pattern, body={"size": 0, "aggs": aggs})
        except Exception as exc:
            if not_found(exc):
                return {}
            raise self._fail("listing indices", exc) from None
        # a pattern that matches no index answers with no aggregations at all
        buckets = counted.get("aggregations", {}).get("i", {}).get("buckets", [])
        docs = {b["key"]: int(b["doc_count"]) for b in buckets}
        counts = {index: docs.get(index, 0) for index in listed}
        for index, entry in listed.items():
            for alias in entry.get("aliases") or {}:
                counts[alias] = counts[index]
        return counts

    def names(self, pattern: str = "*") -> set[str]:
        """The indices and aliases matching `pattern`, not counted (one request: what a look at a
        few urns needs; `indices` also counts every document of them)."""
        try:
            listed = self._call(self.client.indices.get_alias, index=pattern)
        except Exception as exc:
            if not_found(exc):
                return set()
            raise self._fail("listing indices", exc) from None
        out = set(listed)
        for entry in listed.values():
            out.update(entry.get("aliases") or {})
        return out

    def mapped_fields(self, pattern: str) -> dict[str, frozenset[str]]:
        """Index (and alias) -> the top-level fields its mapping holds, for the indices matching
        `pattern` (one request; `view_index_metadata`). An alias over several indices holds what
        any of them maps. A field no mapping holds is one no document there holds; a mapping that
        adds fields as documents bring them (`dynamic`, the default) also holds `DYNAMIC`."""
        try:
            found = self._call(self.client.indices.get_mapping, index=pattern)
            listed = self._call(self.client.indices.get_alias, index=pattern)
        except Exception as exc:
            if not_found(exc):
                return {}
            raise self._fail("reading index mappings", exc) from None
        out: dict[str, frozenset[str]] = {}
        for index, entry in dict(found).items():
            mappings = entry.get("mappings") or {}
            if "properties" not in mappings and len(mappings) == 1:  # a 6.x-style type level
                mappings = next(iter(mappings.values())) or {}
            fields = set((mappings.get("properties") or {}).keys())
            if str(mappings.get("dynamic", "true")).lower() == "true":
                fields.add(DYNAMIC)
            out[index] = frozenset(fields)
            for alias in (listed.get(index) or {}).get("aliases") or {}:
                out[alias] = out.get(alias, frozenset()) | out[index]
        return out

    def index_meta(self, pattern: str) -> dict[str, tuple[list[str], int]]:
        """Concrete index -> (its aliases, its creation time in epoch ms), for the indices matching
        `pattern` (index metadata only: `view_index_metadata`). Empty when nothing matches."""
        try:
            listed = self._call(self.client.indices.get_alias, index=pattern)
            settings = self._call(self.client.indices.get_settings, index=pattern, name="index.creation_date")
        except Exception as exc:
            if not_found(exc):
                return {}
            raise self._fail("reading index metadata", exc) from None
        out: dict[str, tuple[list[str], int]] = {}
        for index, entry in listed.items():
            created = (settings.get(index) or {}).get("settings", {}).get("index", {}).get("creation_date")
            out[index] = (sorted(entry.get("aliases") or {}), int(created or 0))
        return out

    def terms(self, index: str, field_name: str, size: int = 1000) -> dict[str, int]:
        """The values of a keyword field in an index and their document counts (one aggregation)."""
        aggs = {"t": {"terms": {"field": field_name, "size": size}}}
        try:
            if self.kind == "elasticsearch":
                found = self._call(self.client.search, index=index, size=0, aggs=aggs)
            else:
                found = self._call(self.client.search, index=index, body={"size": 0, "aggs": aggs})
        except Exception as exc:
            raise self._fail(f"terms of {field_name} in {index}", exc) from None
        buckets = found.get("aggregations", {}).get("t", {}).get("buckets", [])
        return {str(b["key"]): int(b["doc_count"]) for b in buckets}

    def _open_pit(self, index: str) -> str | None:
        if not self._pit_ok:
            return None
        try:
            if self.kind == "opensearch":
                made = self._call(self.client.create_pit, index=index, params={"keep_alive": "5m"})
                return str(made["pit_id"])
            return str(self._call(self.client.open_point_in_time, index=index, keep_alive="5m")["id"])
        except Exception as exc:
            if retryable(exc):  # the cluster is failing (retried already), not without PIT
                raise self._fail(f"opening a point in time on {index}", exc) from None
            self._pit_ok = False  # e.g. an old cluster: fall back to a sorted scroll
            return None

    def _close_pit(self, pit: str) -> None:
        try:
            if self.kind == "opensearch":
                self.client.delete_pit(body={"pit_id": [pit]})
            else:
                self.client.close_point_in_time(id=pit)
        except Exception:
            pass

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
        """`(_id, _source)` of every matching doc, ordered by the keyword fields in `sort`.

        `from_sort`: the doc is only what the sort keys hold (`{"source": {"urn": ...}, ...}`),
        read from each hit's sort values with no `_source` fetched: for a check that compares
        nothing else (the graph's edges), the engine skips loading and sending the documents.

        A point in time + search_after gives one consistent view; a cluster without PIT is
        read with a sorted scroll instead. `few` (the query names a handful of urns): one
        plain search first, which is the whole answer (and one view) when it fits in a page;
        only a full page goes on to the point in time (3 requests an index become 1). `answered`:
        that first search's hits, already asked with others in one request (`first_pages`).
        """
        body = _stream_body(sort, query, source, page, from_sort)
        shape = functools.partial(_from_sort, list(sort)) if from_sort else _source_of
        try:
            if few:
                body["track_total_hits"] = False
                if answered is not None:
                    hits = answered
                else:
                    hits = self._call(self.client.search, index=index, body=body)["hits"]["hits"]
                if len(hits) < page:
                    self.docs_read += len(hits)
                    for hit in hits:
                        yield hit["_id"], shape(hit)
                    return
            pit = self._open_pit(index)
            if pit is None:
                for hit in self.scroll_hits(index, body):
                    yield hit["_id"], shape(hit)
                return
            yield from self._pit_pages(pit, body, page, shape)
        except BackendUnavailable:
            raise
        except Exception as exc:
            if "index_not_found" in str(exc):
                return
            if "fielddata" in str(exc).lower() or "not optimised" in str(exc).lower():
                raise BackendUnavailable(
                    f"search cluster {self.description}: {index} cannot be read in urn order: "
                    f"{', '.join(sort)} is not a keyword field there (not DataHub's mapping?)"
                ) from None
            raise self._fail(f"reading {index}", exc) from None

    def first_pages(self, specs: Sequence[Any]) -> list[list[dict[str, Any]] | None]:
        """The first search of several `few` streams (`index`, `sort`, `query`, `source`, `page`,
        `from_sort` each, as `stream` takes them) in one `_msearch`: a triage's entity document,
        system metadata and edges in one round trip, not three. Per stream its hits, or None where
        the cluster answered that search with an error (the stream then asks on its own, and says
        the error as it would have) or refused the `_msearch` as a whole."""
        lines: list[dict[str, Any]] = []
        for s in specs:
            body = _stream_body(s.sort, s.query, s.source, s.page, s.from_sort)
            body["track_total_hits"] = False
            lines += [{"index": s.index}, body]
        try:
            answers = self._call(self.client.msearch, body=lines)["responses"]
        except Exception as exc:
            log.debug("search cluster: _msearch not answered (%s): each stream asks on its own", exc)
            return [None] * len(specs)
        out: list[list[dict[str, Any]] | None] = []
        for answer in answers:
            if "error" in answer or "hits" not in answer:
                out.append(None)
                continue
            out.append(answer["hits"]["hits"])
        return out + [None] * (len(specs) - len(out))

    def _pit_pages(
        self, pit: str, body: dict[str, Any], page: int, shape: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """The pages of one point in time, by search_after; the point in time closed after."""
        body["track_total_hits"] = False
        after: list[Any] | None = None
        try:
            while True:
                if after is not None:
                    body["search_after"] = after
                body["pit"] = {"id": pit, "keep_alive": "5m"}
                response = self._call(self.client.search, body=body)
                pit = response.get("pit_id") or pit
                hits = response["hits"]["hits"]
                del response
                self.docs_read += len(hits)
                for hit in hits:
                    yield hit["_id"], shape(hit)
                if len(hits) < page:
                    return
                after = hits[-1]["sort"]
                # this page let go before the next arrives: one page in memory at a time, not two
                # (a reader process of dataset docs peaked at 85 MiB holding both)
                del hits, hit
        finally:
            self._close_pit(pit)

    def scroll_hits(self, index: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every hit of `body` over `index`, page by page through a scroll that is cleared
        however the reading ends (errors are the client's, unwrapped)."""
        response = self._call(self.client.search, index=index, body=body, scroll="5m")
        scroll_id = response.get("_scroll_id")
        try:
            while True:
                hits = response["hits"]["hits"]
                del response
                self.docs_read += len(hits)
                yield from hits
                if not hits or not scroll_id or len(hits) < int(body.get("size") or 0):
                    return  # a short page is the last: asking for the next one was a round trip
                del hits  # one page in memory at a time, as the point in time's pages
                response = self._call(self.client.scroll, body={"scroll_id": scroll_id, "scroll": "5m"})
                scroll_id = response.get("_scroll_id") or scroll_id
        finally:
            if scroll_id:
                try:
                    self.client.clear_scroll(body={"scroll_id": scroll_id})
                except Exception:
                    pass

    def get_many(self, index: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """`_id` -> `_source` of the docs that exist."""
        return {i: source for i, (source, _) in self.get_versioned(index, ids).items()}

    def present(self, index: str, ids: Sequence[str]) -> set[str]:
        """The ids of `ids` that `index` holds (a real-time multi-get of no source; none when the
        index does not exist)."""
        if not ids:
            return set()
        body = {"docs": [{"_id": i, "_source": False} for i in ids]}
        try:
            response = self._call(self.client.mget, index=index, body=body)
        except Exception as exc:
            if "index_not_found" in str(exc):
                return set()
            raise self._fail(f"reading {index}", exc) from None
        return {d["_id"] for d in response["docs"] if d.get("found")}

    def get_versioned(
        self, index: str, ids: Sequence[str]
    ) -> dict[str, tuple[dict[str, Any], tuple[int, int] | None]]:
        """`_id` -> (`_source`, its (seq_no, primary_term)) of the docs that exist (a real-time
        read: the newest write, refreshed or not). The pair is what a bulk write conditions on
        (`if_seq_no`/`if_primary_term`); None where the engine did not say."""
        if not ids:
            return {}
        try:
            response = self._call(self.client.mget, index=index, body={"ids": list(ids)})
        except Exception as exc:
            if "index_not_found" in str(exc):
                return {}
            raise self._fail(f"reading {index}", exc) from None
        out: dict[str, tuple[dict[str, Any], tuple[int, int] | None]] = {}
        for d in response["docs"]:
            if d.get("found"):
                seq, term = d.get("_seq_no"), d.get("_primary_term")
                version = (seq, term) if isinstance(seq, int) and isinstance(term, int) else None
                out[d["_id"]] = (d.get("_source") or {}, version)
        return out
