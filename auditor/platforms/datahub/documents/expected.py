"""What an entity's rows predict for its search document: the values, and what to tolerate."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.platforms.datahub.documents.aspect_projection import ProjectionError


@dataclass(frozen=True)
class ExpectedDocument:
    """The entity doc the aspect rows predict, with what a comparison must tolerate."""

    urn: str
    entity_type: str
    # fields a comparison checks: value each must hold (None: null or missing)
    fields: Mapping[str, Any]
    # fields several present aspects (or specs) write: any candidate is right
    ambiguous: Mapping[str, tuple[Any, ...]]
    # fields a comparison skips: system fields, timeseries-only, system-modified times,
    # cross-entity references, and every field of an aspect that could not be projected
    unpredictable: frozenset[str]
    # every field some aspect of this entity type writes (others in a doc are ignored)
    known_fields: frozenset[str] = field(repr=False)
    # map-derived lists: compared as multisets
    multiset_fields: frozenset[str] = field(repr=False)
    # what deleting the writer aspect leaves in a field (null, has -> false, num -> 0)
    delete_values: Mapping[str, Any] = field(repr=False)
    # field -> aspects of this entity type that can write it
    field_aspects: Mapping[str, tuple[str, ...]] = field(repr=False)
    removed: bool = False
    unknown_aspects: tuple[str, ...] = ()
    errors: tuple[ProjectionError, ...] = ()
    # the aspects the rows hold (that were projected): a field one of them writes but the doc
    # holds beyond what they say was left behind by a partial upsert
    present_aspects: frozenset[str] = field(default=frozenset(), repr=False)

    @property
    def absent(self) -> frozenset[str]:
        """Known fields no present aspect writes: the doc should hold nothing there."""
        return self.known_fields - self.fields.keys() - self.ambiguous.keys() - self.unpredictable


_KNOWN: dict[tuple[frozenset[str], frozenset[str]], frozenset[str]] = {}


def known_without(known: frozenset[str], withheld: frozenset[str]) -> frozenset[str]:
    """`known - withheld`, once per pair of sets (both are per entity type and index; a
    frozenset keeps its hash, and the same objects come back entity after entity)."""
    key = (known, withheld)
    found = _KNOWN.get(key)
    if found is None:
        if len(_KNOWN) > 4096:
            _KNOWN.clear()
        found = _KNOWN[key] = known - withheld
    return found
