"""One deployment's index rules: its release found (or given), its entity indices' mappings read.

Used by the scan and by the repairs alike, so that a repair writes what the scan expects.
"""

from __future__ import annotations

from typing import Any

from auditor.errors import AuditorError, BackendUnavailable
from auditor.platforms.datahub.naming import ENTITY_INDEX_SUFFIX, prefixed
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.versions.detect import Choice, choose, finished_steps, from_gms
from auditor.platforms.datahub.versions.rules import catalog
from auditor.platforms.datahub.versions.view import IndexRules
from auditor.redact import redact_url


def index_rules(
    store: Any,
    search: Any,
    registry: Registry,
    *,
    index_prefix: str,
    platform_version: str | None,
    gms_url: str | None,
    warnings: list[str],
) -> tuple[IndexRules, Choice]:
    """The rules the deployment's documents are judged (and repaired) by, and how they were chosen.

    The warnings of the choice go to `warnings`; a store that cannot list its upgrade rows is
    no version found (a warning), never a failure of the scan.
    """
    known = catalog()
    rows: list[Any] = []
    as_read: list[Any] | None = None  # the rows as read (None: not read)
    reader = getattr(store, "upgrade_rows", None)  # a federation or a fake may not have it
    if reader is not None:
        try:
            rows = as_read = list(reader())
        except BackendUnavailable as exc:
            warnings.append(f"the upgrade rows could not be read ({exc}): the release is not known from them")
    gms = from_gms(gms_url) if gms_url else None
    if gms_url and gms is None:
        warnings.append(f"GMS /config at {redact_url(gms_url)} did not answer with a release: not used")
    choice = choose(known, override=platform_version, upgrade_rows=rows, gms=gms)
    warnings.extend(choice.warnings)
    since = None
    if platform_version is None and choice.found is not None and choice.found.exact and choice.found.history:
        first = str(choice.found.release)
        since = next((c for u, _, c in rows if first.lstrip("v") in u and c is not None), None)
    pattern = prefixed(f"*{ENTITY_INDEX_SUFFIX}", index_prefix)

    refused: list[str] = []

    def read(which: str) -> dict[str, frozenset[str]]:  # a mapping it may not read: no witness
        try:
            return dict(search.mapped_fields(which))
        except AuditorError as exc:
            if not refused:  # said once, whatever index asked
                warnings.append(
                    f"the index mappings could not be read ({exc}): no field is withheld for an "
                    "index whose mapping is unknown (grant view_index_metadata)"
                )
            refused.append(which)
            return {}

    mappings: dict[str, frozenset[str] | None] = dict(read(pattern))
    rules = IndexRules(registry, choice.rules, known, mappings, read_mapping=read, since=since,
                       upgrade_steps=finished_steps(rows), upgrade_rows=as_read)  # fmt: skip
    return rules, choice
