"""Which DataHub release wrote the data: `--platform-version`, GMS's /config, the upgrade rows.

Best first (docs/versions.md):
- `--platform-version` (or `platform_version` in the settings): the user's word; still compared
  with what the data says, and a disagreement is a warning.
- GMS `GET /config` (`versions["acryldata/datahub"].version`), when `--gms-url` is given.
- The aspect table: `urn:li:dataHubUpgrade:BuildIndicesIncremental_<version>-<revision>` (and its
  catch-up marker), written by each zero-downtime upgrade: exact, and their `createdon` order is
  the upgrade history.
- The aspect table's one-off upgrade steps, each first shipped in a known release (a backfill's
  step id): "at least" that release.
Nothing found: judged by the newest rules the auditor knows, with a warning that says so.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from auditor.errors import ConfigError
from auditor.platforms.datahub.versions.rules import Catalog, Release, ReleaseRules, VersionError

UPGRADE_PREFIX = "urn:li:dataHubUpgrade:"
# incremental (zero-downtime) reindex steps: their id embeds the server's git version
_VERSIONED = re.compile(r"^(?:BuildIndicesIncremental|IncrementalReindexCatchUp)_(v?\d[\w.]*?)(?:-(\w+))?$")
# one-off backfill steps and the first release that runs them (datahub-upgrade's system steps)
FINGERPRINTS: dict[str, str] = {
    "dashboard-info-v1": "1.0.0",
    "mlmodel-key-v1": "1.4.0",
    "dataset-aliases-v1": "1.8.0",
}


@dataclass(frozen=True)
class Found:
    """A release and where it was read."""

    release: Release
    how: str
    exact: bool = True
    # the releases the upgrade rows show, oldest first (an upgrade history)
    history: tuple[str, ...] = ()


def _state(metadata: str) -> str:
    try:
        value = json.loads(metadata) if metadata else {}
    except ValueError:
        return "UNREADABLE"
    state = value.get("state") if isinstance(value, dict) else None
    return str(state or "SUCCEEDED")


def finished_steps(rows: Sequence[tuple[str, str, datetime | None]]) -> frozenset[str]:
    """The ids of the upgrade steps DataHub recorded as finished (`urn:li:dataHubUpgrade:<id>`
    with a SUCCEEDED `dataHubUpgradeResult`): a backfill step's id is the `runId` of the MCLs it
    re-emitted."""
    return frozenset(
        urn[len(UPGRADE_PREFIX) :] for urn, metadata, _ in rows if _state(metadata) == "SUCCEEDED"
    )


def from_upgrades(rows: Sequence[tuple[str, str, datetime | None]]) -> Found | None:
    """The release DataHub's upgrade jobs recorded in the aspect table (None: none recorded)."""
    versioned: list[tuple[Release, str, datetime | None]] = []
    fingerprints: list[tuple[Release, str]] = []
    for urn, metadata, created in rows:
        step = urn[len(UPGRADE_PREFIX) :]
        match = _VERSIONED.match(step)
        if match:
            try:
                versioned.append((Release.parse(match.group(1)), step, created))
            except VersionError:
                continue
        elif step in FINGERPRINTS and _state(metadata) == "SUCCEEDED":
            fingerprints.append((Release.parse(FINGERPRINTS[step]), step))
    if versioned:
        history = tuple(dict.fromkeys(str(r) for r, _, _ in versioned))  # the rows are oldest first
        newest, step, created = max(versioned, key=lambda v: v[0])
        when = f", {created.isoformat(timespec='seconds')}" if created else ""
        return Found(newest, f"aspect table: dataHubUpgrade {step}{when}", True, history)
    if fingerprints:
        newest_step = max(fingerprints, key=lambda v: v[0])
        return Found(
            newest_step[0],
            f"aspect table: upgrade step {newest_step[1]}, first run by {newest_step[0]}",
            exact=False,
        )
    return None


def from_gms(url: str, timeout: float = 3.0) -> Found | None:
    """The release GMS's /config reports (None: unreachable or unreadable; never raises)."""
    target = url.rstrip("/") + "/config"
    try:
        with urllib.request.urlopen(target, timeout=timeout) as answer:  # noqa: S310 (the user's URL)
            config: Any = json.loads(answer.read(1 << 20))
    except (OSError, ValueError):
        return None
    versions = config.get("versions") if isinstance(config, dict) else None
    if not isinstance(versions, dict):
        return None
    for key in ("acryldata/datahub", "linkedin/datahub"):
        entry = versions.get(key)
        if isinstance(entry, dict) and isinstance(entry.get("version"), str):
            try:
                return Found(Release.parse(entry["version"]), f"GMS /config ({entry['version']})")
            except VersionError:
                return None
    return None


@dataclass
class Choice:
    """The rules a scan judges by, why, and what a user should know about it."""

    rules: ReleaseRules
    source: str  # for the report's sources: the release and how it was found
    found: Found | None = None
    warnings: list[str] = field(default_factory=list)


def choose(
    catalog: Catalog,
    *,
    override: str | None,
    upgrade_rows: Sequence[tuple[str, str, datetime | None]] = (),
    gms: Found | None = None,
) -> Choice:
    """The rules to judge by: the override, else GMS, else the upgrade rows, else the newest."""
    found = gms or from_upgrades(upgrade_rows)
    if override:
        try:
            wanted = Release.parse(override)
        except VersionError as exc:
            raise ConfigError(str(exc), hint="--platform-version takes a release such as 1.4.0") from None
        rules, assumed = catalog.for_release(wanted)
        choice = Choice(rules, f"{wanted} (--platform-version; rules of {rules.release})", found)
        if assumed:
            choice.warnings.append(assumed)
        if found is not None:
            theirs, _ = catalog.for_release(found.release)
            wrong = theirs is not rules if found.exact else wanted < found.release
            if wrong:
                says = f"DataHub {found.release}" if found.exact else f"at least DataHub {found.release}"
                choice.warnings.append(
                    f"--platform-version {wanted}, but the data says {says} "
                    f"({found.how}): documents are judged by {rules.release}'s index rules as asked; "
                    "is the flag right?"
                )
        return choice
    if found is None:
        newest = catalog.newest
        return Choice(
            newest,
            f"unknown: judged by {newest.release}'s rules and the index mappings",
            None,
            [
                "the DataHub release that wrote the data was not found (no AUDITOR_GMS_URL, no upgrade "
                f"row naming a release in the aspect table): judged by {newest.release}'s index rules, "
                "and a field an index's mapping lacks is never expected; --platform-version names it"
            ],
        )
    if not found.exact:
        newest = catalog.newest
        return Choice(
            newest,
            f"at least {found.release} ({found.how}); judged by {newest.release}'s rules and the mappings",
            found,
            [
                f"the exact DataHub release was not found, only at least {found.release} ({found.how}): "
                f"judged by {newest.release}'s index rules, and a field an index's mapping lacks is never "
                "expected; --platform-version or AUDITOR_GMS_URL names it"
            ],
        )
    rules, assumed = catalog.for_release(found.release)
    choice = Choice(rules, f"{found.release} ({found.how}; rules of {rules.release})", found)
    if assumed:
        choice.warnings.append(assumed)
    return choice
