"""Renderers of a scan report: one per format behind `render(report) -> str`.

`RENDERERS` is made on first use: a process that only escapes text or renders a triage (the
platforms' commands import `reports.escape`) does not import the HTML, Markdown and Prometheus
renderers with this package."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from auditor.core.model import Report

RENDERERS: dict[str, Callable[[Report], str]]


def __getattr__(name: str) -> Any:
    if name != "RENDERERS":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from auditor.reports import html, json_report, markdown, prometheus

    renderers: dict[str, Callable[[Report], str]] = {
        "json": json_report.render,
        "html": html.render,
        "markdown": markdown.render,
        "prometheus": prometheus.render,
    }
    globals()["RENDERERS"] = renderers
    return renderers


__all__ = ["RENDERERS"]
