"""The values at a spec's path in an aspect value (RecordUtils.getFieldValue + FieldExtractor)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from auditor.platforms.datahub.documents.javastr import _java_str, _utf16_len
from auditor.platforms.datahub.registry.registry import PathStep, RelationshipSpec, SearchableSpec

MAX_VALUE_LENGTH = 4096  # a map entry whose value is this long or longer is left out
_ABSENT: Any = object()  # no value at the path (not the same as a null value)


class _Malformed(Exception):
    """An aspect value that does not fit its schema (a string where a record belongs, ...)."""


def _kind(value: Any) -> str:
    """What a JSON value is, for error messages: `a record`, `an array`, ..."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a record"
    return type(value).__name__


def _compile_linear(steps: tuple[PathStep, ...]) -> Callable[[Any], Any]:
    """Follow record fields and union members (no arrays): the value, or _ABSENT."""
    if not steps:
        return lambda ref: ref
    plan = tuple((s.kind == "field", s.name, s.has_default, s.default, s.keys) for s in steps)
    if len(plan) == 1 and plan[0][0]:
        _, name, has_default, default, _ = plan[0]

        def get_one(ref: Any) -> Any:
            if not isinstance(ref, dict):
                raise _Malformed(f"expected a record at {name!r}, got {_kind(ref)}")
            value = ref.get(name)
            if value is None:
                return default if has_default else _ABSENT
            return value

        return get_one

    def get(ref: Any) -> Any:
        for is_field, name, has_default, default, keys in plan:
            if not isinstance(ref, dict):
                raise _Malformed(f"expected a record at {name!r}, got {_kind(ref)}")
            if is_field:
                value = ref.get(name)
                if value is None:
                    if not has_default:
                        return _ABSENT
                    value = default
            else:  # union member, under its Pegasus key (or the pegasus2avro spelling)
                value = None
                for key in keys:
                    value = ref.get(key)
                    if value is not None:
                        break
                if value is None:
                    return _ABSENT
            ref = value
        return ref

    return get


def _compile_getter(steps: tuple[PathStep, ...]) -> Callable[[Any], Any]:
    """RecordUtils.getFieldValue: the value at the path; each `*` fans out into a list whose
    elements lacking the rest of the path are dropped."""
    cut = next((i for i, s in enumerate(steps) if s.kind == "items"), None)
    if cut is None:
        return _compile_linear(steps)
    prefix = _compile_linear(steps[:cut])
    rest = steps[cut + 1 :]
    where = "/".join(s.name for s in steps[: cut + 1])
    if not rest:

        def get_array(ref: Any) -> Any:
            value = prefix(ref)
            if value is not _ABSENT and not isinstance(value, list):
                raise _Malformed(f"{where}: {_kind(value)} where an array belongs")
            return value

        return get_array
    inner = _compile_getter(rest)

    def get_each(ref: Any) -> Any:
        value = prefix(ref)
        if value is _ABSENT:
            return value
        if not isinstance(value, list):
            raise _Malformed(f"{where}: {_kind(value)} where an array belongs")
        out = []
        for item in value:
            found = inner(item)
            if found is not _ABSENT:
                out.append(found)
        return out

    return get_each


def _leaf_check(value_type: str) -> Callable[[Any], bool]:
    """Whether a leaf value has the Pegasus type the schema gives it."""
    if value_type in ("string", "enum", "bytes"):
        return lambda v: isinstance(v, str)
    if value_type in ("int", "long"):
        return lambda v: isinstance(v, int) and not isinstance(v, bool)
    if value_type in ("float", "double"):
        return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    if value_type == "boolean":
        return lambda v: isinstance(v, bool)
    if value_type == "map":
        return lambda v: isinstance(v, dict)
    return lambda v: True


def _map_entries(value: dict[str, Any]) -> list[str]:
    """FieldExtractor's map -> `key=value` list, leaving out values of 4096+ UTF-16 units."""
    out = []
    for key, item in value.items():
        text = item if isinstance(item, str) else _java_str(item)
        if len(text) >= MAX_VALUE_LENGTH or (
            len(text) * 2 >= MAX_VALUE_LENGTH and _utf16_len(text) >= MAX_VALUE_LENGTH
        ):
            continue
        out.append(f"{key}={text}")
    return out


def _compile_extractor(
    spec: SearchableSpec | RelationshipSpec, value_type: str
) -> Callable[[Any], list[Any]]:
    """FieldExtractor.extractFields for one spec: the list of values at its path."""
    get = _compile_getter(spec.steps)
    where = "/" + "/".join(spec.path)
    symbols = frozenset(getattr(spec, "symbols", ()) or ())
    wildcards = spec.path.count("*")
    if wildcards == 0:
        return _single_extractor(get, value_type, where, symbols)
    return _array_extractor(get, value_type, where, symbols, wildcards)


def _wrong_type(where: str, value: Any, value_type: str) -> _Malformed:
    return _Malformed(f"{where}: {_kind(value)} where a {value_type} belongs")


def _single_extractor(
    get: Callable[[Any], Any], value_type: str, where: str, symbols: frozenset[str]
) -> Callable[[Any], list[Any]]:
    """A path without `*`: its one value (a map: its `key=value` entries)."""
    check = _leaf_check(value_type)
    if value_type == "map":

        def extract_map(root: Any) -> list[Any]:
            value = get(root)
            if value is _ABSENT:
                return []
            if not isinstance(value, dict):
                raise _wrong_type(where, value, value_type)
            return _map_entries(value)

        return extract_map

    def extract_one(root: Any) -> list[Any]:
        value = get(root)
        if value is _ABSENT:
            return []
        if not check(value):
            raise _wrong_type(where, value, value_type)
        if symbols and value not in symbols:
            return ["$UNKNOWN"]
        return [value]

    return extract_one


def _array_extractor(
    get: Callable[[Any], Any], value_type: str, where: str, symbols: frozenset[str], wildcards: int
) -> Callable[[Any], list[Any]]:
    """A path through `*`: every value at it, nested arrays flattened (maps: their toString)."""
    check = _leaf_check(value_type)
    is_map = value_type == "map"

    def extract_all(root: Any) -> list[Any]:
        value = get(root)
        if value is _ABSENT:
            return []
        if not isinstance(value, list):
            raise _Malformed(f"{where}: {_kind(value)} where an array belongs")
        for _ in range(wildcards - 1):
            flat: list[Any] = []
            for item in value:
                if not isinstance(item, list):
                    raise _Malformed(f"{where}: {_kind(item)} where an array belongs")
                flat.extend(item)
            value = flat
        for item in value:
            if not check(item):
                if is_map and isinstance(item, dict):
                    continue
                raise _wrong_type(where, item, value_type)
        if is_map:
            return [_java_str(v) for v in value]
        if symbols:
            return [v if v in symbols else "$UNKNOWN" for v in value]
        return value

    return extract_all
