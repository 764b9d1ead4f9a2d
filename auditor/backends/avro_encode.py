"""Avro binary encoding compiled once per schema: the same bytes as fastavro, a fraction of its cost.

fastavro's `schemaless_writer` resolves every union at run time by validating the value against
each branch (a whole record for `systemMetadata`): about 36 us an MCL measured, the largest
share of a replay's Python time per row. `compile_schema` turns the schema into nested
closures once; a union of null and one other type is resolved by `is None`, a wider union by
the value's Python type.
A value the compiled encoder does not expect (a type it cannot place in the schema) raises
`EncodeError`; the caller then encodes that one message with fastavro, so nothing is lost.
`tests/unit/test_avro_encode.py` compares the bytes with fastavro's on generated records.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

Writer = Callable[[Any, bytearray], None]


class EncodeError(ValueError):
    """A value the compiled encoder cannot place in the schema."""


def _long(n: int, out: bytearray) -> None:
    n = (n << 1) ^ (n >> 63)
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _varint(n: int) -> bytes:
    out = bytearray()
    _long(n, out)
    return bytes(out)


def _null(value: Any, out: bytearray) -> None:
    if value is not None:
        raise EncodeError(f"expected null, got {type(value).__name__}")


def _boolean(value: Any, out: bytearray) -> None:
    if not isinstance(value, bool):
        raise EncodeError(f"expected a boolean, got {type(value).__name__}")
    out.append(1 if value else 0)


def _integer(value: Any, out: bytearray) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise EncodeError(f"expected an integer, got {type(value).__name__}")
    if not -(1 << 63) <= value < (1 << 63):
        raise EncodeError("integer out of range")
    _long(value, out)


def _string(value: Any, out: bytearray) -> None:
    if not isinstance(value, str):
        raise EncodeError(f"expected a string, got {type(value).__name__}")
    data = value.encode("utf-8")
    _long(len(data), out)
    out += data


def _bytes(value: Any, out: bytearray) -> None:
    if not isinstance(value, (bytes, bytearray)):
        raise EncodeError(f"expected bytes, got {type(value).__name__}")
    _long(len(value), out)
    out += value


def _number(value: Any) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise EncodeError(f"expected a number, got {type(value).__name__}")
    return float(value)


def _float(value: Any, out: bytearray) -> None:
    out += struct.pack("<f", _number(value))


def _double(value: Any, out: bytearray) -> None:
    out += struct.pack("<d", _number(value))


PRIMITIVES: dict[str, Writer] = {
    "null": _null,
    "boolean": _boolean,
    "int": _integer,
    "long": _integer,
    "string": _string,
    "bytes": _bytes,
    "float": _float,
    "double": _double,
}
# which Python types a branch of a wide union takes (bool before int: a bool is an int)
ACCEPTS: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "int": (int,),
    "long": (int,),
    "string": (str,),
    "bytes": (bytes, bytearray),
    "float": (float,),
    "double": (float,),
    "record": (dict,),
    "map": (dict,),
    "array": (list, tuple),
    "enum": (str,),
    "fixed": (bytes,),
}


def _full(name: str, namespace: str | None) -> str:
    """A type's full name: as written when dotted, else in the enclosing namespace."""
    return name if "." in name or not namespace else f"{namespace}.{name}"


def compile_schema(schema: Any) -> Writer:
    """The encoder of `schema` (parsed JSON, as registered). Named types may be referenced."""
    return _Compiler().node(schema, None)


