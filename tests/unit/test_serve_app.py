"""`auditor serve` without servers: who may ask (loopback, token, proxy header), nothing writes,
what was pasted is read as the CLI reads it, data is escaped, a slow backend gets a page in
time, and `/readyz` names the backend that is down. The real stack: tests/scenarios/test_serve.py."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from auditor.cli import app as cli
from auditor.core.triage import Boundary, Status, Step, TriageResult
from auditor.errors import BackendUnavailable, ConfigError
from auditor.platforms.openmetadata.naming import ENTITIES
from auditor.platforms.openmetadata.pasted import om_pasted
from auditor.serve.app import Guard, Options, build
from auditor.serve.run import check_exposure, read_token

TOKEN = "s3cret-token-0123456789"
HOSTILE = "urn:li:dataset:(urn:li:dataPlatform:hive,\"'><script>alert(1)</script>\u2028,PROD)"


class Stub:
    """A console whose triage is scripted: the web layer alone is under test."""

    platform = "datahub"
    group = "mae"
    paste_hint = "a urn or a DataHub URL (quoted, URL-encoded: as pasted)"

    def __init__(self, delay: float = 0.0, down: str | None = None) -> None:
        self.delay, self.down, self.asked = delay, down, []

    def describe(self) -> dict[str, str]:
        return {"platform": "datahub", "store": "postgresql://h/db"}

    def triage(self, text: str, entity_types: tuple[str, ...] = ()) -> TriageResult:
        self.asked.append(text)
        time.sleep(self.delay)
        if text == "bad":
            raise ConfigError("not a urn: bad", hint="e.g. urn:li:...")
        if self.down:
            raise BackendUnavailable(f"{self.down} unreachable")
        out = TriageResult(text, text.strip())
        out.steps = [Step(Boundary.ROWS, Status.OK, f"rows of {text}", {"present": True, "v": text})]
        out.checked_at = datetime.now(UTC)
        return out

    def checks(self) -> dict[str, Any]:
        def up() -> str:
            return "16.2"

        def down() -> str:
            raise BackendUnavailable("connection refused")

        return {"database": down if self.down == "database" else up, "search": up, "kafka": down}

    def warm(self) -> None:
        pass

    def close(self) -> None:
        pass


def client(stub: Stub, **options: Any) -> TestClient:
    return TestClient(build(stub, Options(**options)), base_url="http://console", client=("10.0.0.7", 5555))


def test_beyond_loopback_a_token_or_the_proxy_header_is_required() -> None:
    guarded = client(Stub(), guard=Guard(TOKEN, "X-Forwarded-User"))
    assert guarded.get("/triage?q=urn:li:tag:a").status_code == 401
    assert (
        guarded.get("/api/triage?q=urn:li:tag:a", headers={"Authorization": "Bearer wrong"}).status_code
        == 401
    )
    ok = guarded.get("/api/triage?q=urn:li:tag:a", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and ok.json()["verdict"] == "consistent"
    assert guarded.get("/", headers={"X-Forwarded-User": "oncall"}).status_code == 200
    assert guarded.get("/", headers={"X-Forwarded-User": " "}).status_code == 401
    assert guarded.get("/healthz").status_code == 200  # probes need no token
    ready = guarded.get("/readyz").json()  # but only the names without it
    assert ready["backends"]["kafka"] == {"up": False}
    loopback = TestClient(build(Stub(), Options()), client=("127.0.0.1", 5555))
    assert loopback.get("/triage?q=urn:li:tag:a").status_code == 200


def test_nothing_writes() -> None:
    c = client(Stub(), guard=Guard(TOKEN))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for path in ("/", "/triage", "/api/triage", "/reports", "/readyz"):
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            assert c.request(method, path, headers=auth).status_code == 405, (method, path)


def test_data_is_escaped_and_the_headers_lock_the_page() -> None:
    c = TestClient(build(Stub(), Options()), client=("127.0.0.1", 1))
    page = c.get("/triage", params={"q": HOSTILE})
    assert page.status_code == 200
    assert "<script>alert" not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert page.text.count("\u2028") == 1 and "\\u2028" in page.text  # spelled out, but in the form's value
    assert "&quot;&#x27;&gt;" in page.text  # the value attribute cannot be closed
    assert page.text.count("<script>") == 1  # the page's own
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'sha256-" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    api = c.get("/api/triage", params={"q": HOSTILE}).json()
    assert api["urn"] == HOSTILE.strip() and api["boundaries"][0]["facts"]["v"] == HOSTILE
    bad = c.get("/triage", params={"q": "bad"})
    assert bad.status_code == 400 and "not a urn: bad" in bad.text
    assert c.get("/api/triage", params={"q": "x" * 5000}).status_code == 400


def test_a_slow_backend_answers_in_time_and_a_down_one_is_named() -> None:
    stub = Stub(delay=3.0)
    c = TestClient(build(stub, Options(timeout=0.5)), client=("127.0.0.1", 1))
    began = time.monotonic()
    page = c.get("/triage", params={"q": "urn:li:tag:a"})
    assert page.status_code == 504 and time.monotonic() - began < 2.0
    assert "did not answer within 0.5 s" in page.text
    down = TestClient(build(Stub(down="database"), Options()), client=("127.0.0.1", 1))
    answer = down.get("/api/triage", params={"q": "urn:li:tag:a"})
    assert answer.status_code == 503 and "database unreachable" in answer.json()["message"]
    ready = down.get("/readyz")
    assert ready.status_code == 503 and ready.json()["down"] == ["database", "kafka"]
    assert "connection refused" in ready.json()["backends"]["database"]["detail"]
    kafka_only = TestClient(build(Stub(), Options()), client=("127.0.0.1", 1)).get("/readyz")
    assert kafka_only.status_code == 200 and kafka_only.json()["down"] == ["kafka"]  # weaker, not down


def test_the_reports_folder_serves_only_its_own_json(tmp_path: Path) -> None:
    (tmp_path / "scan-1.json").write_text("{not json")
    (tmp_path / "secret.txt").write_text("no")
    c = TestClient(build(Stub(), Options(reports=tmp_path)), client=("127.0.0.1", 1))
    listed = c.get("/api/reports").json()
    assert [e["name"] for e in listed] == ["scan-1.json"] and "not a scan report" in listed[0]["error"]
    assert c.get("/reports/secret.txt").status_code == 404
    assert c.get("/reports/..%2F..%2Fetc%2Fpasswd").status_code == 404


@pytest.mark.parametrize(
    ("pasted", "fqn", "types"),
    [
        ("svc.db.sch.tbl", "svc.db.sch.tbl", ()),
        ("  'svc.db.sch.tbl' ", "svc.db.sch.tbl", ()),
        ("https://om.example/table/svc.db.sch.%22a.b%22/schema", 'svc.db.sch."a.b"', ("table",)),
        ("http://om:8585/dashboard/looker.sales?tab=x#y", "looker.sales", ("dashboard",)),
        ("https://om.example/tags/PII.Sensitive", "PII.Sensitive", ("tag",)),
        ("https://om.example/glossaryTerm/g.term", "g.term", ("glossaryTerm",)),
    ],
)
def test_an_openmetadata_entity_as_pasted(pasted: str, fqn: str, types: tuple[str, ...]) -> None:
    assert om_pasted(pasted, tuple(ENTITIES))[:2] == (fqn, types)


def test_an_openmetadata_url_that_names_no_entity_is_refused() -> None:
    with pytest.raises(ValueError, match="no OpenMetadata entity page"):
        om_pasted("https://om.example/settings/members", tuple(ENTITIES))


def test_exposure_needs_a_token_or_a_proxy_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AUDITOR_SERVE_TOKEN", raising=False)
    check_exposure("127.0.0.1", Guard())
    check_exposure("::1", Guard())
    with pytest.raises(ConfigError, match="reaches beyond this machine"):
        check_exposure("0.0.0.0", Guard())
    check_exposure("0.0.0.0", Guard(TOKEN))
    check_exposure("0.0.0.0", Guard(None, "X-Forwarded-User"))
    (tmp_path / "t").write_text(TOKEN + "\n")
    assert read_token(tmp_path / "t") == TOKEN
    monkeypatch.setenv("AUDITOR_SERVE_TOKEN", "short")
    with pytest.raises(ConfigError, match="shorter than 16"):
        read_token(None)
    # the command refuses before it listens, and never prints the token
    monkeypatch.setenv("AUDITOR_SERVE_TOKEN", "")
    done = CliRunner().invoke(
        cli, ["serve", "--host", "0.0.0.0", "--store-url", "sqlite://", "--search-url", "http://x"]
    )
    assert done.exit_code == 2 and "reaches beyond this machine" in done.output
    monkeypatch.setenv("AUDITOR_SERVE_TOKEN", TOKEN)
    done = CliRunner().invoke(cli, ["serve", "--reports", str(tmp_path / "none"), "--store-url", "sqlite://"])
    assert done.exit_code == 2 and TOKEN not in done.output
