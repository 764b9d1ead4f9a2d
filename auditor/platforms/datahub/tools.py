"""DataHub's commands beyond scan, triage and rebuild: shard plans, the watch, the probe,
`auditor registry` (its own schemas) and `auditor config init` (its own environment)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import closing

from auditor.errors import ConfigError
from auditor.scan.shards import ShardPlan, make_plan
from auditor.settings.model import Settings


def plan_shards(settings: Settings, n: int, entity_types: tuple[str, ...]) -> ShardPlan:
    """N urn ranges of about equal rows of the aspect table (reads the urns only)."""
    from auditor.platforms.datahub.backends.connect import open_store

    with closing(open_store(settings)) as store:
        return make_plan(store, n, entity_types)


def schema_table(entity_type: str | None) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The entity types of DataHub's own schemas (the acryl-datahub wheel), or one type's aspects."""
    from auditor.platforms.datahub.naming import entity_index
    from auditor.platforms.datahub.registry.registry import Registry

    reg = Registry.load()
    rows: list[tuple[str, ...]]
    if entity_type is None:
        rows = [
            (spec.name, spec.key_aspect, str(len(spec.aspects)), entity_index(spec.name))
            for spec in sorted(reg.entities(), key=lambda e: e.name)
        ]
        return ("entity type", "key aspect", "aspects", "index"), rows
    if not reg.has_entity(entity_type):
        raise ConfigError(f"unknown entity type {entity_type!r}")
    rows = [
        (a.name, "yes" if a.timeseries else "", ", ".join(s.field_name for s in a.searchable))
        for a in reg.entity_aspects(entity_type)
    ]
    return ("aspect", "timeseries", "searchable fields"), rows


def config_from_environment(environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """The TOML text from GMS's own variables, and where each value came from."""
    from auditor.core.config_plan import explain
    from auditor.platforms.datahub.config.init import plan, render

    p = plan(environ)
    return render(p), explain(p)
