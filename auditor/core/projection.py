"""What DataHub's consumer writes to the search and graph indices for a set of aspect rows."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from auditor.core.registry import (
    AspectSpec,
    EntitySpec,
    PathStep,
    Registry,
    RelationshipSpec,
    SearchableSpec,
)

# SearchDocumentTransformer limits (DataHub's defaults)
MAX_ARRAY_LENGTH = 1000
MAX_OBJECT_KEYS = 1000
MAX_VALUE_LENGTH = 4096  # a map entry whose value is this long or longer is left out
BROWSE_PATH_V2_DELIMITER = "\u241f"
# fields every entity doc may hold that no aspect value predicts
SYSTEM_FIELDS = frozenset({"systemCreated", "runId"})
_OBJECT_FIELD_TYPES = frozenset({"OBJECT", "MAP_ARRAY"})
_ABSENT: Any = object()


class ProjectionError(Exception):
    """One aspect value cannot be projected (not a record, a value of the wrong type, ...)."""

    def __init__(self, urn: str, aspect: str, reason: str) -> None:
        super().__init__(f"{urn} {aspect}: {reason}")
        self.urn = urn
        self.aspect = aspect
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        return (ProjectionError, (self.urn, self.aspect, self.reason))


class Candidates(tuple[Any, ...]):
    """Values one field may hold when several writers race for it (any of them is right)."""

    __slots__ = ()


@dataclass(frozen=True)
class FieldDiff:
    """One doc field that does not hold what the aspect rows say it should."""

    field: str
    expected: Any
    actual: Any
    # mismatch: both hold values; missing: the doc lacks an expected value;
    # left_behind: the doc holds a value the present aspect no longer has (a partial upsert
    # kept it; a replay cannot clear it); unexpected: the doc holds a value no present aspect
    # writes (the aspect's delete was not applied)
    kind: str = "mismatch"


@dataclass(frozen=True)
class Edge:
    """One `graph_service_v1` edge."""

    source: str
    relationship_type: str
    destination: str


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


# --- Java string behaviour --------------------------------------------------------------------


def _utf16_len(text: str) -> int:
    """Java's `String.length()` (UTF-16 code units)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _java_double(value: float) -> str:
    """Java's `Double.toString`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    sign, digits, exponent = Decimal(repr(magnitude)).as_tuple()
    digit_text = "".join(map(str, digits)).rstrip("0") or "0"
    sci = len(digits) + int(exponent) - 1
    mantissa = digit_text[0] + "." + (digit_text[1:] or "0")
    return ("-" if value < 0 else "") + f"{mantissa}E{sci}"


def _java_str(value: Any) -> str:
    """`Object.toString()` of a Pegasus data value."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _java_double(value)
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ", ".join(_java_str(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_java_str(v)}" for k, v in value.items()) + "}"
    return str(value)


def _java_split(text: str, sep: str) -> list[str]:
    """Java's `String.split(sep)` for a literal one-character separator."""
    if sep not in text:
        return [text]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


_WS = " \t\n\x0b\f\r"
_B64_MARKDOWN = re.compile(
    r"!\[([^\]]*)\]\(<?data:image/[^;]+;base64,[A-Za-z0-9+/=" + _WS + r"]*>?\)",
    re.DOTALL | re.MULTILINE,
)
_B64_HTML = re.compile(
    r"<img[^>]+src=[\"']data:image/[^;]+;base64,[A-Za-z0-9+/=" + _WS + r"]*[\"'][^>]*>",
    re.IGNORECASE | re.DOTALL,
)
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))


def sanitize_rich_text(value: str) -> str:
    """SearchDocumentSanitizer.sanitizeForIndexing: drop base64 images from long texts."""
    if len(value) < 1000 or "data:image" not in value:
        return value
    out = _B64_MARKDOWN.sub(lambda m: f"[Image: {m.group(1)}]" if m.group(1) else "", value)
    out = _B64_HTML.sub("[Image]", out)
    return out.strip(_JAVA_TRIM)


# --- urns --------------------------------------------------------------------------------------

_URN_MAX_LENGTH = 512


_WORD = re.compile(r"[A-Za-z0-9_]+")
_NAMESPACE = re.compile(r"[a-z0-9-]{1,32}")


