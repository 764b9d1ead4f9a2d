"""The lean client (auditor/backends/search_lean.py) against the full clients, on a local HTTP server
that records what it is sent and answers what the test says: the same requests (method, path and
query, JSON body, media types, credentials) for every request a reader makes, each kind and
authentication; the same errors for the answers a proxy or a cluster gives (JSON or not, empty,
not Elasticsearch). The real engines: tests/scenarios/test_search_lean.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from auditor.backends.search import SearchIndex
from auditor.backends.search_auth import SearchAuth, reason_of
from auditor.backends.search_engine import Engine
from auditor.backends.search_retry import not_found, retryable, status_of

ANSWER = b'{"pit_id":"p1","id":"p1","_scroll_id":"s1","hits":{"hits":[]},"succeeded":true}'


class Server:
    """Records each request; answers `answer` = (status, content type or None, body, headers)."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []
        self.answer: tuple[int, str | None, bytes, dict[str, str]] = (200, "application/json", ANSWER, {})
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size) if size else b""
                said = {k.lower(): v for k, v in self.headers.items()}
                parsed = json.loads(body) if body else None
                heard = [said.get(h) for h in ("accept", "content-type", "authorization")]
                server.seen.append((self.command, self.path, parsed, *heard))
                status, kind, payload, headers = server.answer
                self.send_response(status)
                if kind:
                    self.send_header("Content-Type", kind)
                for name, value in {"X-elastic-product": "Elasticsearch", **headers}.items():
                    if value:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = _any

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, args=(0.05,), daemon=True).start()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.http.shutdown()
    s.http.server_close()


def _requests(client: Any, kind: str) -> None:
    """Every request a reader process's jobs make, in each call style they use."""
    client.search(body={"size": 1, "pit": {"id": "p1", "keep_alive": "5m"}, "search_after": ["a"]})
    client.search(index="a,b*", body={"size": 2, "sort": ["_doc"], "_source": ["urn"]}, scroll="5m")
    client.search(index="ü x", body={"size": 1}, ignore_unavailable=True)
    client.scroll(body={"scroll_id": "s1", "scroll": "5m"})
    client.clear_scroll(body={"scroll_id": "s1"})
    if kind == "opensearch":
        client.create_pit(index="idx", params={"keep_alive": "5m"})
        client.delete_pit(body={"pit_id": ["p1"]})
    else:
        client.open_point_in_time(index="idx", keep_alive="5m")
        client.close_point_in_time(id="p1")


CLIENTS = [
    ("opensearch", "2.19.4", {"username": "u", "password": "pé"}),
    ("opensearch", "3.3.2", {"auth": SearchAuth(api_key="id:key")}),
    ("opensearch", None, {"auth": SearchAuth(bearer="tok")}),
    ("elasticsearch", "9.2.0", {"username": "u", "password": "p:w"}),
    ("elasticsearch", "8.19.0", {"auth": SearchAuth(api_key="id:key")}),
    ("elasticsearch", None, {"auth": SearchAuth(bearer="tok")}),
    ("elasticsearch", "7.17.1", {}),
]


NAMES = ["os2-basic", "os3-api-key", "os-bearer", "es9-basic", "es8-api-key", "es-bearer", "es7-anonymous"]


@pytest.mark.parametrize(("kind", "version", "auth"), CLIENTS, ids=NAMES)
def test_the_lean_client_sends_what_the_full_client_sends(
    server: Server, kind: str, version: str | None, auth: dict[str, Any]
) -> None:
    server.answer = (200, "application/json", ANSWER, {})
    sent = []
    for lean in (False, True):
        server.seen.clear()
        search = SearchIndex(
            f"{server.url}/prefix", kind=kind, engine=Engine(kind, version), lean=lean, **auth
        )
        _requests(search.client, kind)
        sent.append(list(server.seen))
    assert sent[1] == sent[0] and len(sent[0]) == 7
    media = {s[4] for s in sent[0]}
    compatible = kind == "elasticsearch" and version is not None and version >= "9"
    assert media == {
        "application/vnd.elasticsearch+json; compatible-with=9" if compatible else "application/json"
    }


def _said(search: SearchIndex) -> Any:
    try:
        search.client.search(index="x", body={"size": 1})
    except Exception as exc:  # the clients' own errors
        return type(exc).__name__, str(exc), status_of(exc), retryable(exc), not_found(exc), reason_of(exc)
    return "answered"


ROOT = b'{"error":{"root_cause":[{"type":"x","reason":"r1"}],"type":"es_rejected_execution_exception",'
ANSWERS: list[tuple[int, str | None, bytes, dict[str, str]]] = [
    (503, "text/plain; charset=UTF-8", b"Service Unavailable", {}),
    (503, None, b"upstream down", {}),
    (502, "text/html", b"<html>bad gateway</html>", {}),
    (503, "application/json", b"not json", {}),
    (503, "application/json", b"", {}),
    (504, None, b"", {}),
    (
        429,
        "application/json",
        ROOT + b'"reason":"full","caused_by":{"reason":"queue full"}},"status":429}',
        {},
    ),
    (404, "application/json", b'{"error":"alias [x] missing","status":404}', {}),
    (200, "application/json", ANSWER, {"X-elastic-product": ""}),  # a server that is not Elasticsearch
    (200, "application/json", b"", {}),
]


@pytest.mark.parametrize("answer", ANSWERS, ids=lambda a: f"{a[0]} {a[1]} {a[2][:12]!r}")
@pytest.mark.parametrize("kind", ["opensearch", "elasticsearch"])
def test_the_lean_client_fails_as_the_full_client_fails(
    server: Server, kind: str, answer: tuple[int, str | None, bytes, dict[str, str]]
) -> None:
    server.answer = answer
    said: list[Any] = []
    for lean in (False, True):
        said.append(_said(SearchIndex(server.url, kind=kind, engine=Engine(kind, "9.2.0"), lean=lean)))
    assert said[1] == said[0]
