"""A report's own scope (index prefix, topics, MAE group) as the defaults of a repair of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from auditor.errors import ConfigError

# settings field, the flag that sets it, what it is called in an error
SCOPE = (
    ("index_prefix", "--index-prefix", "index prefix"),
    ("mcl_versioned_topic", "--topic", "versioned topic"),
    ("mcl_timeseries_topic", "--timeseries-topic", "timeseries topic"),
    ("mae_consumer_group", "--consumer-group", "MAE consumer group"),
)


def report_scope(data: dict[str, Any]) -> dict[str, str]:
    """What a scan's JSON report says it read: its index prefix, topics and MAE group (what it
    does not say is left to the settings). An OpenMetadata report has none of DataHub's."""
    sources = data.get("sources") or {}
    from auditor import platforms
    from auditor.platforms.base import Capability

    # without a change log there are no topics or group; the platform's repair reads its index
    # naming off the findings (OpenMetadata's cluster alias)
    if not platforms.get(str(sources.get("platform") or "") or None).supports(Capability.CHANGE_LOG):
        return {}
    out: dict[str, str] = {}
    scope = data.get("scope") or {}
    if isinstance(scope.get("index_prefix"), str):
        out["index_prefix"] = scope["index_prefix"]
    for key, field in (
        ("versioned_topic", "mcl_versioned_topic"),
        ("timeseries_topic", "mcl_timeseries_topic"),
    ):
        if sources.get(key):
            out[field] = str(sources[key])
    if data.get("consumer_group"):
        out["mae_consumer_group"] = str(data["consumer_group"])
    return out


def with_report_scope(settings: Any, scope: dict[str, str], path: Path) -> Any:
    """`settings` repairing what the report scanned: its scope where nothing was given (a flag,
    the environment or the config file); a value given that differs is an error naming both,
    never a repair of another index, topic or group."""
    given = settings.model_fields_set
    update = {}
    for field, flag, what in SCOPE:
        if field not in scope:
            continue
        have, wanted = getattr(settings, field), scope[field]
        if field in given and have != wanted:
            raise ConfigError(
                f"{flag} {have!r} (from a flag, the environment or the config file) is not the "
                f"report's: {path} was scanned under {what} {wanted!r}",
                hint=f"drop {flag} to repair what the report scanned, or scan again under {have!r}",
            )
        update[field] = wanted
    return settings.model_copy(update=update)
