"""The registry of platforms: a name -> the platform, imported only when it is asked for.

This is the one place that imports a platform (by its module path, lazily), so a DataHub
command never loads OpenMetadata's code and the kernel, the pipelines and the reports never
import a platform at all (the contracts in pyproject.toml). A platform registers itself with
one entry point of the group `auditor.platforms` in its distribution's metadata (DataHub's
and OpenMetadata's are in this project's pyproject.toml; another distribution installed beside
it adds its own: docs/adding-a-platform.md); a test registers one with `register`. A platform
is proven when it is loaded: a capability it declares without the methods that do it is
refused then (`base.proof`), not when a user reaches it.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

from auditor.errors import ConfigError

if TYPE_CHECKING:
    from auditor.core.model import Classified
    from auditor.platforms.base import Platform

DEFAULT = "datahub"
GROUP = "auditor.platforms"  # the entry points' group


@dataclass(frozen=True)
class Entry:
    """One platform's entry point: where its object lives and the distribution that declares it."""

    value: str  # "module:attribute" of the platform object
    distribution: str


@cache
def installed() -> dict[str, list[Entry]]:
    """Name -> the entry points of that name in every installed distribution (read once; more
    than one is refused when the name is asked for, never settled silently)."""
    import importlib.metadata  # here: every process imports this package, few ask the registry

    out: dict[str, list[Entry]] = {}
    for point in importlib.metadata.entry_points(group=GROUP):
        dist = point.dist.name if point.dist is not None else "?"
        entry = Entry(point.value, dist)
        if entry not in out.setdefault(point.name.lower(), []):
            out[point.name.lower()].append(entry)
    return out


def _entry(name: str) -> Entry | None:
    entries = installed().get(name)
    if not entries:
        return None
    if len(entries) > 1:
        which = ", ".join(f"{e.distribution} ({e.value})" for e in entries)
        raise ConfigError(
            f"platform {name!r} is registered by more than one distribution: {which}",
            hint="uninstall one of them (pip uninstall ...)",
        )
    return entries[0]


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
    return [DEFAULT] + sorted((set(installed()) | set(_registered)) - {DEFAULT})


def get(name: str | None) -> Platform:
    """The platform called `name` (None or empty: the default), imported on first use."""
    key = (name or DEFAULT).strip().lower()
    if key in _loaded:
        return _loaded[key]
    entry = None if key in _registered else _entry(key)
    if key in _registered:
        platform = _registered[key]()
    elif entry is not None:
        platform = _load(key, entry)
    else:
        hint = "one of: " + ", ".join(names())
        if not installed():
            hint = "no platform is registered: is the auditor installed (pip install -e .)?"
        raise ConfigError(f"unknown platform {name!r}", hint=hint)
    missing = base_proof(platform)
    if missing:
        origin = f" (from {entry.distribution})" if entry is not None else ""
        raise ConfigError(
            f"platform {key!r}{origin} {'; '.join(missing)}",
            hint="a capability is declared only with the methods that do it (docs/adding-a-platform.md)",
        )
    _loaded[key] = platform
    return platform


def _load(key: str, entry: Entry) -> Platform:
    module, _, attribute = entry.value.partition(":")
    try:
        platform = getattr(importlib.import_module(module), attribute)
    except Exception as exc:  # a plug-in's import may fail any way: said, never a traceback
        raise ConfigError(
            f"platform {key!r} (from {entry.distribution}) cannot be loaded: {type(exc).__name__}: {exc}",
            hint=f"its entry point names {entry.value}",
        ) from None
    from auditor.platforms.base import Platform

    if not isinstance(platform, Platform):
        raise ConfigError(f"platform {key!r} (from {entry.distribution}): {entry.value} is not a Platform")
    return platform


def base_proof(platform: Platform) -> list[str]:
    from auditor.platforms.base import proof

    return proof(platform)


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
    entries = installed().get(name)
    if not entries or len(entries) > 1:
        return None
    module = entries[0].value.partition(":")[0].rpartition(".")[0] + ".environment"
    try:
        return importlib.import_module(module) if importlib.util.find_spec(module) is not None else None
    except Exception:  # a plug-in's package that cannot be imported: refused when it is asked for,
        # never breaking another platform's commands (every command reads every environment module)
        return None


def environments() -> list[ModuleType]:
    """Each known platform's own environment variables: the `environment` module beside its
    platform module, when it has one (`NAMES`: setting -> its variables; optionally `adjust`),
    the default's first. Small modules, read by the configuration for every command whichever
    platform it runs (auditor.settings); the platform itself is not imported."""
    return [m for m in (_environment(name) for name in names()) if m is not None]


def whose_tables(has: Callable[[str], bool], active: str) -> str:
    """What a store holding none of the `active` platform's tables holds instead, said for its
    error: another platform's tables (those of its `drill_tables`), named with its --platform."""
    for other in names():
        if other == active:
            continue
        try:
            found = get(other)
        except ConfigError:  # a platform that cannot be loaded has no say here
            continue
        there = [t.name for t in found.drill_tables() if has(t.name)]
        if there:
            listed = ", ".join(there[:3]) + (" ..." if len(there) > 3 else "")
            return f"it holds {found.title}'s tables ({listed}): --platform {other}?"
    return "it holds no table of any platform the auditor knows: is it the right database?"


def of_report(sources: Mapping[str, object]) -> Platform:
    """The platform a report is of, as its sources say (DataHub's say none: the default)."""
    return get(str(sources.get("platform") or "") or None)


def of_findings(findings: Iterable[Classified]) -> Platform:
    """The platform of a set of judged findings, as each names it (`Finding.platform`: never
    assumed): the first that is not the default; the default when all are its, or none."""
    for c in findings:
        name = c.finding.platform
        if name != DEFAULT:
            return get(name)
    return get(DEFAULT)
