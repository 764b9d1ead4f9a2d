"""Walks one Avro aspect schema (.avsc) to its annotated leaves and its key fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auditor.platforms.datahub.registry.registry import KeyField, PathStep, RegistryError

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED = frozenset({"record", "enum", "fixed"})
_DISABLED = object()  # an override of `null`: switches an inner annotation off

# annotation overrides still to apply, keyed by the path below the current node
_Pending = dict[tuple[str, ...], Any]


@dataclass(frozen=True)
class _Leaf:
    """One annotated leaf: where it is, its Pegasus type and its (possibly overridden) annotation."""

    path: tuple[str, ...]
    steps: tuple[PathStep, ...]
    value_type: str
    annotation: Any
    map_value_type: str | None = None
    symbols: tuple[str, ...] = ()


def _pegasus_name(avro_fullname: str) -> str:
    """`com.linkedin.pegasus2avro.common.Foo` -> `com.linkedin.common.Foo`."""
    return avro_fullname.replace(".pegasus2avro.", ".")


def _is_v3_only(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and set(value) <= {"v3"}


def _type_name(kind: Any) -> str:
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        return "union"
    return "record"


def _below(pending: _Pending, step: str) -> _Pending:
    """The overrides that apply below `step`, keyed by the path below it."""
    return {rest[1:]: ann for rest, ann in pending.items() if rest and rest[0] == step}


class _Walker:
    """Walks one aspect schema, resolving named references and path-keyed annotation overrides."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.named: dict[str, dict[str, Any]] = {}
        self._collect(schema, "")

    def _collect(self, node: Any, namespace: str) -> None:
        if isinstance(node, list):
            for member in node:
                self._collect(member, namespace)
            return
        if not isinstance(node, dict):
            return
        kind = node.get("type")
        if kind in _NAMED:
            fullname = self._fullname(node, namespace)
            self.named.setdefault(fullname, node)
            namespace = fullname.rpartition(".")[0]
            if kind == "record":
                for f in node.get("fields", ()):
                    self._collect(f.get("type"), namespace)
        elif kind == "array":
            self._collect(node.get("items"), namespace)
        elif kind == "map":
            self._collect(node.get("values"), namespace)
        elif isinstance(kind, (dict, list)):
            self._collect(kind, namespace)

    @staticmethod
    def _fullname(node: dict[str, Any], namespace: str) -> str:
        name = node["name"]
        if "." in name:
            return str(name)
        ns = node.get("namespace", namespace)
        return f"{ns}.{name}" if ns else str(name)

    def _resolve(self, node: Any, namespace: str) -> tuple[Any, str]:
        """Follow a named reference; returns the definition and the namespace it lives in."""
        if isinstance(node, str) and node not in _PRIMITIVES:
            target = self.named.get(node) or self.named.get(f"{namespace}.{node}")
            if target is None:
                raise RegistryError(f"schema {self.schema.get('name')}: unknown type {node!r}")
            return target, self._fullname(target, namespace).rpartition(".")[0]
        if isinstance(node, dict) and isinstance(node.get("type"), (dict, list)):
            return self._resolve(node["type"], namespace)
        if isinstance(node, dict) and node.get("type") in _NAMED:
            return node, self._fullname(node, namespace).rpartition(".")[0]
        if (
            isinstance(node, dict)
            and isinstance(node.get("type"), str)
            and node["type"] not in _PRIMITIVES
            and node["type"] not in ("array", "map")
        ):
            return self._resolve(node["type"], namespace)
        return node, namespace

    def leaves(self, annotation_key: str) -> list[_Leaf]:
        """Every leaf carrying `annotation_key` (Searchable, Relationship, ...), in schema order."""
        out: list[_Leaf] = []
        ns = self._fullname(self.schema, "").rpartition(".")[0]
        self._record(self.schema, ns, (), (), {}, (), annotation_key, out)
        return out

    def _record(
        self,
        record: dict[str, Any],
        namespace: str,
        path: tuple[str, ...],
        steps: tuple[PathStep, ...],
        pending: _Pending,
        stack: tuple[str, ...],
        key: str,
        out: list[_Leaf],
    ) -> None:
        fullname = self._fullname(record, namespace)
        if fullname in stack:  # recursive type: Pegasus stops there too
            return
        stack = (*stack, fullname)
        namespace = fullname.rpartition(".")[0]
        for f in record.get("fields", ()):
            name = f["name"]
            sub = _field_overrides(f, key, _below(pending, name))
            has_default = "default" in f and f["default"] is not None
            step = PathStep("field", name, has_default=has_default, default=f.get("default"))
            self._type(f.get("type"), namespace, (*path, name), (*steps, step), sub, stack, key, out)

    def _type(
        self,
        node: Any,
        namespace: str,
        path: tuple[str, ...],
        steps: tuple[PathStep, ...],
        pending: _Pending,
        stack: tuple[str, ...],
        key: str,
        out: list[_Leaf],
    ) -> None:
        node, namespace = self._resolve(node, namespace)
        if isinstance(node, list):
            self._union(node, namespace, path, steps, pending, stack, key, out)
            return
        kind = node if isinstance(node, str) else node.get("type")
        if kind == "record":
            self._record(node, namespace, path, steps, pending, stack, key, out)
        elif kind == "array":
            path, steps = (*path, "*"), (*steps, PathStep("items", "*"))
            self._type(node.get("items"), namespace, path, steps, _below(pending, "*"), stack, key, out)
        elif kind == "map":
            self._map_leaf(node, namespace, path, steps, pending, out)
        elif kind == "enum" or kind == "fixed" or kind in _PRIMITIVES:
            self._scalar_leaf(node, str(kind), path, steps, pending, out)

    def _union(
        self,
        node: list[Any],
        namespace: str,
        path: tuple[str, ...],
        steps: tuple[PathStep, ...],
        pending: _Pending,
        stack: tuple[str, ...],
        key: str,
        out: list[_Leaf],
    ) -> None:
        """An optional field (`[null, T]`) is stored plain; other unions by member key."""
        members = [m for m in node if m != "null"]
        if len(members) == 1 and len(node) == 2:
            self._type(members[0], namespace, path, steps, pending, stack, key, out)
            return
        for member in members:
            resolved, member_ns = self._resolve(member, namespace)
            member_key, avro_key = self._member_key(resolved, namespace)
            sub = _below(pending, member_key)
            step = PathStep("union", member_key, keys=tuple(dict.fromkeys((member_key, avro_key))))
            self._type(resolved, member_ns, (*path, member_key), (*steps, step), sub, stack, key, out)

    def _map_leaf(
        self,
        node: dict[str, Any],
        namespace: str,
        path: tuple[str, ...],
        steps: tuple[PathStep, ...],
        pending: _Pending,
        out: list[_Leaf],
    ) -> None:
        # SearchableFieldSpecExtractor: a map takes its key's, else its values', annotation
        ann = pending.get(("$key",), pending.get(("*",)))
        if ann is not None and ann is not _DISABLED:
            values, _ = self._resolve(node.get("values"), namespace)
            vtype = values if isinstance(values, str) else values.get("type")
            out.append(_Leaf(path, steps, "map", ann, map_value_type=_type_name(vtype)))

    @staticmethod
    def _scalar_leaf(
        node: Any,
        kind: str,
        path: tuple[str, ...],
        steps: tuple[PathStep, ...],
        pending: _Pending,
        out: list[_Leaf],
    ) -> None:
        ann = pending.get(())
        if ann is not None and ann is not _DISABLED and path:
            symbols = tuple(node.get("symbols", ())) if kind == "enum" else ()
            value_type = "bytes" if kind == "fixed" else kind
            out.append(_Leaf(path, steps, value_type, ann, symbols=symbols))

    def _member_key(self, member: Any, namespace: str) -> tuple[str, str]:
        if isinstance(member, str):
            return member, member
        kind = member.get("type")
        if kind in _NAMED:
            avro = self._fullname(member, namespace)
            return _pegasus_name(avro), avro
        return str(kind), str(kind)


