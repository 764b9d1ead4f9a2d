"""`auditor serve`, the on-call console, against the real stack in a real headless Chromium: each
state on the triage page (a missing document, an orphan, a stalled consumer, an in-flight change,
an unknown urn with its near matches), a hostile urn shown and never run, the API's verdicts
equal to `auditor triage --format json`'s, the scan reports folder, and the database cut and
restored under a running console (through a TCP forwarder: the shared server is not touched)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from browser import artifacts, chromium
from faults import _tags, drop_mcl, hard_delete
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from serving import Served
from sqlalchemy.engine import make_url
from tcp_cut import TcpCut
from world import World

from auditor.platforms.datahub.urn_text import dataset_name
from auditor.reports.json_report import render as render_json
from sandbox.naming import entity_doc_id, entity_index

pytestmark = pytest.mark.integration

HOSTILE = (
    "urn:li:dataset:(urn:li:dataPlatform:hive,x\"'><script>document.title='pwned'</script>"
    "<img src=x onerror=document.title=1>\u202e\u00e9\u2028\u6f22,PROD)"
)
TIMEOUT = 10.0


class Console:
    def __init__(self, world: World, tmp: Path) -> None:
        self.world = world
        url = make_url(world.settings().store_url.get_secret_value())  # type: ignore[union-attr]
        self.db = TcpCut(url.host or "127.0.0.1", url.port or 5432)
        through = url.set(host="127.0.0.1", port=self.db.port).render_as_string(hide_password=False)
        self.reports = tmp / "reports"
        self.reports.mkdir()
        env = world.cli_env(KAFKA_BOOTSTRAP_SERVER="", AUDITOR_STORE_URL=through)
        self.served = Served(
            env, tmp / "serve.log", "--settle", "1", "--timeout", str(TIMEOUT), "--reports", str(self.reports)
        )
        deadline = time.monotonic() + 30
        while self.served.json("/readyz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.2)

    def api(self, asked: str) -> tuple[int, dict[str, Any]]:
        return self.served.json("/api/triage?" + urlencode({"q": asked}, quote_via=quote))


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    tmp = tmp_path_factory.mktemp("serve")
    world = World("postgres", "elasticsearch", tmp, n=40)
    c = None
    try:
        c = Console(world, tmp)
        yield c
    finally:
        if c is not None:
            code = c.served.stop()
            c.db.close()
            said = c.served.said()
            assert code == 0, said
            # nothing on screen but the tool's own lines: its loggers and the access log, one line
            # each, no credentials
            own = re.compile(r"^\S+ (auditor(\.\w+)*|uvicorn\.access): ")
            strangers = [line for line in said.splitlines() if not own.match(line)]
            assert strangers == [], strangers
            password = make_url(world.settings().store_url.get_secret_value()).password  # type: ignore[union-attr]
            assert password and f":{password}@" not in said
            assert "Traceback" not in said
        world.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    driver = chromium(tmp_path_factory.mktemp("chromium"))
    try:
        yield driver
    finally:
        driver.quit()


def cli_triage(world: World, urn: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "auditor.cli", "triage", urn, "--format", "json", "--settle", "1"],
        env=world.cli_env(KAFKA_BOOTSTRAP_SERVER=""),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stderr == "", done.stderr
    return done.returncode, json.loads(done.stdout)


def same(out: dict[str, Any]) -> dict[str, Any]:
    """What must agree between the console and the CLI (not the times)."""
    return {
        "urn": out["urn"],
        "verdict": out["verdict"],
        "subkind": out["subkind"],
        "first_break": out["first_break"],
        "statuses": [(b["boundary"], b["status"]) for b in out["boundaries"]],
        "kinds": sorted((f["kind"], f["verdict"]) for f in out["findings"]),
        "repair": out["repair"],
        "near": [m["urn"] for m in out["near_matches"]],
        "exit_code": out["exit_code"],
    }


def ask(driver: Any, console: Console, text: str, refused: bool = False) -> dict[str, Any]:
    """Paste `text` into the form on the home page, submit; what the page shows."""
    driver.get(console.served.base + "/")
    box = driver.find_element(By.ID, "q")
    box.send_keys(text)
    box.send_keys(Keys.ENTER)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = driver.find_elements(By.ID, "verdict") or driver.find_elements(By.ID, "error")
        if found and driver.current_url.startswith(console.served.base + "/triage"):
            break
        time.sleep(0.05)
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    if refused:  # the page's own 4xx status is logged as a failed load: nothing else may be
        errors = [e for e in errors if not (e["source"] == "network" and "status of 400" in e["message"])]
    assert errors == [], errors
    verdict = driver.find_elements(By.ID, "verdict")
    first = driver.find_elements(By.CSS_SELECTOR, "#boundaries tr.first-break")
    return {
        "verdict": verdict[0].get_attribute("data-verdict") if verdict else None,
        "headline": verdict[0].text if verdict else None,
        "first": first[0].get_attribute("data-boundary") if first else None,
        "status": first[0].get_attribute("data-status") if first else None,
        "repair": [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#repair pre.command")],
        "near": [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#near a")],
        "urn": driver.find_element(By.CSS_SELECTOR, "#urn code").text if verdict else None,
        "error": driver.find_element(By.ID, "error").text if not verdict else None,
    }


def test_each_state_on_the_page_with_the_cli_s_verdicts(console: Console, browser: Any) -> None:
    world = console.world
    datasets = [e.urn for e in world.of_type("dataset")]
    healthy = datasets[-1]
    (dropped,) = drop_mcl(world, which=1)
    (orphan,) = hard_delete(world, which=2)
    missing = datasets[3]
    world.search.delete(entity_index("dataset", world.prefix), entity_doc_id(missing))
    world.writer.write(HOSTILE, "datasetProperties", {"name": "<b>evil</b>", "description": "\x1b[31m"})
    assert world.consumer.drain(60)
    world.refresh()
    time.sleep(1.2)  # older than --settle: a missing MCL is not on its way any more
    name = dataset_name(healthy)
    assert name is not None
    unknown = healthy.replace(f",{name},", f",{name.upper()},")

    expected = {
        healthy: ("consistent", None, None),
        missing: ("diverged", "document", "broken"),
        dropped: ("diverged", "MCL published", "broken"),
        orphan: ("diverged", "document", "broken"),
        unknown: ("unknown", None, None),
        HOSTILE: ("consistent", None, None),
    }
    for urn, (verdict, first, status) in expected.items():
        shown = ask(browser, console, urn)
        assert (shown["verdict"], shown["first"], shown["status"]) == (verdict, first, status), (urn, shown)
        assert shown["urn"] == urn.replace("\u2028", "\\u2028").replace("\u202e", "\\u202e"), shown
        code, out = console.api(urn)
        assert code == 200, out
        got, want = same(out), same(cli_triage(world, urn)[1])
        assert got == want, (urn, got, want)
        assert shown["repair"] == out["repair"]  # the commands to copy, as the CLI prints them
        if verdict == "diverged":
            assert shown["repair"] and shown["repair"][0].startswith("auditor rebuild "), shown
    assert console.api(missing)[1]["subkind"] == "missing_document"
    assert console.api(orphan)[1]["subkind"] == "orphan_document"
    assert console.api(dropped)[1]["subkind"] == "event_never_published"

    # the unknown urn offers the real one; following it triages that one
    shown = ask(browser, console, unknown)
    assert healthy in shown["near"], shown
    browser.find_element(By.LINK_TEXT, healthy).click()
    assert browser.find_element(By.ID, "verdict").get_attribute("data-verdict") == "consistent"

    # pasted as from a browser's address bar: a DataHub URL, URL-encoded
    shown = ask(
        browser,
        console,
        f"https://datahub.example/dataset/{quote(healthy, safe='')}/Schema?is_lineage_mode=false",
    )
    assert shown["verdict"] == "consistent" and shown["urn"] == healthy, shown

    # not a urn: a clear error on the page, 400 from the API
    shown = ask(browser, console, "urn:li:dataset:(unbalanced", refused=True)
    assert shown["verdict"] is None and "not a urn" in shown["error"], shown
    assert console.api("urn:li:dataset:(unbalanced")[0] == 400
    browser.save_screenshot(str(artifacts() / "serve-triage.png"))


def test_a_hostile_urn_stays_inert(console: Console, browser: Any) -> None:
    world = console.world
    world.writer.write(HOSTILE, "datasetProperties", {"name": "<b>evil</b>", "description": "x"})
    assert world.consumer.drain(60)
    for asked in (HOSTILE, HOSTILE.replace("PROD)", "DEV)")):  # known, and unknown (near matches)
        browser.get(console.served.base + "/triage?" + urlencode({"q": asked}, quote_via=quote))
        assert browser.title != "pwned" and browser.title != "1"
        assert browser.execute_script("return document.images.length") == 0
        scripts = browser.execute_script("return document.scripts.length")
        assert scripts == 1  # the page's own (copy buttons)
        assert len(browser.find_elements(By.TAG_NAME, "h1")) == 1
        assert "<script>document.title='pwned'</script>" in browser.find_element(By.ID, "urn").text
        value = browser.find_element(By.ID, "q").get_attribute("value")
        assert value == asked  # the form gives it back exactly (quotes and all)
        errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        assert errors == [], errors
    status, body = console.served.get("/triage?" + urlencode({"q": HOSTILE}, quote_via=quote))
    assert status == 200 and "<script>document.title" not in body
    assert body.count("\u2028") == 1  # only in the form's value (given back exactly), spelled elsewhere
    policy = body and console_policy(console)
    assert "script-src 'sha256-" in policy and "default-src 'none'" in policy


def console_policy(console: Console) -> str:
    import urllib.request

    with urllib.request.urlopen(console.served.base + "/") as answer:
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        return str(answer.headers["Content-Security-Policy"])


def test_stalled_then_in_flight(console: Console, browser: Any) -> None:
    world = console.world
    datasets = [e.urn for e in world.of_type("dataset")]
    world.consumer.stall()
    time.sleep(0.5)
    stuck = datasets[4]
    world.writer.write(stuck, "globalTags", _tags("while-stalled"))
    try:
        shown = ask(browser, console, stuck)
        assert (shown["verdict"], shown["first"]) == ("stalled", "consumed"), shown
        assert any("restart" in r.lower() for r in shown["repair"]), shown
    finally:
        world.consumer.resume()
    assert world.consumer.drain(60)

    world.consumer.pause()  # a backlog behind a consumer that catches up slowly: in flight, an ETA
    behind = datasets[5]
    for j in range(120):
        world.writer.write(behind, "globalTags", _tags(f"backlog-{j}"))
    world.consumer.rate(4.0, commit_every=4.0)
    commits = world.consumer.stats.commits
    world.consumer.resume()
    try:
        deadline = time.monotonic() + 30
        while world.consumer.stats.commits < commits + 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        shown = ask(browser, console, behind)
        assert (shown["verdict"], shown["first"], shown["status"]) == ("in_flight", "consumed", "pending")
        assert shown["repair"] == [] and "in flight at consumed" in shown["headline"], shown
    finally:
        world.consumer.rate(None)
    assert world.consumer.drain(60)


def test_the_reports_folder(console: Console, browser: Any) -> None:
    world = console.world
    first = world.scan()
    (console.reports / "scan-20260101T000000Z.json").write_text(render_json(first))
    time.sleep(0.05)
    world.writer.write(world.of_type("dataset")[7].urn, "globalTags", _tags("lost"), drop_mcl=True)
    time.sleep(1.2)
    second = world.scan()
    (console.reports / "scan-20260101T003000Z.json").write_text(render_json(second))
    (console.reports / "latest.json").write_text(render_json(second))
    (console.reports / "notes.json").write_text("{not json")
    browser.get(console.served.base + "/reports")
    rows = browser.find_elements(By.CSS_SELECTOR, "#reports tbody tr[data-name]")
    assert [r.get_attribute("data-name") for r in rows] == [
        "scan-20260101T003000Z.json",
        "scan-20260101T000000Z.json",
    ]
    assert browser.find_elements(By.CSS_SELECTOR, "#reports tr.unreadable")  # listed, with why
    assert browser.find_elements(By.CSS_SELECTOR, "#trend svg")
    newest = rows[0].find_elements(By.TAG_NAME, "td")

    def persistent(report: Any) -> int:
        return sum(n for (_, verdict, _), n in report.counts.items() if verdict != "in_flight")

    assert persistent(second) > 0 and persistent(second) != persistent(first)
    assert newest[-2].text == str(persistent(second))
    assert newest[-1].text == f"{persistent(second) - persistent(first):+d}"  # since the run before
    rows[0].find_element(By.TAG_NAME, "a").click()
    assert browser.find_element(By.ID, "result").text.startswith("Persistent divergence found")
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == [], errors
    code, listed = console.served.json("/api/reports")
    by_name = {e["name"]: e for e in listed}
    assert code == 200 and by_name["scan-20260101T003000Z.json"]["exit_code"] == second.exit_code == 1
    assert by_name["notes.json"]["error"].startswith("not a scan report")
    assert console.served.get("/reports/..%2Fserve.log")[0] == 404  # only the folder's reports


def test_a_database_cut_and_restored_under_the_running_console(console: Console) -> None:
    healthy = console.world.of_type("dataset")[-1].urn
    pid = console.served.proc.pid
    assert console.api(healthy)[0] == 200  # warm
    console.db.cut()  # the database gone: open connections dropped, new ones never answered
    try:
        began = time.monotonic()
        status, body = console.served.get("/triage?" + urlencode({"q": healthy}, quote_via=quote))
        took = time.monotonic() - began
        assert status in (503, 504) and took < TIMEOUT + 2, (status, took)
        assert 'id="error"' in body and ("did not answer within" in body or "down" in body), body
        status, ready = console.served.json("/readyz")
        assert status == 503 and ready["down"] == ["database"], ready
        assert ready["backends"]["search"]["up"] is True
        assert console.served.get("/healthz")[0] == 200  # the process is up
    finally:
        console.db.restore()
    deadline = time.monotonic() + 30
    while True:
        status, out = console.api(healthy)
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert status == 200 and out["verdict"] == "consistent", out
    assert console.served.json("/readyz")[0] == 200
    assert console.served.proc.pid == pid and console.served.proc.poll() is None
