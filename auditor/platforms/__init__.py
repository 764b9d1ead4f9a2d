"""The registry of platforms: a name -> the platform, imported only when it is asked for.

This is the one place that imports a platform (by its module path, lazily), so a DataHub
command never loads OpenMetadata's code and the kernel, the pipelines and the reports never
import a platform at all (the contracts in pyproject.toml). A new platform adds its home and
one line to `KNOWN` (docs/adding-a-platform.md); a test registers one with `register`.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING

from auditor.errors import ConfigError

if TYPE_CHECKING:
    from auditor.core.model import Classified
    from auditor.platforms.base import Platform

DEFAULT = "datahub"

# name -> "module:attribute" of the platform object
KNOWN: dict[str, str] = {
    "datahub": "auditor.platforms.datahub.platform:PLATFORM",
    "openmetadata": "auditor.platforms.openmetadata.platform:PLATFORM",
}

_loaded: dict[str, Platform] = {}
_registered: dict[str, Callable[[], Platform]] = {}


def register(name: str, factory: Callable[[], Platform]) -> None:
    """Register a platform under `name` (a test's platform, a plug-in)."""
    _registered[name] = factory
    _loaded.pop(name, None)


def unregister(name: str) -> None:
    _registered.pop(name, None)
    _loaded.pop(name, None)


def names() -> list[str]:
    """Every platform the registry knows, the default first."""
    return [DEFAULT] + sorted((set(KNOWN) | set(_registered)) - {DEFAULT})


def get(name: str | None) -> Platform:
    """The platform called `name` (None or empty: the default), imported on first use."""
    key = (name or DEFAULT).strip().lower()
    if key in _loaded:
        return _loaded[key]
    if key in _registered:
        platform = _registered[key]()
    elif key in KNOWN:
        module, _, attribute = KNOWN[key].partition(":")
        platform = getattr(importlib.import_module(module), attribute)
    else:
        raise ConfigError(f"unknown platform {name!r}", hint="one of: " + ", ".join(names()))
    _loaded[key] = platform
    return platform


def setting_owners() -> dict[str, set[str]]:
    """Each platform's own settings (its environment module's `SETTINGS`) -> the platforms using
    it; a setting no platform lists is every platform's (the store, the search cluster, ...)."""
    out: dict[str, set[str]] = {}
    for name in names():
        module = _environment(name)
        for setting in getattr(module, "SETTINGS", ()) if module is not None else ():
            out.setdefault(setting, set()).add(name)
    return out


def _environment(name: str) -> ModuleType | None:
    if name not in KNOWN:
        return None
    module = KNOWN[name].partition(":")[0].rpartition(".")[0] + ".environment"
    return importlib.import_module(module) if importlib.util.find_spec(module) is not None else None


def environments() -> list[ModuleType]:
    """Each known platform's own environment variables: the `environment` module beside its
    platform module, when it has one (`NAMES`: setting -> its variables; optionally `adjust`),
    the default's first. Small modules, read by the configuration for every command whichever
    platform it runs (auditor.settings); the platform itself is not imported."""
    return [m for m in (_environment(name) for name in names()) if m is not None]


def name_of_finding(details: Mapping[str, object]) -> str:
    """The platform a finding belongs to, as its details say (DataHub's carry none)."""
    return str(details.get("platform") or DEFAULT)


def of_report(sources: Mapping[str, object]) -> Platform:
    """The platform a report is of, as its sources say (DataHub's say none: the default)."""
    return get(str(sources.get("platform") or "") or None)


def of_findings(findings: Iterable[Classified]) -> Platform:
    """The platform of a set of judged findings (the first that names one; the default else)."""
    for c in findings:
        name = name_of_finding(c.finding.details)
        if name != DEFAULT:
            return get(name)
    return get(DEFAULT)
