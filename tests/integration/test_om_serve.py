"""`auditor serve --platform openmetadata` against the real servers (PostgreSQL + OpenSearch 3):
an entity pasted as its FQN, its id or its page's URL gets the verdict `auditor triage
--platform openmetadata --format json` gives, on the page (headless Chromium) and in the API."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from test_om_profile import _inject, om_world
from test_om_triage import triage

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scenarios"))
from browser import chromium  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from serving import Served, clean_env  # noqa: E402

pytestmark = pytest.mark.integration


def essentials(out: dict[str, Any]) -> tuple[Any, ...]:
    return (out["urn"], out["verdict"], out["subkind"], out["first_break"], out["repair"], out["exit_code"])


def test_an_openmetadata_entity_on_the_console(tmp_path: Path) -> None:
    with om_world("postgres", "opensearch3", tmp_path, n=40) as w:
        hit = _inject(w)
        fine = w.catalog.of_type("table")[6]
        env = clean_env(AUDITOR_STATE_FILE=str(w.state))
        args = ["--platform", "openmetadata", "--store-url", w.store_url, "--search-url", w.search_url]
        served = Served(env, tmp_path / "serve.log", *args, "--cluster-alias", w.alias, "--grace", "0")
        driver = chromium(tmp_path / "chromium")
        try:
            for asked, verdict in (
                (fine.fqn, "consistent"),
                (hit["stale"], "diverged"),
                (hit["missing"], "diverged"),
                (f"https://om.example/table/{quote(fine.fqn, safe='')}/schema", "consistent"),
                (f"{fine.fqn}_nope", "unknown"),
            ):
                status, out = served.json("/api/triage?" + urlencode({"q": asked}, quote_via=quote))
                assert status == 200 and out["verdict"] == verdict, (asked, out)
                if asked.startswith("https://"):
                    assert out["urn"] == fine.id and "taken from the URL (a table)" in out["read_as"], out
                    asked = fine.fqn  # the CLI takes no URL: the same entity by its name
                code, cli, said = triage(w, asked, "--format", "json", "--grace", "0")
                assert essentials(out) == essentials(cli), (asked, out, said)
                driver.get(served.base + "/triage?" + urlencode({"q": asked}, quote_via=quote))
                shown = driver.find_element(By.ID, "verdict").get_attribute("data-verdict")
                assert shown == verdict, asked
                if verdict == "diverged":
                    repair = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#repair pre.command")]
                    assert repair == out["repair"] and "--platform openmetadata" in repair[0], repair
            # the stale description (with markup and an escape sequence) is shown, never run
            driver.get(served.base + "/triage?" + urlencode({"q": hit["stale"]}, quote_via=quote))
            assert driver.execute_script("return document.querySelectorAll('b').length") == 0
            errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
            assert errors == [], errors
        finally:
            driver.quit()
            assert served.stop() == 0, served.said()
