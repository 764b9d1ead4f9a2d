"""Renderers of a scan report: one per format behind `render(report) -> str`."""

from __future__ import annotations

from collections.abc import Callable

from auditor.core.model import Report
from auditor.reports import html, json_report, markdown, prometheus

RENDERERS: dict[str, Callable[[Report], str]] = {
    "json": json_report.render,
    "html": html.render,
    "markdown": markdown.render,
    "prometheus": prometheus.render,
}

__all__ = ["RENDERERS"]
