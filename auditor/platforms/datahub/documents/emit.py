"""The doc fields one spec writes from its extracted values (SearchDocumentTransformer)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from auditor.platforms.datahub.documents.extract import _ABSENT, _Malformed
from auditor.platforms.datahub.documents.javastr import _java_split, sanitize_rich_text
from auditor.platforms.datahub.registry.registry import AspectSpec, SearchableSpec

# SearchDocumentTransformer limits (DataHub's defaults)
MAX_ARRAY_LENGTH = 1000
MAX_OBJECT_KEYS = 1000
BROWSE_PATH_V2_DELIMITER = "\u241f"
_OBJECT_FIELD_TYPES = frozenset({"OBJECT", "MAP_ARRAY"})

_Emit = Callable[[list[Any], dict[str, Any]], None]
_Main = Callable[[list[Any]], Any]


class Candidates(tuple[Any, ...]):
    """Values one field may hold when several writers race for it (any of them is right)."""

    __slots__ = ()


def _aspect_fields(spec: AspectSpec) -> list[tuple[str, str]]:
    """(doc field, role) for every field the aspect writes; role: main, has, num."""
    out = []
    for s in spec.searchable:
        out.append((s.field_name, "main"))
        if s.has_values_field_name:
            out.append((s.has_values_field_name, "has"))
        if s.num_values_field_name:
            out.append((s.num_values_field_name, "num"))
    return out


def _aspect_dups(spec: AspectSpec) -> frozenset[str]:
    """The doc fields several specs of the aspect write (they hold Candidates)."""
    written = Counter(name for name, _ in _aspect_fields(spec))
    return frozenset(name for name, n in written.items() if n > 1)


def _put(out: dict[str, Any], name: str, value: Any, dup: bool) -> None:
    if dup:
        previous = out.get(name, _ABSENT)
        if previous is _ABSENT:
            out[name] = Candidates((value,))
        elif isinstance(previous, Candidates):
            out[name] = Candidates((*previous, value))
        else:  # pragma: no cover - dup fields are always written as Candidates
            out[name] = Candidates((previous, value))
    else:
        out[name] = value


def _compile_emitter(spec: SearchableSpec, dups: frozenset[str]) -> _Emit:
    """setSearchableValue for one spec: its has/num fields, then its main field."""
    name = spec.field_name
    name_dup = name in dups
    sanitize = spec.sanitize_rich_text and spec.value_type == "string"
    side_fields = _side_fields(spec, dups)
    main = _main_value(spec)

    def emit(values: list[Any], out: dict[str, Any]) -> None:
        side_fields(values, out)
        if sanitize and any(len(v) >= 1000 for v in values if isinstance(v, str)):
            clean = [sanitize_rich_text(v) if isinstance(v, str) else v for v in values]
            if clean != values:
                raw, tidy = main(values), main(clean)
                if tidy is not _ABSENT:
                    out[name] = Candidates((tidy, raw))
                return
        value = main(values)
        if value is not _ABSENT:
            _put(out, name, value, name_dup)

    return emit


def _side_fields(spec: SearchableSpec, dups: frozenset[str]) -> _Emit:
    """The `hasValuesFieldName` and `numValuesFieldName` fields of a spec."""
    value_type = spec.value_type
    has_name = spec.has_values_field_name
    num_name = spec.num_values_field_name
    has_dup = has_name in dups if has_name else False
    num_dup = num_name in dups if num_name else False

    def side_fields(values: list[Any], out: dict[str, Any]) -> None:
        if has_name:
            if value_type == "boolean":
                has = bool(values[0]) if values else False
            elif value_type == "string":
                has = bool(values) and values[0] != ""
            else:
                has = bool(values)
            _put(out, has_name, has, has_dup)
        if num_name:
            if value_type in ("int", "long"):
                num = values[0] if values else 0
            else:
                num = len(values)
            _put(out, num_name, num, num_dup)

    return side_fields


def _main_value(spec: SearchableSpec) -> _Main:
    """The value of the spec's own field: a list, an object (from a map) or a scalar."""
    value_type = spec.value_type
    textual = value_type in ("string", "enum", "bytes", "map")
    if spec.is_array or (value_type == "map" and spec.field_type not in _OBJECT_FIELD_TYPES):
        return _list_value(spec, textual)
    if value_type == "map":
        return _object_value(spec)

    def node(value: Any) -> Any:
        if textual:
            return None if value == "" else value
        return value

    def main(values: list[Any]) -> Any:
        return node(values[0]) if values else _ABSENT

    return main


def _list_value(spec: SearchableSpec, textual: bool) -> _Main:
    """A list field: a browse path joined into one string, map entries, or the values."""
    if spec.field_type == "BROWSE_PATH_V2":

        def browse_path(values: list[Any]) -> Any:
            text = BROWSE_PATH_V2_DELIMITER.join(v for v in values[:MAX_ARRAY_LENGTH] if isinstance(v, str))
            if text and not text.startswith(BROWSE_PATH_V2_DELIMITER):
                text = BROWSE_PATH_V2_DELIMITER + text
            return text

        return browse_path
    if spec.value_type == "map":

        def map_entries(values: list[Any]) -> Any:
            # map entries come in Java HashMap order: keep them all, compared as a multiset
            return list(values)

        return map_entries
    if textual:

        def texts(values: list[Any]) -> Any:
            return [None if v == "" else v for v in values[:MAX_ARRAY_LENGTH]]

        return texts

    def plain(values: list[Any]) -> Any:
        return list(values[:MAX_ARRAY_LENGTH])

    return plain


def _object_value(spec: SearchableSpec) -> _Main:
    """An OBJECT or MAP_ARRAY field: the `key=value` entries read back into an object."""
    map_value_type = spec.map_value_type
    if spec.field_type == "MAP_ARRAY":

        def map_array(values: list[Any]) -> Any:
            doc: dict[str, Any] = {}
            for entry in values:
                parts = _java_split(entry, "=")
                if len(parts) < 2:
                    raise _Malformed(f"{spec.path_spec}: map entry {entry!r} has no value list")
                inner = parts[1][1:-1]
                doc[parts[0]] = [v for v in inner.split(", ") if v]
            return doc

        return map_array

    def typed_map(values: list[Any]) -> Any:
        doc: dict[str, Any] = {}
        for entry in values:
            parts = _java_split(entry, "=")
            key, text = parts[0], parts[1] if len(parts) > 1 else ""
            doc[key] = _typed(text, map_value_type) if len(parts) > 1 else ""
        return doc

    return typed_map


def _typed(text: str, value_type: str | None) -> Any:
    """A map value's text read back as the map's value type."""
    try:
        if value_type == "boolean":
            return text.lower() == "true"
        if value_type in ("int", "long"):
            return int(text)
        if value_type in ("float", "double"):
            return float(text)
    except ValueError:
        raise _Malformed(f"map value {text!r} is not a {value_type}") from None
    return text
