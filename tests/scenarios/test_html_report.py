"""The HTML report of real scans, opened in a real headless Chromium: it loads with no console
error, its charts are drawn from the scan's numbers, filtering and sorting work, hostile text
from the data is shown and never run, and a screenshot is left in the test artifacts."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import artifacts, chromium
from faults import stale_field
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select
from test_scan_features import cli
from world import World

pytestmark = pytest.mark.integration

HOSTILE = (
    "urn:li:dataset:(urn:li:dataPlatform:hive,evil|<img src=x onerror=alert(1)>`rm -rf`\n# Heading,PROD)"
)


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict, set[str]]]:
    tmp = tmp_path_factory.mktemp("html")
    world = World("postgres", "elasticsearch", tmp, n=40)
    try:
        targets = stale_field(world)
        dropped = next(e.urn for e in world.of_type("dataset") if e.urn not in targets)
        world.writer.write(dropped, "globalTags", {"tags": [{"tag": "urn:li:tag:lost"}]}, drop_mcl=True)
        targets.add(dropped)
        world.writer.write(
            HOSTILE, "datasetProperties", {"name": "evil", "description": "<b>x</b>"}, drop_mcl=True
        )
        targets.add(HOSTILE)
        world.consumer.stop()
        args = ("scan", "--settle", "0.5", "--sample-window", "1")
        for _ in range(2):  # earlier scans: the trend
            assert cli(world, *args, "-f", "json").returncode == 1
        page = tmp / "report.html"
        done = cli(world, *args, "-f", "json", "-o", str(tmp / "last.json"))
        assert done.returncode == 1, done.stderr
        done = cli(world, *args, "-f", "html", "-o", str(page))
        assert done.returncode == 1, done.stderr
        yield page, json.loads((tmp / "last.json").read_text()), targets
    finally:
        world.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    driver = chromium(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield driver
    finally:
        driver.quit()


def visible_rows(driver) -> list:
    return [r for r in driver.find_elements(By.CSS_SELECTOR, "#findings tbody tr") if r.is_displayed()]


def test_the_page_loads_clean_and_draws_the_scan(scanned, browser) -> None:
    page, last, targets = scanned
    html = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "the page fetches something"
    browser.get(page.as_uri())
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == [], errors
    assert browser.find_element(By.ID, "result").text.startswith("Persistent divergence found")
    # verdicts per entity type: one bar per (type, verdict) with findings, sized by its count
    bars = browser.find_elements(By.CSS_SELECTOR, "#chart-verdicts rect.bar")
    drawn = {
        (b.get_attribute("data-type"), b.get_attribute("data-verdict")): int(b.get_attribute("data-count"))
        for b in bars
    }
    counted: dict[tuple[str, str], int] = {}
    for row in last["counts"]:
        key = (row["entity_type"], row["verdict"])
        counted[key] = counted.get(key, 0) + row["count"]
    assert drawn == counted and drawn
    assert all(float(b.get_attribute("width")) > 0 for b in bars)
    assert all(b.size["width"] > 0 for b in bars), "a bar has no size on screen"
    # lag per partition: a start and an end bar for every sampled partition
    ends = browser.find_elements(By.CSS_SELECTOR, "#chart-lag rect.lag-end")
    assert len(ends) == len(last["partitions"]) > 0
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chart-lag rect.lag-start")) == len(ends)
    # the trend: this scan and the three before it, from the state file
    points = browser.find_elements(By.CSS_SELECTOR, "#chart-trend circle.point[data-verdict=diverged]")
    assert len(points) == 4
    assert int(points[-1].get_attribute("data-count")) == sum(
        r["count"] for r in last["counts"] if r["verdict"] == "diverged"
    )
    # the findings table: the broken urns, each exactly as written, with its repair
    rows = visible_rows(browser)
    urns = {r.find_element(By.CSS_SELECTOR, "td.urn").get_attribute("textContent") for r in rows}
    assert urns == {u.replace("\n", "\\n") for u in targets}
    assert all(r.find_elements(By.CSS_SELECTOR, "td.repair code") for r in rows), "a row without its repair"
    browser.save_screenshot(str(artifacts() / "html-report.png"))
    assert (artifacts() / "html-report.png").stat().st_size > 10_000


def test_hostile_text_is_shown_and_never_run(scanned, browser) -> None:
    page, _, _ = scanned
    browser.get(page.as_uri())  # an alert() would fail every later driver call
    assert browser.execute_script("return document.images.length") == 0
    assert len(browser.find_elements(By.TAG_NAME, "h1")) == 1  # no heading from the data
    shown = browser.find_element(By.TAG_NAME, "body").text
    assert "<img src=x onerror=alert(1)>`rm -rf`\\n# Heading" in shown
    policy = browser.find_element(By.CSS_SELECTOR, "meta[http-equiv=Content-Security-Policy]")
    assert "default-src 'none'" in policy.get_attribute("content")


def test_filter_and_sort(scanned, browser) -> None:
    page, _, targets = scanned
    browser.get(page.as_uri())
    rows = visible_rows(browser)
    total = len(rows)
    assert total >= len(targets) >= 3
    hostile = [
        r for r in rows if "onerror" in r.find_element(By.CSS_SELECTOR, "td.urn").get_attribute("textContent")
    ]
    assert 0 < len(hostile) < total
    box = browser.find_element(By.ID, "filter-text")
    box.send_keys("onerror")
    assert visible_rows(browser) == hostile
    assert browser.find_element(By.ID, "shown").text == str(len(hostile))
    box.clear()
    box.send_keys("no such text anywhere")
    assert visible_rows(browser) == []
    box.clear()
    browser.execute_script("arguments[0].dispatchEvent(new Event('input'))", box)
    assert len(visible_rows(browser)) == total
    verdict = Select(browser.find_element(By.ID, "filter-verdict"))
    options = [o.get_attribute("value") for o in verdict.options if o.get_attribute("value")]
    for value in options:
        verdict.select_by_value(value)
        shown = visible_rows(browser)
        assert shown and all(r.get_attribute("data-verdict") == value for r in shown)
    verdict.select_by_value("")
    header = browser.find_element(By.XPATH, "//table[@id='findings']/thead/tr/th[text()='urn']")
    header.click()
    cells = [
        r.find_element(By.CSS_SELECTOR, "td.urn").get_attribute("textContent") for r in visible_rows(browser)
    ]
    assert cells == sorted(cells)
    header.click()
    again = [
        r.find_element(By.CSS_SELECTOR, "td.urn").get_attribute("textContent") for r in visible_rows(browser)
    ]
    assert again == sorted(cells, reverse=True) and header.get_attribute("aria-sort") == "descending"
