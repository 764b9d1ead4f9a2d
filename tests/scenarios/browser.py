"""Debian's Chromium, headless, driven through its ChromeDriver (selenium) for the report tests.

A browser that does not start fails the test: CI installs it (scripts/install-browser)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

# this machine's network is closed: no background fetches, no first-run, nothing but the page
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1600",
)


def chromium(user_data: Path) -> webdriver.Chrome:
    binary = shutil.which("chromium") or "/usr/bin/chromium"
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    assert Path(binary).exists() and Path(driver).exists(), (
        "Chromium and ChromeDriver are not installed: run scripts/install-browser"
    )
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={user_data}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


def artifacts() -> Path:
    """Where the tests leave what a person may want to look at (screenshots)."""
    root = Path(
        os.environ.get("AUDITOR_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "test-artifacts")
    )
    root.mkdir(parents=True, exist_ok=True)
    return root
