"""DataHub's urns: the grammar, a urn's entity type and key fields, and its Kafka partition."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from auditor.platforms.datahub.documents.javastr import _utf16_len

if TYPE_CHECKING:
    from auditor.platforms.datahub.registry.registry import EntitySpec

_URN_MAX_LENGTH = 512
_WORD = re.compile(r"[A-Za-z0-9_]+")
_NAMESPACE = re.compile(r"[a-z0-9-]{1,32}")


class UrnError(ValueError):
    """A string that is not a urn (`urn:li:<type>:<id>` for DataHub's own)."""


# --- the entity type: the one place a urn's type is read ----------------------------------------


def entity_type(urn: str) -> str:
    """`urn:li:dataset:(...)` -> `dataset`, `urn:li:corpuser` -> `corpuser`.

    Only DataHub's `urn:li:` namespace has entity types here (scans select rows and docs by
    `urn:li:<type>:` prefixes); anything else, or an empty type, raises UrnError. Reads the type
    only: `parse_urn` checks the whole urn.
    """
    if not urn.startswith("urn:li:"):
        raise UrnError(f"not a DataHub urn: {urn!r}")
    end = urn.find(":", 7)
    if end == -1:
        end = len(urn)
    if end == 7:
        raise UrnError(f"urn has no entity type: {urn!r}")
    return urn[7:end]


# --- the grammar (Java's Urn and TupleKey) ------------------------------------------------------


def _check_nesting(text: str) -> None:
    """A key without a leading `(` may hold parentheses, but only balanced ones."""
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise UrnError("mismatched paren nesting")
    if depth:
        raise UrnError("mismatched paren nesting")


def _nested_parts(text: str, start: int) -> list[str]:
    """The parts of a tuple key `(a,b(c,d),e)` that nests: split at depth-1 commas."""
    parts = []
    depth = 1
    part_start = start + 1
    for i in range(start + 1, len(text)):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise UrnError("mismatched paren nesting")
        elif ch == "," and depth == 1:
            if i - part_start <= 0:
                raise UrnError("empty part disallowed")
            parts.append(text[part_start:i])
            part_start = i + 1
    if depth != 0:
        raise UrnError("mismatched paren nesting")
    last_end = len(text) - 1 if text.endswith(")") else len(text)
    if last_end - part_start <= 0:
        raise UrnError("empty part disallowed")
    parts.append(text[part_start:last_end])
    return parts


def _tuple_parts(text: str, start: int) -> list[str]:
    """TupleKey.parseKeyParts: split `(a,b(c,d),e)` at depth-1 commas."""
    if start >= len(text):
        return []
    opens = text.count("(", start)
    closes = text.count(")", start)
    if text[start] != "(":
        if opens or closes:
            _check_nesting(text[start:])
        return [text[start:]]
    if opens == 1 and closes == 1 and text.endswith(")"):  # flat tuple: the common case
        parts = text[start + 1 : -1].split(",")
        if any(not p for p in parts):
            raise UrnError("empty part disallowed")
        return parts
    return _nested_parts(text, start)


def parse_urn(urn: str) -> tuple[str, list[str]]:
    """Java `Urn(String)`: the entity type and the key parts; UrnError (a ValueError) when invalid."""
    if not isinstance(urn, str) or not urn.startswith("urn:"):
        raise UrnError(f"urn does not start with 'urn:': {urn!r}")
    if _utf16_len(urn) > _URN_MAX_LENGTH:
        raise UrnError(f"urn is longer than {_URN_MAX_LENGTH}")
    second = urn.find(":", 5)
    if len(urn) < 5 or not ("a" <= urn[4] <= "z"):
        raise UrnError("first char of the urn namespace must be [a-z]")
    if second == -1:
        raise UrnError("urn has no second ':'")
    if second != 6 or urn[4:6] != "li":
        if not _NAMESPACE.fullmatch(urn, 4, second):
            raise UrnError("invalid urn namespace")
    if second + 1 >= len(urn) or not ("a" <= urn[second + 1] <= "z"):
        raise UrnError("first char of the entity type must be [a-z]")
    third = urn.find(":", second + 2)
    if third == -1:
        if not _WORD.fullmatch(urn, second + 1):
            raise UrnError("entity type must be [a-zA-Z0-9_]")
        return urn[second + 1 :], []
    urn_type = urn[second + 1 : third]
    if not _WORD.fullmatch(urn_type):
        raise UrnError("entity type must be [a-zA-Z0-9_]")
    if len(urn) - (third + 1) <= 0:
        raise UrnError("urn has an empty entity key")
    return urn_type, _tuple_parts(urn, third + 1)


def is_valid_urn(urn: Any) -> bool:
    """Whether Java's `Urn.createFromString` accepts it."""
    if type(urn) is str:  # the edges of a catalog point at few distinct urns: parsed once each
        return _is_valid_urn_text(urn)
    return _is_valid_urn(urn)


def _is_valid_urn(urn: Any) -> bool:
    try:
        parse_urn(urn)
    except ValueError:  # UrnError, or a lone surrogate UTF-16 cannot encode
        return False
    return True


@functools.lru_cache(maxsize=1 << 15)
def _is_valid_urn_text(urn: str) -> bool:
    return _is_valid_urn(urn)


def key_fields_from_urn(entity_spec: EntitySpec, urn: str) -> dict[str, Any]:
    """EntityKeyUtils.convertUrnToEntityKey: the urn's key parts bound to key fields by position.

    Raises ValueError when the urn is invalid or its parts do not fit the key.
    """
    urn_type, parts = parse_urn(urn)
    if urn_type.lower() != entity_spec.name.lower():
        raise ValueError(f"urn is a {urn_type}, not a {entity_spec.name}")
    if len(parts) != len(entity_spec.key_fields):
        raise ValueError(
            f"urn has {len(parts)} key parts, {entity_spec.key_aspect} has "
            f"{len(entity_spec.key_fields)} fields"
        )
    out: dict[str, Any] = {}
    for key_field, part in zip(entity_spec.key_fields, parts, strict=True):
        if key_field.value_type in ("int", "long"):
            try:
                out[key_field.name] = int(part)
            except ValueError:
                raise ValueError(f"key part {part!r} of {key_field.name} is not a number") from None
        else:
            if key_field.is_urn and not is_valid_urn(part):
                raise ValueError(f"key part {part!r} of {key_field.name} is not a urn")
            out[key_field.name] = part
    return out


# --- ids and partitions -------------------------------------------------------------------------


def murmur2(data: bytes) -> int:
    """Kafka's Java `Utils.murmur2` (signed 32-bit result)."""
    m = 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    tail = length & ~3
    for i in range(0, tail, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def urn_partition(urn: str, partitions: int) -> int:
    """The partition GMS's producer (Kafka's default partitioner) sends a urn-keyed MCL to."""
    if partitions <= 0:
        raise ValueError("partitions must be positive")
    return (murmur2(urn.encode("utf-8")) & 0x7FFFFFFF) % partitions
