"""A small HTTP proxy in front of the real search node, breaking it the ways clusters break:
429 / 503 answers, slow answers, and the node gone while a request is on its way (DIE: that
request and every later one get their connection closed unanswered, as a dead node's peers
see it); or fronting it the way managed clusters do, with TLS and basic authentication."""

from __future__ import annotations

import base64
import http.client
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit

# (request number from 1, method, path) -> an HTTP status to answer instead, a float to wait that
# long first, DIE, or None to forward as it is
Decide = Callable[[int, str, str], int | float | str | None]
DIE = "die"  # the node is gone from here on: no request is answered again


class FaultyProxy:
    """`tls=(certfile, keyfile)` serves HTTPS; `auth="user:password"` answers 401 to any request
    without that basic authentication (a TLS-terminating, authenticating front of the node)."""

    def __init__(
        self,
        upstream: str,
        decide: Decide | None = None,
        *,
        tls: tuple[str, str] | None = None,
        auth: str | None = None,
    ) -> None:
        target = urlsplit(upstream)
        self.host, self.port = target.hostname or "127.0.0.1", target.port or 9200
        self.decide = decide or (lambda n, method, path: None)
        self.expected = "Basic " + base64.b64encode(auth.encode()).decode() if auth else None
        self.refused = 0  # requests answered 401
        self.requests = 0
        self.dead = False
        self.injected: list[tuple[int, str, str, int | float]] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _hang_up(self) -> None:
                self.close_connection = True
                self.connection.close()

            def _any(self) -> None:
                if proxy.dead:
                    return self._hang_up()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy._lock:
                    proxy.requests += 1
                    n = proxy.requests
                if proxy.expected and self.headers.get("Authorization") != proxy.expected:
                    proxy.refused += 1
                    payload = b'{"error":"unauthorized","status":401}'
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="search"')
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                action = proxy.decide(n, self.command, self.path)
                if action is not None:
                    proxy.injected.append((n, self.command, self.path, action))
                if action == DIE:
                    proxy.dead = True
                    return self._hang_up()
                if isinstance(action, float):
                    time.sleep(action)
                elif isinstance(action, int):
                    payload = b'{"error":{"type":"injected","reason":"by the test"},"status":%d}' % action
                    self.send_response(action)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                try:
                    upstream = http.client.HTTPConnection(proxy.host, proxy.port, timeout=120)
                    hop = ("host", "connection")
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in hop}
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    data = answer.read()
                except OSError:  # the node is gone: so is this connection, as the client would see it
                    return self._hang_up()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                upstream.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FaultyProxy:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.server.shutdown()
        self.server.server_close()