def _tuple_parts(text: str, start: int) -> list[str]:
    """TupleKey.parseKeyParts: split `(a,b(c,d),e)` at depth-1 commas."""
    if start >= len(text):
        return []
    opens = text.count("(", start)
    closes = text.count(")", start)
    if text[start] != "(":
        if opens == 0 and closes == 0:
            return [text[start:]]
        depth = 0
        for ch in text[start:]:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth < 0:
                    raise ValueError("mismatched paren nesting")
        if depth:
            raise ValueError("mismatched paren nesting")
        return [text[start:]]
    if opens == 1 and closes == 1 and text.endswith(")"):  # flat tuple: the common case
        parts = text[start + 1 : -1].split(",")
        if any(not p for p in parts):
            raise ValueError("empty part disallowed")
        return parts
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
                raise ValueError("mismatched paren nesting")
        elif ch == "," and depth == 1:
            if i - part_start <= 0:
                raise ValueError("empty part disallowed")
            parts.append(text[part_start:i])
            part_start = i + 1
    if depth != 0:
        raise ValueError("mismatched paren nesting")
    last_end = len(text) - 1 if text.endswith(")") else len(text)
    if last_end - part_start <= 0:
        raise ValueError("empty part disallowed")
    parts.append(text[part_start:last_end])
    return parts


def parse_urn(urn: str) -> tuple[str, list[str]]:
    """Java `Urn(String)`: the entity type and the key parts; ValueError when invalid."""
    if not isinstance(urn, str) or not urn.startswith("urn:"):
        raise ValueError(f"urn does not start with 'urn:': {urn!r}")
    if _utf16_len(urn) > _URN_MAX_LENGTH:
        raise ValueError(f"urn is longer than {_URN_MAX_LENGTH}")
    second = urn.find(":", 5)
    if len(urn) < 5 or not ("a" <= urn[4] <= "z"):
        raise ValueError("first char of the urn namespace must be [a-z]")
    if second == -1:
        raise ValueError("urn has no second ':'")
    if second != 6 or urn[4:6] != "li":
        if not _NAMESPACE.fullmatch(urn, 4, second):
            raise ValueError("invalid urn namespace")
    if second + 1 >= len(urn) or not ("a" <= urn[second + 1] <= "z"):
        raise ValueError("first char of the entity type must be [a-z]")
    third = urn.find(":", second + 2)
    if third == -1:
        if not _WORD.fullmatch(urn, second + 1):
            raise ValueError("entity type must be [a-zA-Z0-9_]")
        return urn[second + 1 :], []
    entity_type = urn[second + 1 : third]
    if not _WORD.fullmatch(entity_type):
        raise ValueError("entity type must be [a-zA-Z0-9_]")
    if len(urn) - (third + 1) <= 0:
        raise ValueError("urn has an empty entity key")
    return entity_type, _tuple_parts(urn, third + 1)


def is_valid_urn(urn: Any) -> bool:
    """Whether Java's `Urn.createFromString` accepts it."""
    try:
        parse_urn(urn)
    except ValueError:
        return False
    return True


def key_fields_from_urn(entity_spec: EntitySpec, urn: str) -> dict[str, Any]:
    """EntityKeyUtils.convertUrnToEntityKey: the urn's key parts bound to key fields by position.

    Raises ValueError when the urn is invalid or its parts do not fit the key.
    """
    entity_type, parts = parse_urn(urn)
    if entity_type.lower() != entity_spec.name.lower():
        raise ValueError(f"urn is a {entity_type}, not a {entity_spec.name}")
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


# --- compiled extraction (RecordUtils.getFieldValue + FieldExtractor) ----------------------------


class _Malformed(Exception):
    pass


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


def _kind(value: Any) -> str:
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


def _leaf_check(value_type: str) -> Callable[[Any], bool]:
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


