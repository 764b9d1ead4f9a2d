"""The reader processes' lean client (auditor/backends/search_lean.py) against the full clients, on
the real engines: the same pages over a point in time, a sort-keys-only stream and a scroll,
item for item; the same errors (kind, words, retry rule, refusal and not-found readings) for a
missing index, a bad request, a refused password, 429/503, a timeout, a dropped connection, an
unverified certificate and a closed port; and through a real reader process, a 503 retried and
a refused password said as the scan's own process says them."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
import urllib3
from http_faults import DIE, FaultyProxy
from test_search_tls import certificate

from auditor.backends.search import SearchIndex
from auditor.backends.search_auth import reason_of
from auditor.backends.search_lean import LeanClient
from auditor.backends.search_readers import StreamSpec, read_in_process
from auditor.backends.search_retry import not_found, retryable, status_of
from auditor.errors import AccessRefused
from auditor.platforms.openmetadata.search import OmSearch
from sandbox.endpoints import Endpoints

pytestmark = pytest.mark.integration

DOCS = 57  # over several pages of 7: every page boundary, a short last page


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A certificate and key for 127.0.0.1 (a TLS proxy's)."""
    return certificate(tmp_path_factory.mktemp("lean-tls"))


@pytest.fixture(scope="module", params=["opensearch", "elasticsearch", "opensearch3"])
def indexed(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(the engine's URL, an index of DOCS documents: keyword urns and aspects, non-ASCII text)."""
    url = Endpoints.from_env().search_url(request.param)
    index = f"lean_{uuid.uuid4().hex[:10]}"
    http = urllib3.PoolManager(headers={"content-type": "application/json"})
    keyword = {"type": "keyword"}
    mapping = {"mappings": {"properties": {"urn": keyword, "aspect": keyword}}}
    assert http.request("PUT", f"{url}/{index}", body=orjson.dumps(mapping)).status == 200
    lines = b"".join(
        orjson.dumps({"index": {"_id": f"d{i}"}})
        + b"\n"
        + orjson.dumps({"urn": f"urn:li:x:{i:03d}é", "aspect": "ab"[i % 2], "n": i, "text": 'ü☃ "q"'})
        + b"\n"
        for i in range(DOCS)
    )
    bulk = http.request("POST", f"{url}/{index}/_bulk?refresh=true", body=lines,
                        headers={"content-type": "application/x-ndjson"})  # fmt: skip
    assert bulk.status == 200 and not bulk.json()["errors"]
    try:
        yield url, index
    finally:
        http.request("DELETE", f"{url}/{index}")


def _reads(search: SearchIndex, index: str) -> dict[str, Any]:
    """Everything a reader process's jobs read of `index`, each way they read it."""
    out: dict[str, Any] = {
        "pit": list(search.stream(index, ["urn", "aspect"], page=7)),
        "sort keys": list(search.stream(index, ["aspect", "urn"], page=5, from_sort=True)),
        "om scroll": list(OmSearch(search)._scroll(index, ("urn", "n", "text"))),
        "scroll pages": [h["_id"] for h in search.scroll_hits(index, {"size": 6, "sort": ["_doc"]})],
        "missing": list(search.stream(f"{index}_none", ["urn"], page=7)),
    }
    search._pit_ok = False  # as on a cluster without point in time: a sorted scroll
    out["sorted scroll"] = list(search.stream(index, ["urn"], page=7))
    out["counted"] = search.docs_read
    return out


def test_the_lean_client_reads_the_pages_the_full_client_reads(indexed: tuple[str, str]) -> None:
    url, index = indexed
    full = SearchIndex(url)
    lean = SearchIndex(**full.spec(), lean=True)
    assert isinstance(lean.client, LeanClient) and not isinstance(full.client, LeanClient)
    here, there = _reads(full, index), _reads(lean, index)
    assert there == here
    assert len(here["pit"]) == len(here["sorted scroll"]) == len(here["scroll pages"]) == DOCS
    assert [s["urn"] for _, s in here["pit"]] == sorted(s["urn"] for _, s in here["pit"])
    assert here["pit"][0][1]["text"] == 'ü☃ "q"' and here["missing"] == []
    assert here["counted"] == 5 * DOCS  # each way once (a missing index reads nothing)


def _said(client: Any, call: Callable[[Any], Any], port: int | None) -> Any:
    """How the auditor reads the error `call` raises: kind, words and every rule's answer (the
    port of a proxy, each run's own, as `<port>`)."""
    try:
        call(client)
    except Exception as exc:  # the clients' own errors
        said = (type(exc).__name__, str(exc), status_of(exc), retryable(exc), not_found(exc), reason_of(exc))
        return tuple(f.replace(f"={port})", "=<port>)") if isinstance(f, str) else f for f in said)
    return "answered"


BODY = {"size": 2, "sort": ["_doc"]}


def _search(c: Any) -> Any:
    return c.search(index="lean_none", body=BODY)


def _open_pit(kind: str) -> Callable[[Any], Any]:
    if kind == "opensearch":
        return lambda c: c.create_pit(index="lean_none", params={"keep_alive": "5m"})
    return lambda c: c.open_point_in_time(index="lean_none", keep_alive="5m")


def _errors(kind: str, url: str, cert: str, key: str) -> dict[str, tuple[Any, Any]]:
    """Each failure case: how the auditor reads the full client's error and the lean one's."""
    engine = SearchIndex(url).engine  # the media types the scan's client asks for on it

    def said(target: str, call: Callable[[Any], Any] = _search, **kw: Any) -> tuple[Any, Any]:
        out = []
        for lean in (False, True):
            search = SearchIndex(target, kind=kind, engine=engine, lean=lean, **kw)
            out.append(_said(search.client, call, urlsplit(target).port))
            search.close()
        return out[0], out[1]

    seen = {
        "missing index": said(url),
        "missing index, point in time": said(url, _open_pit(kind)),
        "bad request": said(url, lambda c: c.search(index="*", body={"query": {"nope": {}}})),
        "closed port": said("http://127.0.0.1:9", timeout=2),
    }
    answer: list[int | float | str] = []  # what the proxy does with every request, from here on
    with FaultyProxy(url, lambda n, m, p: answer[-1]) as proxy:
        for case, then in (("429", 429), ("503", 503), ("timeout", 1.5), ("dropped", DIE)):
            answer.append(then)
            seen[case] = said(proxy.url, timeout=0.3)
    with FaultyProxy(url, tls=(cert, key), auth="auditor:right") as proxy:
        seen["wrong password"] = said(proxy.url, username="auditor", password="wrong", ca_certs=cert)
        seen["right password"] = said(
            proxy.url, lambda c: c.search(index="*", body={"size": 0})["hits"] and None,
            username="auditor", password="right", ca_certs=cert,
        )  # fmt: skip
        seen["unverified certificate"] = said(proxy.url, username="auditor", password="right")
    return seen


@pytest.mark.parametrize("kind", ["opensearch", "elasticsearch"])
def test_an_error_of_the_lean_client_is_the_full_clients(kind: str, tls: tuple[str, str]) -> None:
    url = Endpoints.from_env().search_url(kind)
    seen = _errors(kind, url, *tls)
    for case, (full, lean) in seen.items():
        assert lean == full, case
    full = {case: pair[0] for case, pair in seen.items()}
    assert full["right password"] == "answered"
    assert full["missing index"][2] == 404 and full["missing index"][4]
    assert [full[c][3] for c in ("429", "503", "timeout", "dropped", "closed port")] == [True] * 5
    assert full["wrong password"][2] == 401 and "wrong" not in str(full["wrong password"])
    assert full["unverified certificate"][0] in ("SSLError", "TlsError")


def test_a_reader_process_retries_and_is_refused_as_the_scan_is(
    indexed: tuple[str, str], tls: tuple[str, str]
) -> None:
    """Through a real reader process: a 503 on a page, retried, the same pages and the same count
    of retries; a refused password, the same refusal."""
    url, index = indexed
    direct = SearchIndex(url)
    spec = StreamSpec(index, ("urn",), page=7)

    failing = [False]  # the next page asked for is answered 503 (once)

    def flaky(n: int, method: str, path: str) -> int | None:
        if failing[0] and path == "/_search":
            failing[0] = False
            return 503
        return None

    retried = []
    with FaultyProxy(url, flaky) as proxy:
        for apart in (False, True):
            failing[0] = True
            search = SearchIndex(proxy.url, kind=direct.kind, engine=direct.engine)
            if apart:
                read = [(doc_id, source) for _, doc_id, source in read_in_process(search, [spec])]
            else:
                read = list(search.stream(index, ["urn"], page=7))
            retried.append((search.retried, read))
    assert [a for *_, a in proxy.injected] == [503, 503]
    assert retried[1] == retried[0] and retried[0][0] == 1 and len(retried[0][1]) == DOCS
    cert, key = tls
    refused = []
    with FaultyProxy(url, tls=(cert, key), auth="auditor:right") as proxy:
        for apart in (False, True):
            search = SearchIndex(proxy.url, kind=direct.kind, engine=direct.engine, username="auditor",
                                 password="not-it", ca_certs=cert)  # fmt: skip
            with pytest.raises(AccessRefused) as failed:
                list(read_in_process(search, [spec]) if apart else search.stream(index, ["urn"]))
            refused.append((str(failed.value), failed.value.hint))
    assert refused[1] == refused[0]
    assert "(401) for user auditor" in refused[0][0] and "not-it" not in str(refused)
