"""Serving the latest metrics over HTTP (`GET /metrics`) for a Prometheus scrape."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from auditor.errors import ConfigError


class MetricsServer:
    """A tiny HTTP server in a daemon thread; `publish(text)` replaces what it serves."""

    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        try:
            number = int(port)
        except ValueError:
            raise ConfigError(f"--metrics-addr {address!r}: use HOST:PORT, e.g. 0.0.0.0:9464") from None
        self.text = "# no snapshot yet\n"
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                if self.path.split("?")[0] not in ("/metrics", "/"):
                    self.send_error(404)
                    return
                body = owner.text.encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return  # a scrape every 15 s is not news

        try:
            self.server = ThreadingHTTPServer((host or "127.0.0.1", number), Handler)
        except OSError as exc:
            raise ConfigError(f"--metrics-addr {address}: {exc}") from None
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="watch-metrics", daemon=True)
        self.thread.start()

    def publish(self, text: str) -> None:
        self.text = text

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