def _compile_extractor(
    spec: SearchableSpec | RelationshipSpec, value_type: str
) -> Callable[[Any], list[Any]]:
    """FieldExtractor.extractFields for one spec: the list of values at its path."""
    get = _compile_getter(spec.steps)
    wildcards = spec.path.count("*")
    check = _leaf_check(value_type)
    is_map = value_type == "map"
    where = "/" + "/".join(spec.path)
    symbols = frozenset(getattr(spec, "symbols", ()) or ())

    def bad(value: Any) -> _Malformed:
        return _Malformed(f"{where}: {_kind(value)} where a {value_type} belongs")

    def extract(root: Any) -> list[Any]:
        value = get(root)
        if value is _ABSENT:
            return []
        if wildcards == 0:
            if is_map:
                if not isinstance(value, dict):
                    raise bad(value)
                out = []
                for key, item in value.items():
                    text = _java_str(item)
                    if len(text) >= MAX_VALUE_LENGTH or (
                        len(text) * 2 >= MAX_VALUE_LENGTH and _utf16_len(text) >= MAX_VALUE_LENGTH
                    ):
                        continue
                    out.append(f"{key}={text}")
                return out
            if not check(value):
                raise bad(value)
            if symbols and value not in symbols:
                return ["$UNKNOWN"]
            return [value]
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
                raise bad(item)
        if is_map:
            return [_java_str(v) for v in value]
        if symbols:
            return [v if v in symbols else "$UNKNOWN" for v in value]
        return value

    return extract


# --- compiled emission (SearchDocumentTransformer.setSearchableValue) ---------------------------

_Emit = Callable[[list[Any], dict[str, Any]], None]


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
    value_type = spec.value_type
    field_type = spec.field_type
    name = spec.field_name
    has_name = spec.has_values_field_name
    num_name = spec.num_values_field_name
    textual = value_type in ("string", "enum", "bytes", "map")
    as_list = spec.is_array or (value_type == "map" and field_type not in _OBJECT_FIELD_TYPES)
    name_dup = name in dups
    has_dup = has_name in dups if has_name else False
    num_dup = num_name in dups if num_name else False
    sanitize = spec.sanitize_rich_text and value_type == "string"
    map_value_type = spec.map_value_type

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

    def node(value: Any) -> Any:
        if textual:
            return None if value == "" else value
        return value

    if as_list and field_type == "BROWSE_PATH_V2":

        def main(values: list[Any]) -> Any:
            text = BROWSE_PATH_V2_DELIMITER.join(v for v in values[:MAX_ARRAY_LENGTH] if isinstance(v, str))
            if text and not text.startswith(BROWSE_PATH_V2_DELIMITER):
                text = BROWSE_PATH_V2_DELIMITER + text
            return text

    elif as_list and value_type == "map":

        def main(values: list[Any]) -> Any:
            # map entries come in Java HashMap order: keep them all, compared as a multiset
            return list(values)

    elif as_list:
        if textual:

            def main(values: list[Any]) -> Any:
                return [None if v == "" else v for v in values[:MAX_ARRAY_LENGTH]]

        else:

            def main(values: list[Any]) -> Any:
                return list(values[:MAX_ARRAY_LENGTH])

    elif value_type == "map" and field_type == "MAP_ARRAY":

        def main(values: list[Any]) -> Any:
            doc: dict[str, Any] = {}
            for entry in values:
                parts = _java_split(entry, "=")
                if len(parts) < 2:
                    raise _Malformed(f"{spec.path_spec}: map entry {entry!r} has no value list")
                inner = parts[1][1:-1]
                doc[parts[0]] = [v for v in inner.split(", ") if v]
            return doc

    elif value_type == "map":

        def main(values: list[Any]) -> Any:
            doc: dict[str, Any] = {}
            for entry in values:
                parts = _java_split(entry, "=")
                key, text = parts[0], parts[1] if len(parts) > 1 else ""
                doc[key] = _typed(text, map_value_type) if len(parts) > 1 else ""
            return doc

    else:

        def main(values: list[Any]) -> Any:
            return node(values[0]) if values else _ABSENT

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


def _typed(text: str, value_type: str | None) -> Any:
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


@dataclass(frozen=True)
class _AspectPlan:
    spec: AspectSpec
    run: Callable[[dict[str, Any]], dict[str, Any]]  # generated: value -> written fields
    relationships: tuple[tuple[RelationshipSpec, Callable[[Any], list[Any]]], ...]
    fields: frozenset[str]  # every doc field this aspect writes


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
    written = Counter(name for name, _ in _aspect_fields(spec))
    return frozenset(name for name, n in written.items() if n > 1)


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


