"""The watch's `GET /metrics` endpoint serves what was last published (a local socket)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from auditor.errors import ConfigError
from auditor.watch.expose import MetricsServer


def test_metrics_are_served_and_replaced() -> None:
    server = MetricsServer("127.0.0.1:0")
    try:
        url = f"http://127.0.0.1:{server.port}"
        assert urllib.request.urlopen(f"{url}/metrics").read() == b"# no snapshot yet\n"
        server.publish("auditor_watch_up_seconds 1.0\n")
        with urllib.request.urlopen(f"{url}/metrics") as response:
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert response.read() == b"auditor_watch_up_seconds 1.0\n"
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{url}/other")
        assert missing.value.code == 404
    finally:
        server.close()


def test_a_bad_address_is_a_usage_error() -> None:
    with pytest.raises(ConfigError, match="HOST:PORT"):
        MetricsServer("localhost")