def _field_overrides(f: dict[str, Any], key: str, sub: _Pending) -> _Pending:
    """The field's own annotation (at `()`), or the path-keyed overrides it gives its insides,
    added to those coming from above (which win)."""
    ann = f.get(key)
    if ann is None:
        return sub
    if isinstance(ann, dict) and ann and all(k.startswith("/") for k in ann):
        for rel, value in ann.items():
            if key == "Searchable" and _is_v3_only(value):
                continue  # a v3-only override leaves the v2 annotation as it is
            parts = tuple(p for p in rel.split("/") if p)
            sub.setdefault(parts, _DISABLED if value is None else value)
    else:
        sub.setdefault((), ann)
    return sub


def _key_fields(schema: dict[str, Any]) -> tuple[KeyField, ...]:
    """The fields of a key aspect, in schema order (a urn's key parts bind to them)."""
    walker = _Walker(schema)
    ns = walker._fullname(schema, "").rpartition(".")[0]
    out: list[KeyField] = []
    for f in schema.get("fields", ()):
        node, _ = walker._resolve(f.get("type"), ns)
        optional = False
        if isinstance(node, list):
            optional = "null" in node
            members = [m for m in node if m != "null"]
            node, _ = walker._resolve(members[0], ns) if members else ("null", ns)
        kind = node if isinstance(node, str) else str(node.get("type"))
        java = f.get("java") if isinstance(f.get("java"), dict) else {}
        is_urn = "Urn" in f or str(java.get("class", "")).endswith("Urn")
        symbols = tuple(node.get("symbols", ())) if isinstance(node, dict) else ()
        out.append(KeyField(f["name"], kind, is_urn=is_urn, optional=optional, symbols=symbols))
    return tuple(out)