_LEAF_TESTS = {
    "string": "not isinstance({x}, str)",
    "enum": "not isinstance({x}, str)",
    "bytes": "not isinstance({x}, str)",
    "int": "not isinstance({x}, int) or isinstance({x}, bool)",
    "long": "not isinstance({x}, int) or isinstance({x}, bool)",
    "float": "not isinstance({x}, (int, float)) or isinstance({x}, bool)",
    "double": "not isinstance({x}, (int, float)) or isinstance({x}, bool)",
    "boolean": "not isinstance({x}, bool)",
    "map": "not isinstance({x}, dict)",
}


class _Node:
    __slots__ = ("children", "specs")

    def __init__(self) -> None:
        self.children: dict[tuple[str, str], tuple[PathStep, _Node]] = {}
        self.specs: list[int] = []


class _AspectCodegen:
    """Generates one function per aspect that walks the value once for all its specs.

    Specs sharing a path prefix share the walk (one loop over `fields` for all schemaMetadata
    specs). Semantics are those of RecordUtils.getFieldValue + FieldExtractor (see
    `_compile_extractor`, kept as the executable reference) and setSearchableValue.
    """

    def __init__(self, spec: AspectSpec) -> None:
        self.spec = spec
        self.consts: list[Any] = []
        self.lines: list[str] = []
        self.counter = 0
        self.dups = _aspect_dups(spec)

    def const(self, value: Any) -> str:
        self.consts.append(value)
        return f"C[{len(self.consts) - 1}]"

    def var(self) -> str:
        self.counter += 1
        return f"v{self.counter}"

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def build(self) -> Callable[[dict[str, Any]], dict[str, Any]]:
        root = _Node()
        for index, s in enumerate(self.spec.searchable):
            node = root
            for step in s.steps:
                key = (step.kind, step.name)
                if key not in node.children:
                    node.children[key] = (step, _Node())
                node = node.children[key][1]
            node.specs.append(index)
        self.emit(0, "def run(v0):")
        for index in range(len(self.spec.searchable)):
            self.emit(1, f"s{index} = []")
        self.walk(root, "v0", 1, "", under_array=False)
        self.emit(1, "out = {}")
        for index, s in enumerate(self.spec.searchable):
            self.emit_fields(index, s)
        self.emit(1, "return out")
        namespace: dict[str, Any] = {
            "C": self.consts,
            "M": _Malformed,
            "K": _kind,
            "ENTRIES": _map_entries,
            "JSTR": _java_str,
        }
        exec(compile("\n".join(self.lines), f"<aspect {self.spec.name}>", "exec"), namespace)
        return namespace["run"]  # type: ignore[no-any-return]

    def walk(self, node: _Node, var: str, depth: int, where: str, under_array: bool) -> None:
        for index in node.specs:
            self.leaf(index, var, depth, where, under_array)
        kinds = {step.kind for step, _ in node.children.values()}
        if kinds & {"field", "union"}:
            msg = self.const(f"{where or '/'}: expected a record, got ")
            self.emit(depth, f"if not isinstance({var}, dict): raise M({msg} + K({var}))")
        for step, child in node.children.values():
            path = f"{where}/{step.name}"
            if step.kind == "items":
                msg = self.const(f"{where}: expected an array, got ")
                self.emit(depth, f"if not isinstance({var}, list): raise M({msg} + K({var}))")
                item = self.var()
                self.emit(depth, f"for {item} in {var}:")
                self.walk(child, item, depth + 1, path, under_array=True)
                continue
            target = self.var()
            if step.kind == "field":
                self.emit(depth, f"{target} = {var}.get({step.name!r})")
                if step.has_default:
                    self.emit(depth, f"if {target} is None: {target} = {self.const(step.default)}")
            else:
                keys = step.keys or (step.name,)
                self.emit(depth, f"{target} = {var}.get({keys[0]!r})")
                for other in keys[1:]:
                    self.emit(depth, f"if {target} is None: {target} = {var}.get({other!r})")
            self.emit(depth, f"if {target} is not None:")
            self.walk(child, target, depth + 1, path, under_array)

    def leaf(self, index: int, var: str, depth: int, where: str, under_array: bool) -> None:
        s = self.spec.searchable[index]
        test = _LEAF_TESTS.get(s.value_type)
        if test:
            msg = self.const(f"{where}: a {s.value_type} belongs here, got ")
            self.emit(depth, f"if {test.format(x=var)}: raise M({msg} + K({var}))")
        if s.value_type == "map":
            if under_array:
                self.emit(depth, f"s{index}.append(JSTR({var}))")
            else:
                self.emit(depth, f"s{index}.extend(ENTRIES({var}))")
        elif s.symbols:
            symbols = self.const(frozenset(s.symbols))
            self.emit(depth, f"s{index}.append({var} if {var} in {symbols} else '$UNKNOWN')")
        else:
            self.emit(depth, f"s{index}.append({var})")

    def emit_fields(self, index: int, s: SearchableSpec) -> None:
        vals = f"s{index}"
        simple = (
            not s.sanitize_rich_text
            and not ({s.field_name, s.has_values_field_name, s.num_values_field_name} & self.dups)
            and s.field_type != "BROWSE_PATH_V2"
            and not (s.is_map and s.field_type in _OBJECT_FIELD_TYPES)
        )
        if not simple:
            emitter = self.const(_compile_emitter(s, self.dups))
            self.emit(1, f"{emitter}({vals}, out)")
            return
        textual = s.value_type in ("string", "enum", "bytes", "map")
        if s.has_values_field_name:
            if s.value_type == "boolean":
                has = f"({vals}[0] if {vals} else False)"
            elif s.value_type == "string":
                has = f"(bool({vals}) and {vals}[0] != '')"
            else:
                has = f"bool({vals})"
            self.emit(1, f"out[{s.has_values_field_name!r}] = {has}")
        if s.num_values_field_name:
            if s.value_type in ("int", "long"):
                num = f"({vals}[0] if {vals} else 0)"
            else:
                num = f"len({vals})"
            self.emit(1, f"out[{s.num_values_field_name!r}] = {num}")
        name = repr(s.field_name)
        if s.is_map:  # all entries: compared as a multiset (Java keeps HashMap order)
            self.emit(1, f"out[{name}] = {vals}")
        elif s.is_array and textual:
            self.emit(1, f"out[{name}] = [None if x == '' else x for x in {vals}[:{MAX_ARRAY_LENGTH}]]")
        elif s.is_array:
            self.emit(1, f"out[{name}] = {vals}[:{MAX_ARRAY_LENGTH}]")
        elif textual:
            self.emit(1, f"if {vals}: out[{name}] = None if {vals}[0] == '' else {vals}[0]")
        else:
            self.emit(1, f"if {vals}: out[{name}] = {vals}[0]")


