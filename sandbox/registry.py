"""Entity facts read from the acryl-datahub wheel: key aspects, aspects, timeseries aspects."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources


@dataclass(frozen=True)
class EntityFacts:
    """Which aspect keys each entity, which aspects it may carry, which are timeseries."""

    key_aspects: dict[str, str]
    entity_aspects: dict[str, frozenset[str]]
    timeseries_aspects: frozenset[str]
    key_fields: dict[str, tuple[str, ...]]  # key aspect -> its fields, in urn-part order

    def key_aspect(self, entity_type: str) -> str | None:
        """Key aspect name of an entity type (e.g. `dataset` -> `datasetKey`)."""
        return self.key_aspects.get(entity_type)

    def is_key_aspect(self, entity_type: str, aspect: str) -> bool:
        """True when `aspect` is the key aspect of `entity_type`."""
        return self.key_aspects.get(entity_type) == aspect

    def is_timeseries(self, aspect: str) -> bool:
        """True for aspects DataHub publishes on the timeseries MCL topic."""
        return aspect in self.timeseries_aspects


def schemas_dir() -> resources.abc.Traversable:
    """Folder of the wheel's per-aspect `.avsc` files."""
    return resources.files("datahub.metadata").joinpath("schemas")


@lru_cache(maxsize=1)
def entity_facts() -> EntityFacts:
    """Read every aspect schema's `Aspect` annotation once."""
    keys: dict[str, str] = {}
    aspects: dict[str, frozenset[str]] = {}
    timeseries: set[str] = set()
    key_fields: dict[str, tuple[str, ...]] = {}
    for entry in schemas_dir().iterdir():
        if not entry.name.endswith(".avsc"):
            continue
        schema = json.loads(entry.read_text(encoding="utf-8"))
        annotation = schema.get("Aspect") if isinstance(schema, dict) else None
        if not annotation:
            continue
        if annotation.get("type") == "timeseries":
            timeseries.add(annotation["name"])
        entity = annotation.get("keyForEntity")
        if entity:
            keys[entity] = annotation["name"]
            aspects[entity] = frozenset([annotation["name"], *annotation.get("entityAspects", [])])
            key_fields[annotation["name"]] = tuple(f["name"] for f in schema["fields"])
    return EntityFacts(keys, aspects, frozenset(timeseries), key_fields)
