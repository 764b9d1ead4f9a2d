"""The heal policy: which findings a scheduled heal may repair by itself, when, and how many.

A TOML file in the configuration's style (docs/heal.md). Nothing is healed unless a policy says
so: without `[heal] enabled = true` the loop only scans, and a finding no rule names is left to a
person. Deleting (an orphan document) is a separate opt-in, `prune`, as Argo CD's pruning is.
A policy the loop cannot follow is refused whole, naming the line that is wrong: a heal that
guessed what a typo meant would write where nobody asked it to.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from pathlib import Path
from typing import Any

from auditor.core.model import Classified, Kind, kind_of
from auditor.errors import ConfigError

ACTIONS = ("heal", "page")  # heal it once persistent; leave it to a person
# the kinds no `auditor rebuild` mode writes (a person's: the platform's own job, an alias, a
# row): a rule that would heal them is refused rather than healing nothing every run
UNHEALABLE = frozenset({Kind.MISSING_INDEX, Kind.DUPLICATE_DOCUMENT, Kind.MALFORMED_ASPECT, Kind.STORE_BEHIND,
                        Kind.STORE_CONFLICT})  # fmt: skip
DELETING = frozenset({Kind.ORPHAN_DOCUMENT})  # healed only with `prune = true`
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_HOURS = re.compile(r"^(\d\d):(\d\d)-(\d\d):(\d\d)$")


class PolicyError(ConfigError):
    """A policy file the loop cannot follow (exit 2): the message names the file and line."""


@dataclass(frozen=True)
class Rule:
    """One `[[rule]]`: the findings it matches ("*" any) and what to do with them."""

    kind: str = "*"
    entity_type: str = "*"
    platform: str = "*"
    action: str = "page"
    after_scans: int = 1  # seen by at least this many scans (this one included)
    after: timedelta = timedelta(0)  # and first seen at least this long ago
    line: int = 0  # where it is in the file (for what the report says)

    def matches(self, c: Classified) -> bool:
        f = c.finding
        return (
            self.kind in ("*", f.kind.value)
            and self.entity_type in ("*", f.entity_type)
            and self.platform in ("*", f.platform)
        )

    def persistent(self, c: Classified, now: datetime, sighted: datetime | None = None) -> bool:
        """Has the finding been seen long enough for this rule (the state file's history)? A
        `sighted` entity (the watch saw it late at that time) counts that sighting as one scan."""
        seen = c.evidence.seen_before + 1 + (sighted is not None)
        first = min(c.evidence.first_seen or now, sighted or now)
        return seen >= self.after_scans and now - first >= self.after


@dataclass(frozen=True)
class Guards:
    """The thresholds of the guards that stop a heal and page instead (auditor/heal/guards.py)."""

    max_share: float = 0.05  # of the scanned entities diverged: more is systemic
    max_count: int = 500  # diverged findings: more is systemic, whatever the share
    require_release: bool = True  # the release the data was judged by must have been found


@dataclass(frozen=True)
class Policy:
    """A parsed policy; `Policy()` is the default: off."""

    enabled: bool = False
    prune: bool = False  # orphan documents deleted (else reported, never deleted)
    max_per_run: int = 100  # entities healed by one run
    max_per_hour: int = 1000  # entities healed over the last hour, by every run
    rate: float | None = 50.0  # entities written per second
    hours: tuple[time, time] | None = None  # allowed hours (UTC, [from, to)), None: any
    mode: str = "reindex"  # the repair a heal runs (reindex: from the rows, no consumer needed)
    rules: tuple[Rule, ...] = ()
    guards: Guards = field(default_factory=Guards)
    source: str = "(default: off)"

    def rule_for(self, c: Classified) -> Rule | None:
        """The first rule matching the finding (None: no rule, a person's)."""
        return next((r for r in self.rules if r.matches(c)), None)

    def recheck_after(self, entity_type: str, platform: str) -> timedelta | None:
        """How long after the watch saw an entity late its re-check waits: the longest `after` of
        the heal rules that may decide its findings (any kind: the watch's kind is a guess until a
        scan reads it); None: no rule heals this entity type, a person's."""
        afters = []
        for r in self.rules:
            if r.entity_type not in ("*", entity_type) or r.platform not in ("*", platform):
                continue
            if r.action == "heal":
                afters.append(r.after)
            if r.kind == "*":  # it decides every kind the rules above did not name
                break
        return max(afters) if afters else None

    def in_hours(self, now: datetime) -> bool:
        if self.hours is None:
            return True
        start, end, at = self.hours[0], self.hours[1], now.time().replace(tzinfo=None)
        return start <= at < end if start <= end else at >= start or at < end


def load_policy(path: Path) -> Policy:
    """The policy in `path`, or PolicyError naming the line that is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(f"cannot read the heal policy {path}: {exc.strerror or exc}") from None
    return parse_policy(text, str(path))


def parse_policy(text: str, source: str = "<policy>") -> Policy:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"{source}: not TOML: {exc}", hint=HINT) from None
    lines = _key_lines(text)
    where = _Where(source, lines)
    _only(data, {"heal", "guards", "rule"}, (), where)
    heal = _table(data.get("heal", {}), ("heal",), where)
    _only(
        heal, {"enabled", "prune", "max_per_run", "max_per_hour", "rate", "hours", "mode"}, ("heal",), where
    )
    guards = _table(data.get("guards", {}), ("guards",), where)
    _only(guards, {"max_share", "max_count", "require_release"}, ("guards",), where)
    rules_in = data.get("rule", [])
    if not isinstance(rules_in, list):
        raise where.error(("rule",), "`rule` is a list of [[rule]] tables")
    rules = tuple(_rule(r, i, where) for i, r in enumerate(rules_in))
    default = Policy()
    mode = _get(heal, "mode", str, default.mode, ("heal",), where)
    if mode not in ("reindex", "replay"):
        raise where.error(("heal", "mode"), f"mode is reindex or replay, not {mode!r}")
    rate = heal.get("rate", default.rate)
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int | float) or rate <= 0):
        raise where.error(("heal", "rate"), "rate is a number of entities per second above 0")
    return Policy(
        enabled=_get(heal, "enabled", bool, default.enabled, ("heal",), where),
        prune=_get(heal, "prune", bool, default.prune, ("heal",), where),
        max_per_run=_count(heal, "max_per_run", default.max_per_run, where),
        max_per_hour=_count(heal, "max_per_hour", default.max_per_hour, where),
        rate=float(rate) if rate is not None else None,
        hours=_hours(heal.get("hours"), where),
        mode=mode,
        rules=rules,
        guards=Guards(
            max_share=_share(guards, where),
            max_count=_count(guards, "max_count", Guards.max_count, where, "guards"),
            require_release=_get(guards, "require_release", bool, True, ("guards",), where),
        ),
        source=source,
    )


HINT = "docs/heal.md describes the policy file"


@dataclass
class _Where:
    source: str
    lines: Mapping[tuple[Any, ...], int]

    def error(self, path: tuple[Any, ...], text: str) -> PolicyError:
        line = self.lines.get(path) or self.lines.get(path[:-1]) or self.lines.get(path[:1])
        at = f"{self.source}, line {line}" if line else self.source
        return PolicyError(f"{at}: {text}", hint=HINT)


def _key_lines(text: str) -> dict[tuple[Any, ...], int]:
    """Each table's and key's line: ("heal",) for `[heal]`, ("rule", 2, "kind") for the third
    `[[rule]]`'s kind. A plain reading of the lines (the file is flat: tables of keys)."""
    out: dict[tuple[Any, ...], int] = {}
    table: tuple[Any, ...] = ()
    counts: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("[["):
            name = line.strip("[] ").split("#")[0].strip()
            counts[name] = counts.get(name, -1) + 1
            table = (name, counts[name])
            out.setdefault(table, n)
            out.setdefault((name,), n)
        elif line.startswith("["):
            table = (line.split("]")[0].strip("[ "),)
            out.setdefault(table, n)
        elif "=" in line and not line.startswith("#"):
            key = line.split("=", 1)[0].strip().strip("\"'")
            out.setdefault((*table, key), n)
            if not table:
                out.setdefault((key,), n)
    return out


def _table(value: Any, path: tuple[Any, ...], where: _Where) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.error(path, f"`{'.'.join(map(str, path))}` is a table")
    return value


def _only(table: Mapping[str, Any], known: set[str], path: tuple[Any, ...], where: _Where) -> None:
    for key in table:
        if key not in known:
            name = f"[{path[0]}] " if path else ""
            raise where.error((*path, key), f"unknown key {name}{key!r} (known: {', '.join(sorted(known))})")


def _get(
    table: Mapping[str, Any], key: str, kind: type, default: Any, path: tuple[Any, ...], where: _Where
) -> Any:
    value = table.get(key, default)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise where.error((*path, key), f"{key} is a {kind.__name__}, not {value!r}")
    return value


def _count(table: Mapping[str, Any], key: str, default: int, where: _Where, table_name: str = "heal") -> int:
    value = _get(table, key, int, default, (table_name,), where)
    if value < 0:
        raise where.error((table_name, key), f"{key} is 0 or more, not {value}")
    return int(value)


def _share(guards: Mapping[str, Any], where: _Where) -> float:
    value = guards.get("max_share", Guards.max_share)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise where.error(("guards", "max_share"), f"max_share is a share between 0 and 1, not {value!r}")
    return float(value)


def _hours(value: Any, where: _Where) -> tuple[time, time] | None:
    if value is None:
        return None
    match = _HOURS.match(value) if isinstance(value, str) else None
    if match is None:
        raise where.error(("heal", "hours"), f'hours is "HH:MM-HH:MM" (UTC), not {value!r}')
    h1, m1, h2, m2 = (int(g) for g in match.groups())
    if h1 > 24 or h2 > 24 or m1 > 59 or m2 > 59:
        raise where.error(("heal", "hours"), f"hours {value!r} is not a time of day")
    return _time(h1, m1), _time(h2, m2)


def _time(h: int, m: int) -> time:
    return time.max if h == 24 else time(h, m)


def duration(value: Any) -> timedelta | None:
    """ "30s", "10m", "2h", "1d" (None: not a duration)."""
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    return timedelta(seconds=float(match.group(1)) * _UNIT[match.group(2)])


def _rule(raw: Any, i: int, where: _Where) -> Rule:
    path = ("rule", i)
    table = _table(raw, path, where)
    _only(table, {"kind", "entity_type", "platform", "action", "after_scans", "after"}, path, where)
    for key in ("kind", "entity_type", "platform", "action"):
        if key in table and not isinstance(table[key], str):
            raise where.error((*path, key), f"{key} is a string, not {table[key]!r}")
    kind = table.get("kind", "*")
    if kind != "*":
        try:
            kind_of(kind)
        except ValueError as exc:
            raise where.error((*path, "kind"), str(exc)) from None
    action = table.get("action", "page")
    if action not in ACTIONS:
        raise where.error((*path, "action"), f"action is heal or page, not {action!r}")
    if action == "heal" and kind in UNHEALABLE:
        raise where.error(
            (*path, "kind"), f'{kind} is a person\'s to repair (no rebuild mode writes it): action = "page"'
        )
    after_scans = table.get("after_scans", 1)
    if isinstance(after_scans, bool) or not isinstance(after_scans, int) or after_scans < 1:
        raise where.error(
            (*path, "after_scans"), f"after_scans is a number of scans, 1 or more, not {after_scans!r}"
        )
    after = duration(table.get("after", "0s"))
    if after is None:
        raise where.error(
            (*path, "after"), f'after is a duration ("30s", "10m", "2h", "1d"), not {table["after"]!r}'
        )
    return Rule(kind, table.get("entity_type", "*"), table.get("platform", "*"), action, after_scans, after,
                where.lines.get(path, 0))  # fmt: skip


def describe(rules: Sequence[Rule]) -> list[str]:
    """One line per rule, as the report lists them."""
    return [
        f"{r.kind}/{r.entity_type}/{r.platform}: {r.action}"
        + (f" after {r.after_scans} scans and {r.after}" if r.action == "heal" else "")
        for r in rules
    ]