def _reference_run(spec: AspectSpec) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The closure-per-spec projector: slower, kept as the reference the generated code must
    match (tests compare both)."""
    dups = _aspect_dups(spec)
    writers = tuple((_compile_extractor(s, s.value_type), _compile_emitter(s, dups)) for s in spec.searchable)

    def run(value: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for extract, emit in writers:
            emit(extract(value), out)
        return out

    return run


def _compile_aspect(spec: AspectSpec) -> _AspectPlan:
    relationships = tuple((r, _compile_extractor(r, "string")) for r in spec.relationships)
    fields = frozenset(name for name, _ in _aspect_fields(spec))
    return _AspectPlan(spec, _AspectCodegen(spec).build(), relationships, fields)


_ASPECT_PLANS: dict[int, _AspectPlan] = {}


def _aspect_plan(spec: AspectSpec) -> _AspectPlan:
    plan = _ASPECT_PLANS.get(id(spec))
    if plan is None or plan.spec is not spec:
        plan = _ASPECT_PLANS[id(spec)] = _compile_aspect(spec)
    return plan


def _run(plan: _AspectPlan, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Malformed(f"the aspect value is {_kind(value)}, not a record")
    return plan.run(value)


def project_aspect(spec: AspectSpec, value: dict[str, Any]) -> dict[str, Any]:
    """The fields one upsert of this aspect writes into the entity doc (besides `urn`).

    A scalar with no value is left out (the upsert does not touch it); `""` becomes None;
    has/num fields are always there. A field two specs of the aspect both write holds a
    `Candidates` tuple. Raises ProjectionError (urn "") for a malformed value.
    """
    try:
        return _run(_aspect_plan(spec), _decode(value))
    except _Malformed as exc:
        raise ProjectionError("", spec.name, str(exc)) from None


def _decode(value: Any) -> Any:
    if isinstance(value, (str, bytes, bytearray)):
        try:
            return json.loads(value)
        except ValueError as exc:
            raise _Malformed(f"not JSON: {exc}") from None
    return value


# --- entities -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _EntityPlan:
    registry: Registry
    entity: EntitySpec
    aspects: Mapping[str, _AspectPlan]
    known: frozenset[str]
    shared: frozenset[str]  # fields with several writers (aspects or specs)
    # per aspect: its fields that must go through candidate merging (shared or sanitized)
    routed: Mapping[str, tuple[str, ...]]
    unpredictable: frozenset[str]
    multiset: frozenset[str]
    delete_values: Mapping[str, Any]
    field_aspects: Mapping[str, tuple[str, ...]]


_ENTITY_PLANS: dict[tuple[int, str], _EntityPlan] = {}


def _entity_plan(registry: Registry, entity_type: str) -> _EntityPlan:
    key = (id(registry), entity_type)
    plan = _ENTITY_PLANS.get(key)
    if plan is not None and plan.registry is registry:
        return plan
    entity = registry.entity(entity_type)
    aspects = {name: _aspect_plan(registry.aspect(name)) for name in entity.aspects}
    writers: dict[str, list[str]] = {}
    writes: Counter[str] = Counter()
    delete_values: dict[str, Any] = {}
    unpredictable = set(SYSTEM_FIELDS)
    timeseries_written: set[str] = set()
    versioned_written: set[str] = set()
    multiset: set[str] = set()
    for name, aspect_plan in aspects.items():
        spec = aspect_plan.spec
        for field_name, role in _aspect_fields(spec):
            writers.setdefault(field_name, [])
            if name not in writers[field_name]:
                writers[field_name].append(name)
            writes[field_name] += 1
            delete_values.setdefault(field_name, {"main": None, "has": False, "num": 0}[role])
            (timeseries_written if spec.timeseries else versioned_written).add(field_name)
        for s in spec.searchable:
            if s.system_modified_at_field_name:
                unpredictable.add(s.system_modified_at_field_name)
            if s.is_map and s.field_type not in _OBJECT_FIELD_TYPES:
                multiset.add(s.field_name)
        for ref in spec.searchable_refs:
            unpredictable.add(ref.field_name)
    # timeseries aspects reach the doc through the timeseries pipeline, not the aspect table
    unpredictable |= timeseries_written
    known = frozenset(writers) | unpredictable | {"urn"}
    shared = frozenset(f for f, n in writes.items() if n > 1)
    routed = {
        name: tuple(
            sorted(
                (aspect_plan.fields & shared)
                | {s.field_name for s in aspect_plan.spec.searchable if s.sanitize_rich_text}
            )
        )
        for name, aspect_plan in aspects.items()
    }
    plan = _EntityPlan(
        registry=registry,
        entity=entity,
        aspects=aspects,
        known=known,
        shared=shared,
        routed=routed,
        unpredictable=frozenset(unpredictable),
        multiset=frozenset(multiset),
        delete_values=delete_values,
        field_aspects={f: tuple(a) for f, a in writers.items()},
    )
    _ENTITY_PLANS[key] = plan
    return plan


_EMPTY: frozenset[str] = frozenset()


def _unknown_entity(urn: str, entity_type: str, aspects: Mapping[str, Any]) -> ExpectedDocument:
    error = ProjectionError(urn, "", f"unknown entity type {entity_type!r}")
    return ExpectedDocument(
        urn=urn,
        entity_type=entity_type,
        fields={"urn": urn},
        ambiguous={},
        unpredictable=_EMPTY,
        known_fields=frozenset({"urn"}),
        multiset_fields=_EMPTY,
        delete_values={},
        field_aspects={},
        unknown_aspects=tuple(aspects),
        errors=(error,),
    )


def _entity_type(urn: str) -> str:
    if urn.startswith("urn:li:"):
        end = urn.find(":", 7)
        return urn[7:] if end == -1 else urn[7:end]
    try:
        return parse_urn(urn)[0]
    except ValueError:
        return ""


def project_entity(registry: Registry, urn: str, aspects: Mapping[str, Any]) -> ExpectedDocument:
    """The entity doc DataHub's consumer builds from these aspect rows (name -> value).

    The key aspect comes from its row when present, else from the urn. An aspect the
    registry does not give this entity type is listed in `unknown_aspects`; a malformed
    value is recorded in `errors` and its fields become unpredictable. Never raises for data.
    """
    entity_type = _entity_type(urn)
    if not registry.has_entity(entity_type):
        return _unknown_entity(urn, entity_type, aspects)
    plan = _entity_plan(registry, entity_type)
    key_name = plan.entity.key_aspect
    fields: dict[str, Any] = {"urn": urn}
    candidates: dict[str, list[Any]] = {}
    routed = plan.routed
    errors: list[ProjectionError] = []
    unknown: list[str] = []
    broken: set[str] = set()
    removed = False

    items = list(aspects.items())
    if key_name not in aspects:
        try:
            items.append((key_name, key_fields_from_urn(plan.entity, urn)))
        except ValueError as exc:
            errors.append(ProjectionError(urn, key_name, f"urn does not fit the key: {exc}"))
            broken |= plan.aspects[key_name].fields

    for name, raw in items:
        aspect_plan = plan.aspects.get(name)
        if aspect_plan is None:
            unknown.append(name)
            continue
        if aspect_plan.spec.timeseries:
            continue
        value = raw
        try:
            if not isinstance(value, dict):
                value = _decode(value)
                if not isinstance(value, dict):
                    raise _Malformed(f"the aspect value is {_kind(value)}, not a record")
            written = aspect_plan.run(value)
        except _Malformed as exc:
            errors.append(ProjectionError(urn, name, str(exc)))
            broken |= aspect_plan.fields
            continue
        if name == "status":
            removed = value.get("removed", False) is True
        for field_name in routed[name]:
            field_value = written.pop(field_name, _ABSENT)
            if field_value is _ABSENT:
                continue
            bucket = candidates.setdefault(field_name, [])
            if isinstance(field_value, Candidates):
                bucket.extend(field_value)
            else:
                bucket.append(field_value)
        fields.update(written)

    ambiguous: dict[str, tuple[Any, ...]] = {}
    for field_name, values in candidates.items():
        distinct: list[Any]
        if all(v is None or isinstance(v, (str, bool, int, float)) for v in values):
            # the common case (has-flags, names, platform): plain values dedupe exactly by hash
            # keyed by type too: True and 1 are different field values
            distinct = list({(type(v), v): v for v in values}.values())
            if len(distinct) > 1 and any(isinstance(v, float) for v in distinct):
                distinct = [
                    v for i, v in enumerate(distinct) if not any(_same(False, v, d) for d in distinct[:i])
                ]
        else:
            distinct = []
            for v in values:
                if not any(_same(field_name in plan.multiset, v, d) for d in distinct):
                    distinct.append(v)
        if len(distinct) == 1:
            fields[field_name] = distinct[0]
        else:
            ambiguous[field_name] = tuple(distinct)

    unpredictable = plan.unpredictable
    if broken:
        unpredictable = unpredictable | broken
        for field_name in broken:
            fields.pop(field_name, None)
            ambiguous.pop(field_name, None)
    return ExpectedDocument(
        urn=urn,
        entity_type=plan.entity.name,
        fields=fields,
        ambiguous=ambiguous,
        unpredictable=unpredictable,
        known_fields=plan.known,
        multiset_fields=plan.multiset,
        delete_values=plan.delete_values,
        field_aspects=plan.field_aspects,
        removed=removed,
        unknown_aspects=tuple(unknown),
        errors=tuple(errors),
        present_aspects=frozenset(name for name, _ in items),
    )


# --- comparison ---------------------------------------------------------------------------------


def _hashable(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return value


def _same(multiset: bool, expected: Any, actual: Any) -> bool:
    """Equal as a doc field: None == missing, numbers by value (not bool), maps unordered."""
    if expected is actual:
        return True
    if expected is None or actual is None:
        return False
    if type(expected) is type(actual) and type(expected) is not float and expected == actual:
        if not isinstance(expected, list) or not multiset:
            return True
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return False
        if multiset:
            if len(expected) > MAX_ARRAY_LENGTH:  # Java keeps the first 1000 of a HashMap
                if len(actual) != MAX_ARRAY_LENGTH:
                    return False
                want = Counter(map(_hashable, expected))
                got = Counter(map(_hashable, actual))
                return all(want[k] >= n for k, n in got.items())
            return Counter(map(_hashable, expected)) == Counter(map(_hashable, actual))
        return len(expected) == len(actual) and all(
            _same(False, e, a) for e, a in zip(expected, actual, strict=True)
        )
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return False
        if len(expected) > MAX_OBJECT_KEYS:
            return len(actual) == MAX_OBJECT_KEYS and all(
                k in expected and _same(False, expected[k], v) for k, v in actual.items()
            )
        return expected.keys() == actual.keys() and all(
            _same(False, v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        if isinstance(expected, int) and isinstance(actual, int):
            return expected == actual
        return math.isclose(expected, actual, rel_tol=1e-6, abs_tol=1e-12)
    return bool(expected == actual)


def compare_document(expected: ExpectedDocument, actual_source: Mapping[str, Any]) -> list[FieldDiff]:
    """The fields where a doc's `_source` departs from the projection (empty: consistent).

    None and missing are equal; map-derived lists compare as multisets, other lists in order;
    an ambiguous field may hold any candidate; unpredictable fields and fields no aspect of the
    entity type writes are skipped; a field no present aspect writes may hold only what a
    delete of its aspect leaves (null, has -> false, num -> 0).
    """
    diffs: list[FieldDiff] = []
    fields = expected.fields
    ambiguous = expected.ambiguous
    unpredictable = expected.unpredictable
    multiset = expected.multiset_fields
    get = actual_source.get
    for name, want in fields.items():
        actual = get(name)
        kind = type(want)
        if kind is type(actual) and kind is not float and want == actual:
            continue
        if name in unpredictable or _same(name in multiset, want, actual):
            continue
        if actual is None:
            diffs.append(FieldDiff(name, want, None, "missing"))
        else:
            # the aspect is there but no longer has the field: DataHub's per-aspect upsert
            # never writes it, so the old value stays behind in the document
            diffs.append(FieldDiff(name, want, actual, "left_behind" if want is None else "mismatch"))
    for name, options in ambiguous.items():
        if name in unpredictable:
            continue
        actual = get(name)
        if any(_same(name in multiset, option, actual) for option in options):
            continue
        diffs.append(FieldDiff(name, options, actual, "missing" if actual is None else "mismatch"))
    known = expected.known_fields
    delete_values = expected.delete_values
    for name, actual in actual_source.items():
        if (
            actual is None
            or name in fields
            or name in ambiguous
            or name not in known
            or name in unpredictable
        ):
            continue
        left = delete_values.get(name)
        if left is not None and _same(False, left, actual):
            continue
        writers = expected.field_aspects.get(name, ())
        present = expected.present_aspects
        kept = any(a in present for a in writers)
        diffs.append(FieldDiff(name, None, actual, "left_behind" if kept else "unexpected"))
    if len(diffs) > 1:
        diffs.sort(key=lambda d: d.field)
    return diffs


# --- graph --------------------------------------------------------------------------------------


def expected_edges(registry: Registry, urn: str, aspects: Mapping[str, Any]) -> set[Edge]:
    """The `graph_service_v1` edges these aspect rows give (Relationship annotations).

    Malformed or unknown aspects give no edges; destinations Java cannot parse as urns are
    skipped, as GraphIndexUtils does.
    """
    entity_type = _entity_type(urn)
    if not registry.has_entity(entity_type):
        return set()
    plan = _entity_plan(registry, entity_type)
    key_name = plan.entity.key_aspect
    items = list(aspects.items())
    if key_name not in aspects:
        try:
            items.append((key_name, key_fields_from_urn(plan.entity, urn)))
        except ValueError:
            pass
    edges: set[Edge] = set()
    for name, raw in items:
        aspect_plan = plan.aspects.get(name)
        if aspect_plan is None or aspect_plan.spec.timeseries or not aspect_plan.relationships:
            continue
        try:
            value = _decode(raw)
            if not isinstance(value, dict):
                continue
            found = [(rel.name, extract(value)) for rel, extract in aspect_plan.relationships]
        except _Malformed:
            continue
        for relationship, destinations in found:
            for destination in destinations:
                if isinstance(destination, str) and is_valid_urn(destination):
                    edges.add(Edge(urn, relationship, destination))
    return edges
