"""What a urn says about its entity: the key parts and the key aspect GMS derives from them."""

from __future__ import annotations

from typing import Any

from sandbox.naming import entity_type_of
from sandbox.registry import entity_facts


def urn_key_parts(urn: str) -> list[str]:
    """The parts of a urn's entity key: `(a,(b,c),d)` -> [a, (b,c), d]; `x` -> [x]."""
    entity_type_of(urn)
    key = urn.split(":", 3)[3]
    if not (key.startswith("(") and key.endswith(")")):
        return [key]
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in key[1:-1]:
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current.append(char)
    parts.append("".join(current))
    return parts


def key_from_urn(urn: str) -> dict[str, Any] | None:
    """The key aspect GMS derives from a urn: key fields in order = urn key parts, as written
    (still percent-encoded, e.g. `Revenue %28EUR%29`). None if the parts do not fit."""
    facts = entity_facts()
    key_aspect = facts.key_aspect(entity_type_of(urn))
    fields = facts.key_fields.get(key_aspect or "", ())
    parts = urn_key_parts(urn)
    if not fields or len(parts) != len(fields):
        return None
    return dict(zip(fields, parts, strict=True))
