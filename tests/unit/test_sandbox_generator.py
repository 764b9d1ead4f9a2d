"""The catalog generator: deterministic, valid aspects, awkward urns, all projected."""

from __future__ import annotations

from typing import Any

import datahub.metadata.schema_classes as m

from sandbox.generator import generate, generate_catalog, seed
from sandbox.naming import entity_type_of
from sandbox.projection import PROJECTED_ASPECTS
from sandbox.registry import entity_facts

TYPES = {
    "dataset",
    "chart",
    "dashboard",
    "dataJob",
    "dataFlow",
    "container",
    "domain",
    "tag",
    "glossaryTerm",
    "corpuser",
    "corpGroup",
}


def test_deterministic() -> None:
    assert generate_catalog(80, seed=1) == generate_catalog(80, seed=1)
    assert generate_catalog(80, seed=1) != generate_catalog(80, seed=2)
    assert len(generate_catalog(80, seed=1, prefix="p_")) == 80


def test_every_type_and_valid_aspects() -> None:
    catalog = generate_catalog(300)
    facts = entity_facts()
    assert {e.entity_type for e in catalog} == TYPES
    assert len({e.urn for e in catalog}) == len(catalog)
    for entity in catalog:
        assert entity_type_of(entity.urn) == entity.entity_type
        names = [name for name, _ in entity.aspects]
        assert names[0] == facts.key_aspect(entity.entity_type)
        assert len(set(names)) == len(names)
        assert set(names) <= facts.entity_aspects[entity.entity_type], entity.urn
        assert set(names) <= PROJECTED_ASPECTS
        for name, value in entity.aspects:
            aspect = m.ASPECT_NAME_MAP[name].from_obj(value)
            assert aspect.validate(), (entity.urn, name)
            assert aspect.to_obj() == value


def test_awkward_urns_and_soft_deletes() -> None:
    catalog = generate_catalog(500)
    urns = " ".join(e.urn for e in catalog)
    for char in "(), é中~*+%":
        assert char in urns, char
    assert any(e.urn != e.urn.lower() for e in catalog)
    removed = [e for e in catalog if e.removed]
    assert 0 < len(removed) < len(catalog) // 5
    search_aspects = {name for e in catalog for name, _ in e.aspects}
    assert {
        "ownership",
        "globalTags",
        "glossaryTerms",
        "schemaMetadata",
        "upstreamLineage",
        "status",
        "browsePathsV2",
        "container",
        "subTypes",
        "domains",
    } <= search_aspects


def test_generate_yields_every_aspect_and_seed_writes_them() -> None:
    triples = list(generate(30, seed=5))
    assert len(triples) == sum(len(e.aspects) for e in generate_catalog(30, seed=5))

    class FakeWriter:
        def __init__(self) -> None:
            self.writes: list[tuple[str, str, dict[str, Any]]] = []
            self.flushed = False

        def write(self, urn: str, aspect_name: str, value: dict[str, Any], *, wait: bool = True) -> None:
            assert not wait
            self.writes.append((urn, aspect_name, value))

        def flush(self, timeout: float = 30.0) -> None:
            self.flushed = True

    writer = FakeWriter()
    seed(writer, 30, seed=5)
    assert writer.writes == triples and writer.flushed
