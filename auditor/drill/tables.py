"""Which tables a drill compares: a platform's own (`Platform.drill_tables`), chosen by the names
`--table` gives, another platform's refused naming the `--platform` that has it.

The registry is asked here, above the table specs (`spec`), which the platforms import to
describe their tables and which import no platform.
"""

from __future__ import annotations

from auditor import platforms
from auditor.drill.spec import TableSpec
from auditor.errors import ConfigError


def platform_tables(platform: str) -> dict[str, TableSpec]:
    """One platform's drill tables by name (its `Platform.drill_tables`). Tables are namespaced
    by platform: another platform (a fork) may have a table of the same name, never overriding
    this one's; a name the platform gives twice is an error (which one would be compared?)."""
    found = platforms.get(platform)
    out: dict[str, TableSpec] = {}
    for spec in found.drill_tables():
        if spec.name in out:
            raise ConfigError(
                f"{found.title} gives the drill table {spec.name!r} twice",
                hint=f"its drill_tables() must name each table once ({type(found).__module__})",
            )
        out[spec.name] = spec
    return out


def table_specs(names: list[str], platform: str | None = None) -> tuple[TableSpec, ...]:
    """The specs `--table` names among the active platform's tables (`--platform`; None: the
    default, DataHub): one of its tables (`metadata_aspect_v2`, `table_entity`, ...), or the
    platform's own name (`openmetadata`) for every table of it; none named, every table of it.
    Another platform's table is refused, naming the platform that has it."""
    active = platforms.get(platform)
    own = platform_tables(active.name)
    if not own:
        raise ConfigError(f"{active.title} has no tables a restore drill compares")
    out: list[TableSpec] = []
    for name in names or [active.name]:
        if name in own:
            out.append(own[name])
        elif name == active.name:
            out.extend(sorted(own.values(), key=lambda t: t.name))
        else:
            raise ConfigError(
                f"--table {name!r}: not one of {active.title}'s tables",
                hint=_elsewhere(name, active.name)
                or f"{active.name} for every table of it, or one of: " + ", ".join(sorted(own)),
            )
    return tuple(dict.fromkeys(out))


def _elsewhere(name: str, active: str) -> str | None:
    """The `--platform` that has `name` (a table of another platform, or its name), if any."""
    for other in platforms.names():
        if other == active:
            continue
        try:
            tables = {t.name for t in platforms.get(other).drill_tables()}
        except ConfigError:  # a platform that cannot be loaded has no say here
            continue
        title = platforms.get(other).title
        if tables and name == other:
            return f"add --platform {other} for {title}'s tables"
        if name in tables:
            return f"{name} is a table of {title}'s: add --platform {other}"
    return None