class _Compiler:
    def __init__(self) -> None:
        self.named: dict[str, Writer] = {}
        self.kinds: dict[str, str] = {}

    def _name(self, schema: dict[str, Any], namespace: str | None) -> tuple[str, str | None]:
        name = str(schema["name"])
        ns = schema.get("namespace", namespace)
        full = _full(name, ns)
        return full, full.rsplit(".", 1)[0] if "." in full else None

    def kind(self, schema: Any, namespace: str | None) -> str:
        if isinstance(schema, list):
            return "union"
        if isinstance(schema, dict):
            inner = schema["type"]
            return self.kind(inner, namespace) if isinstance(inner, (dict, list)) else str(inner)
        if schema in PRIMITIVES:
            return str(schema)
        return self.kinds.get(_full(schema, namespace), self.kinds.get(schema, "record"))

    def node(self, schema: Any, namespace: str | None) -> Writer:
        if isinstance(schema, list):
            return self.union(schema, namespace)
        if isinstance(schema, str):
            if schema in PRIMITIVES:
                return PRIMITIVES[schema]
            for key in (_full(schema, namespace), schema):
                if key in self.named:
                    return self._reference(key)
            raise ValueError(f"unknown Avro type {schema!r}")
        kind = schema["type"]
        if isinstance(kind, (dict, list)) or kind in PRIMITIVES:
            return self.node(kind, namespace)
        if kind == "record" or kind == "error":
            return self.record(schema, namespace)
        if kind == "enum":
            return self.enum(schema, namespace)
        if kind == "fixed":
            return self.fixed(schema, namespace)
        if kind == "map":
            return self.map(self.node(schema["values"], namespace))
        if kind == "array":
            return self.array(self.node(schema["items"], namespace))
        raise ValueError(f"unsupported Avro type {kind!r}")

    def _reference(self, key: str) -> Writer:
        if self.named[key] is not _unresolved:
            return self.named[key]
        named = self.named  # a record referencing itself: looked up when written

        def write(value: Any, out: bytearray) -> None:
            named[key](value, out)

        return write

    def record(self, schema: dict[str, Any], namespace: str | None) -> Writer:
        full, ns = self._name(schema, namespace)
        self.kinds[full] = "record"
        self.named[full] = _unresolved  # a record may reference itself
        fields: list[tuple[str, Writer, bool, Any]] = []
        for f in schema["fields"]:
            fields.append((f["name"], self.node(f["type"], ns), "default" in f, f.get("default")))

        def write(value: Any, out: bytearray) -> None:
            if not isinstance(value, dict):
                raise EncodeError(f"expected a record, got {type(value).__name__}")
            for name, writer, has_default, default in fields:
                if name in value:
                    writer(value[name], out)
                elif has_default:
                    writer(default, out)
                else:
                    raise EncodeError(f"field {name!r} is missing and has no default")

        self.named[full] = write
        return write

    def enum(self, schema: dict[str, Any], namespace: str | None) -> Writer:
        full, _ = self._name(schema, namespace)
        self.kinds[full] = "enum"
        index = {symbol: _varint(i) for i, symbol in enumerate(schema["symbols"])}

        def write(value: Any, out: bytearray) -> None:
            try:
                out += index[value]
            except (KeyError, TypeError):
                raise EncodeError(f"{value!r} is not a symbol of {full}") from None

        self.named[full] = write
        return write

    def fixed(self, schema: dict[str, Any], namespace: str | None) -> Writer:
        full, _ = self._name(schema, namespace)
        self.kinds[full] = "fixed"
        size = int(schema["size"])

        def write(value: Any, out: bytearray) -> None:
            if not isinstance(value, bytes) or len(value) != size:
                raise EncodeError(f"expected {size} bytes for {full}")
            out += value

        self.named[full] = write
        return write

    @staticmethod
    def map(values: Writer) -> Writer:
        def write(value: Any, out: bytearray) -> None:
            if not isinstance(value, dict):
                raise EncodeError(f"expected a map, got {type(value).__name__}")
            if value:
                _long(len(value), out)
                for k, v in value.items():
                    _string(k, out)
                    values(v, out)
            out.append(0)

        return write

    @staticmethod
    def array(items: Writer) -> Writer:
        def write(value: Any, out: bytearray) -> None:
            if not isinstance(value, (list, tuple)):
                raise EncodeError(f"expected an array, got {type(value).__name__}")
            if value:
                _long(len(value), out)
                for v in value:
                    items(v, out)
            out.append(0)

        return write

    def union(self, branches: list[Any], namespace: str | None) -> Writer:
        writers = [self.node(b, namespace) for b in branches]
        kinds = [self.kind(b, namespace) for b in branches]
        tags = [_varint(i) for i in range(len(branches))]
        if len(branches) == 2 and "null" in kinds:
            null_at = kinds.index("null")
            null_tag, other_tag, other = tags[null_at], tags[1 - null_at], writers[1 - null_at]

            def write_optional(value: Any, out: bytearray) -> None:
                if value is None:
                    out += null_tag
                else:
                    out += other_tag
                    other(value, out)

            return write_optional

        def write(value: Any, out: bytearray) -> None:
            for tag, kind, writer in zip(tags, kinds, writers, strict=True):
                integer = kind in ("int", "long")
                if isinstance(value, ACCEPTS[kind]) and not (integer and isinstance(value, bool)):
                    out += tag
                    writer(value, out)
                    return
            raise EncodeError(f"no branch of the union takes a {type(value).__name__}")

        return write


def _unresolved(value: Any, out: bytearray) -> None:  # pragma: no cover - replaced before use
    raise EncodeError("a named type used before its definition ended")
