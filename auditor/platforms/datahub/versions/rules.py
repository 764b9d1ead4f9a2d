"""DataHub's index rules per release (the shipped rules.json), and release numbers compared.

A release is what GMS reports (`v1.7.0.1`, `v1.0.0rc3`, `1.4.0-0` from an upgrade id): the
leading `v` and any `-<revision>` are dropped; parts compare as numbers (`1.10` > `1.9`); an
`rcN` comes before its release. The rules of a server release are those of the newest shipped
release at or below it (`v1.7.0.1` -> `1.7.0`); a server newer than every shipped release is
judged by the newest (the installed wheel's) with a warning that says so.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_RULES = Path(__file__).with_name("rules.json")
_RELEASE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)(?:[.-]?(rc|alpha|beta|a|b)\.?(\d+))?(?:-[\w.]+)?\s*$", re.I)


class VersionError(ValueError):
    """Text that is not a DataHub release number."""


@dataclass(frozen=True, order=True)
class Release:
    """A release number, comparable: (1, 7, 0, 1) with a pre-release before the release."""

    parts: tuple[int, ...]
    pre: tuple[int, int] = (1, 0)  # (0, n) for rcN/betaN..., (1, 0) for a release
    text: str = ""

    @classmethod
    def parse(cls, text: str) -> Release:
        match = _RELEASE.match(text or "")
        if match is None:
            raise VersionError(f"not a DataHub release number: {text!r} (expected e.g. 1.7.0 or v1.7.0.1)")
        parts = tuple(int(p) for p in match.group(1).split("."))
        while len(parts) > 3 and parts[-1] == 0:
            parts = parts[:-1]
        parts = parts + (0,) * (3 - len(parts))
        pre = (0, int(match.group(3))) if match.group(2) else (1, 0)
        return cls(parts, pre, match.group(1) + (f"rc{match.group(3)}" if match.group(2) else ""))

    def __str__(self) -> str:
        return self.text or ".".join(map(str, self.parts))


@dataclass(frozen=True, eq=False)
class ReleaseRules:
    """What one release indexes: each aspect's doc fields, each entity type's aspects."""

    release: str
    wheel: str
    aspects: dict[str, frozenset[str]]
    entities: dict[str, frozenset[str]]

    def fields_of(self, entity_type: str) -> frozenset[str]:
        """Every doc field some aspect of the type writes in this release."""
        return _fields_of(self, entity_type)

    def as_lists(self) -> dict[str, dict[str, list[str]]]:
        """The shape `generate.rules_of` returns (sorted lists), to compare with a regeneration."""
        return {
            "aspects": {a: sorted(f) for a, f in sorted(self.aspects.items())},
            "entities": {e: sorted(a) for e, a in sorted(self.entities.items())},
        }

    def searchable(self, entity_type: str) -> bool:
        """Whether DataHub writes any document for the type (an aspect with a searchable field)."""
        return bool(self.fields_of(entity_type))


@functools.lru_cache(maxsize=256)
def _fields_of(rules: ReleaseRules, entity_type: str) -> frozenset[str]:
    aspects = rules.entities.get(entity_type, frozenset())
    return frozenset().union(*(rules.aspects.get(a, frozenset()) for a in aspects))


@dataclass(frozen=True)
class Catalog:
    """Every shipped release's rules, oldest first."""

    releases: tuple[ReleaseRules, ...]

    @property
    def newest(self) -> ReleaseRules:
        return self.releases[-1]

    def names(self) -> list[str]:
        return [r.release for r in self.releases]

    def get(self, release: str) -> ReleaseRules:
        for rules in self.releases:
            if rules.release == release:
                return rules
        raise KeyError(release)

    def for_release(self, version: Release) -> tuple[ReleaseRules, str | None]:
        """The rules a server of `version` indexes by, and a warning when they are assumed."""
        at_or_below = [r for r in self.releases if Release.parse(r.release) <= version]
        if not at_or_below:
            oldest = self.releases[0]
            return oldest, (
                f"DataHub {version} is older than every release the auditor knows; "
                f"judged by {oldest.release}'s index rules"
            )
        chosen = at_or_below[-1]
        newest = Release.parse(self.newest.release)
        if version > newest and version.parts[:3] > newest.parts[:3]:
            return self.newest, (
                f"DataHub {version} is newer than every release the auditor knows "
                f"(newest {self.newest.release}); judged by {self.newest.release}'s index rules: "
                "fields it added may be reported as unknown"
            )
        return chosen, None

    def older_than(self, release: str) -> list[ReleaseRules]:
        """The shipped releases before `release`, newest first."""
        mine = Release.parse(release)
        return [r for r in reversed(self.releases) if Release.parse(r.release) < mine]


def unpack(data: dict[str, Any]) -> Catalog:
    """Every release of a packed rules file (`generate.pack`)."""
    out = []
    for bit, entry in enumerate(data["releases"]):
        mask = 1 << bit
        aspects = {
            aspect: frozenset(f for f, m in fields.items() if f and m & mask)
            for aspect, fields in data["aspects"].items()
            if fields.get("", 0) & mask
        }
        entities = {
            entity: frozenset(a for a, m in held.items() if m & mask)
            for entity, held in data["entities"].items()
        }
        out.append(
            ReleaseRules(entry["release"], entry["wheel"], aspects, {e: a for e, a in entities.items() if a})
        )
    return Catalog(tuple(out))


@functools.lru_cache(maxsize=1)
def catalog() -> Catalog:
    """The shipped rules of every release (read once per process)."""
    return unpack(json.loads(_RULES.read_bytes()))


def oldest_without(catalog_: Catalog, current: str, entity_type: str, fields: Iterable[str]) -> str | None:
    """The newest release before `current` that writes none of `fields` for the type (None: every
    older release writes one of them, so an older version cannot explain their absence)."""
    wanted = set(fields)
    for rules in catalog_.older_than(current):
        if entity_type in rules.entities and not wanted & rules.fields_of(entity_type):
            return rules.release
    return None
