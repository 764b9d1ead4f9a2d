"""The probe's GMS write path as GMS's Rest.li API expects it (a local HTTP server records the
requests), the canary's value, and the probe's refusals."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.errors import AccessRefused, BackendUnavailable
from auditor.platforms.datahub.backends.canary_writer import GmsCanaryWriter
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.watch.probe import CANARY_ASPECT, CANARY_URN, canary_value
from auditor.platforms.datahub.watch.reflect import event_of


class Recorder:
    def __init__(self, status: int = 200) -> None:
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def gms() -> Iterator[Recorder]:
    recorder = Recorder()
    yield recorder
    recorder.server.shutdown()


def test_the_canary_goes_through_ingest_proposal(gms: Recorder) -> None:
    writer = GmsCanaryWriter(gms.url, token="t0ken")
    value = canary_value("abc", 0.0)
    writer.write(CANARY_URN, "dataset", CANARY_ASPECT, value)
    writer.remove(CANARY_URN)
    (path, headers, body), (path2, _, body2) = gms.requests
    assert path == "/aspects?action=ingestProposal"
    assert headers["authorization"] == "Bearer t0ken" and headers["x-restli-protocol-version"] == "2.0.0"
    proposal = body["proposal"]
    assert proposal["entityUrn"] == CANARY_URN and proposal["changeType"] == "UPSERT"
    assert proposal["aspectName"] == "datasetProperties" and proposal["entityType"] == "dataset"
    assert json.loads(proposal["aspect"]["value"]) == value
    assert proposal["aspect"]["contentType"] == "application/json"
    assert (path2, body2) == ("/entities?action=delete", {"urn": CANARY_URN})


def test_a_refused_token_and_a_dead_gms_are_errors_not_results() -> None:
    refusing = Recorder(status=401)
    try:
        with pytest.raises(AccessRefused, match="401"):
            GmsCanaryWriter(refusing.url).write(CANARY_URN, "dataset", CANARY_ASPECT, {})
    finally:
        refusing.server.shutdown()
    with pytest.raises(BackendUnavailable):
        GmsCanaryWriter("http://127.0.0.1:9", timeout=2).write(CANARY_URN, "dataset", CANARY_ASPECT, {})


def test_the_canary_is_a_checkable_event() -> None:
    value = canary_value("n0nce", 0.0)
    mcl = {
        "entityUrn": CANARY_URN,
        "aspectName": CANARY_ASPECT,
        "changeType": "UPSERT",
        "aspect": {"value": json.dumps(value).encode()},
        "systemMetadata": {},
    }
    event = event_of(Registry.load(), "t", 0, 0, 0.0, mcl)
    assert event is not None and "description" in event.fields and "n0nce" in value["description"]


def test_the_probe_writes_nothing_without_apply_and_needs_one_write_path() -> None:
    runner = CliRunner()
    refused = runner.invoke(app, ["probe", "--via-store"])
    assert refused.exit_code == 2 and "--apply" in refused.output
    both = runner.invoke(app, ["probe", "--apply", "--via-store", "--gms-url", "http://x"])
    assert both.exit_code == 2 and "write path" in both.output
