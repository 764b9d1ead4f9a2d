"""DataHub's entity registry: entity types, their aspects and the annotations of each aspect."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class RegistryError(Exception):
    """The schemas cannot be read into a registry DataHub itself would accept."""


@dataclass(frozen=True)
class PathStep:
    """One step from an aspect's root to a leaf: a record field, array items or a union member."""

    kind: str  # "field" | "items" | "union"
    name: str  # field name, "*" or the Pegasus union member key
    has_default: bool = False
    default: Any = field(default=None, compare=False)
    # union member keys accepted in stored JSON (Pegasus key, and the pegasus2avro spelling)
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchableSpec:
    """A `@Searchable` leaf of an aspect: where its value sits and which doc fields it writes."""

    aspect: str
    path: tuple[str, ...]
    field_name: str
    field_type: str
    # Pegasus type of the leaf: string, int, long, float, double, boolean, bytes, enum, map
    value_type: str
    has_values_field_name: str | None = None
    num_values_field_name: str | None = None
    is_map: bool = False
    is_array: bool = False
    map_value_type: str | None = None
    sanitize_rich_text: bool = False
    system_modified_at_field_name: str | None = None
    field_name_aliases: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()  # enum symbols, for enum leaves
    steps: tuple[PathStep, ...] = field(default=(), compare=False, repr=False)

    @property
    def path_spec(self) -> str:
        """The Pegasus PathSpec string, e.g. `/owners/*/owner`."""
        return "/" + "/".join(self.path)


@dataclass(frozen=True)
class SearchableRefSpec:
    """A `@SearchableRef` leaf: a doc field built from another entity's aspects."""

    aspect: str
    path: tuple[str, ...]
    field_name: str
    field_type: str
    ref_type: str | None
    depth: int | None


@dataclass(frozen=True)
class RelationshipSpec:
    """A `@Relationship` leaf: each urn found at `path` is an edge `name` to that urn."""

    aspect: str
    path: tuple[str, ...]
    name: str
    entity_types: tuple[str, ...]
    is_lineage: bool = False
    is_upstream: bool = True
    steps: tuple[PathStep, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class AspectSpec:
    """One aspect: its annotations and its Avro record (the .avsc dict, pegasus2avro names)."""

    name: str
    timeseries: bool
    searchable: tuple[SearchableSpec, ...]
    relationships: tuple[RelationshipSpec, ...]
    schema: dict[str, Any] = field(compare=False, repr=False)
    searchable_refs: tuple[SearchableRefSpec, ...] = ()
    key_for_entity: str | None = None

    @property
    def record_fields(self) -> tuple[str, ...]:
        """Top-level field names in schema order."""
        return tuple(f["name"] for f in self.schema.get("fields", ()))


@dataclass(frozen=True)
class KeyField:
    """One field of a key aspect, in schema order (urn key parts bind to them by position)."""

    name: str
    value_type: str  # string | enum | int | long | ...
    is_urn: bool = False
    optional: bool = False
    symbols: tuple[str, ...] = ()  # enum symbols


@dataclass(frozen=True)
class EntitySpec:
    """One entity type: its key aspect first, then the aspects the registry allows it."""

    name: str
    key_aspect: str
    aspects: tuple[str, ...]
    category: str | None = None
    key_fields: tuple[KeyField, ...] = ()


class Registry:
    """The entity registry: entity types, their aspects and the annotations of each aspect."""

    def __init__(
        self,
        entities: Mapping[str, EntitySpec],
        aspects: Mapping[str, AspectSpec],
        source: str = "",
    ) -> None:
        self._entities = dict(entities)
        self._aspects = dict(aspects)
        self._entities_lower = {name.lower(): spec for name, spec in self._entities.items()}
        self._entity_aspects = {name: frozenset(spec.aspects) for name, spec in self._entities.items()}
        self.source = source

    @classmethod
    def load(cls, schemas_dir: str | Path | None = None) -> Registry:
        """The registry of the installed wheel (or of `schemas_dir`), parsed once per process."""
        from auditor.platforms.datahub.registry.loader import (
            load_cached,  # the loader builds Registry objects
        )

        return load_cached(schemas_dir)

    @property
    def entity_names(self) -> tuple[str, ...]:
        return tuple(self._entities)

    @property
    def aspect_names(self) -> tuple[str, ...]:
        return tuple(self._aspects)

    def entities(self) -> Iterator[EntitySpec]:
        return iter(self._entities.values())

    def aspects(self) -> Iterator[AspectSpec]:
        return iter(self._aspects.values())

    def entity(self, name: str) -> EntitySpec:
        """The entity spec by name (DataHub looks entity names up case-insensitively)."""
        spec = self._entities.get(name) or self._entities_lower.get(name.lower())
        if spec is None:
            raise KeyError(f"unknown entity type {name!r}")
        return spec

    def has_entity(self, name: str) -> bool:
        return name in self._entities or name.lower() in self._entities_lower

    def spelled(self, name: str) -> str:
        """An entity type as the registry spells it (`DataSet` -> `dataset`); an unknown one as given."""
        return self.entity(name).name if self.has_entity(name) else name

    def aspect(self, name: str) -> AspectSpec:
        try:
            return self._aspects[name]
        except KeyError:
            raise KeyError(f"unknown aspect {name!r}") from None

    def has_aspect(self, name: str) -> bool:
        return name in self._aspects

    def entity_aspects(self, entity_type: str) -> tuple[AspectSpec, ...]:
        """The aspect specs of an entity, key aspect first."""
        return tuple(self._aspects[a] for a in self.entity(entity_type).aspects)

    def is_known(self, entity_type: str, aspect: str) -> bool:
        """Whether the registry lets `entity_type` carry `aspect` (its key aspect included)."""
        spec = self._entities.get(entity_type) or self._entities_lower.get(entity_type.lower())
        return spec is not None and aspect in self._entity_aspects[spec.name]
