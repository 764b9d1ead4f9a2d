"""The platform import contracts, written once for any number of platforms.

pyproject.toml holds the contracts that name no platform (the layers, the kernel's purity). The
ones about platforms are generated here from the platforms the project registers (its
`auditor.platforms` entry points), so a new platform is covered by adding its registry line:

- a platform's code (its home `auditor.platforms.<name>` and its `auditor.checks.<name>` and
  `auditor.rebuild.<name>` subpackages) imports no other platform's code;
- the shared layers (the kernel, the backends, the scan and repair engines, the reports, the
  face) import no platform's code: only the registry loads one, by name, lazily;
- a platform's checks import the kernel only, and their platform's own names and rules.

Each is an import-linter `forbidden` contract, run by tests/unit/test_architecture.py against the
installed tree. (import-linter's `independence` contract over `auditor.platforms.*` would take
the shared `base` and `resident` modules for platforms.)
"""

from __future__ import annotations

import tomllib
from pathlib import Path

SHARED = (
    "auditor.core", "auditor.backends", "auditor.settings", "auditor.scan", "auditor.triage",
    "auditor.drill", "auditor.watch", "auditor.reports", "auditor.checks", "auditor.rebuild",
    "auditor.api", "auditor.cli", "auditor.serve", "auditor.platforms.base", "auditor.platforms.resident",
)  # fmt: skip
# what a platform's checks may not reach (the kernel is theirs; so are their platform's names)
BELOW_CHECKS = (
    "auditor.backends", "auditor.settings", "auditor.scan", "auditor.triage", "auditor.rebuild",
    "auditor.api", "auditor.cli",
)  # fmt: skip


def registered(pyproject: Path) -> list[str]:
    """The platforms the project registers: the names of its `auditor.platforms` entry points,
    each loaded from `auditor.platforms.<name>`."""
    project = tomllib.loads(pyproject.read_text())["project"]
    points = project.get("entry-points", {}).get("auditor.platforms", {})
    for name, target in points.items():
        if not str(target).startswith(f"auditor.platforms.{name}."):
            raise ValueError(f"platform {name!r} loads from {target!r}, not auditor.platforms.{name}")
    return sorted(points)


def homes(name: str, site: Path) -> list[str]:
    """A platform's packages in the installed tree: its home and its checks/ and rebuild/ parts."""
    out = [f"auditor.platforms.{name}"]
    for part in ("checks", "rebuild"):
        if (site / "auditor" / part / name).is_dir() or (site / "auditor" / part / f"{name}.py").exists():
            out.append(f"auditor.{part}.{name}")
    return out


def _quoted(items: list[str] | tuple[str, ...]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


def _own(home: list[str]) -> list[str]:
    """The imports a platform's parts under a shared package make (`auditor.checks.<name>` and
    `auditor.rebuild.<name>`): theirs, not the shared package's (its own contract covers them)."""
    return [rule for part in home[1:] for rule in (f"{part} -> auditor.**", f"{part}.** -> auditor.**")]


def contracts(platforms: list[str], site: Path) -> str:
    """The import-linter configuration (TOML) of the platform contracts."""
    every = {p: homes(p, site) for p in platforms}
    lines = [
        "[tool.importlinter]",
        'root_packages = ["auditor"]',
        "exclude_type_checking_imports = true",
        "",
    ]
    all_homes = [m for p in platforms for m in every[p]]
    own = [rule for p in platforms for rule in _own(every[p])]
    lines += [
        "[[tool.importlinter.contracts]]",
        'name = "The shared layers import no platform"',
        'type = "forbidden"',
        f"source_modules = {_quoted(SHARED)}",
        f"forbidden_modules = {_quoted(all_homes)}",
        f"ignore_imports = {_quoted(own)}",
        'unmatched_ignore_imports_alerting = "none"',  # a part that is one module matches no `.**`
        "",
    ]
    for p in platforms:
        others = [m for q in platforms if q != p for m in every[q]]
        if others:
            lines += [
                "[[tool.importlinter.contracts]]",
                f"name = \"{p}'s code imports no other platform's\"",
                'type = "forbidden"',
                f"source_modules = {_quoted(every[p])}",
                f"forbidden_modules = {_quoted(others)}",
                "",
            ]
        checks, home = f"auditor.checks.{p}", f"auditor.platforms.{p}"
        if checks in every[p]:
            lines += [
                "[[tool.importlinter.contracts]]",
                f"name = \"{p}'s checks import the kernel and {p}'s names only\"",
                'type = "forbidden"',
                f"source_modules = {_quoted([checks])}",
                f"forbidden_modules = {_quoted(BELOW_CHECKS)}",
                f"ignore_imports = {_quoted([f'{checks} -> {home}.**', f'{checks}.** -> {home}.**'])}",
                'unmatched_ignore_imports_alerting = "none"',
                "",
            ]
    return "\n".join(lines)
