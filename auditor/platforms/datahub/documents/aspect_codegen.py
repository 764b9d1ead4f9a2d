"""Generates one Python function per aspect that projects its value in a single walk."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from auditor.platforms.datahub.documents.emit import (
    _OBJECT_FIELD_TYPES,
    MAX_ARRAY_LENGTH,
    _aspect_dups,
    _compile_emitter,
)
from auditor.platforms.datahub.documents.extract import _kind, _Malformed, _map_entries
from auditor.platforms.datahub.documents.javastr import _java_str
from auditor.platforms.datahub.registry.registry import AspectSpec, PathStep, SearchableSpec

# the generated type test of a leaf: true when the value is NOT of the leaf's type
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
    """One step of the aspect's path tree: the specs ending here and the steps going on."""

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
        """`run(value) -> written fields`: collect every spec's values, then write the fields."""
        self.emit(0, "def run(v0):")
        for index in range(len(self.spec.searchable)):
            self.emit(1, f"s{index} = []")
        self.walk(self._path_tree(), "v0", 1, "", under_array=False)
        self.emit(1, "out = {}")
        for index, s in enumerate(self.spec.searchable):
            self.emit_fields(index, s)
        self.emit(1, "return out")
        return self._compile()

    def _path_tree(self) -> _Node:
        """The specs' paths merged into one tree, so that a shared prefix is walked once."""
        root = _Node()
        for index, s in enumerate(self.spec.searchable):
            node = root
            for step in s.steps:
                key = (step.kind, step.name)
                if key not in node.children:
                    node.children[key] = (step, _Node())
                node = node.children[key][1]
            node.specs.append(index)
        return root

    def _compile(self) -> Callable[[dict[str, Any]], dict[str, Any]]:
        namespace: dict[str, Any] = {
            "C": self.consts,
            "M": _Malformed,
            "K": _kind,
            "ENTRIES": _map_entries,
            "JSTR": _java_str,
        }
        exec(compile("\n".join(self.lines), f"<aspect {self.spec.name}>", "exec"), namespace)
        return namespace["run"]  # type: ignore[no-any-return]

    # --- the walk: collect each spec's values into its list s<index> ----------------------------

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
                self._walk_items(child, var, depth, where, path)
            else:
                self._walk_member(step, child, var, depth, path, under_array)

    def _walk_items(self, child: _Node, var: str, depth: int, where: str, path: str) -> None:
        """`*`: loop over the array's items."""
        msg = self.const(f"{where}: expected an array, got ")
        self.emit(depth, f"if not isinstance({var}, list): raise M({msg} + K({var}))")
        item = self.var()
        self.emit(depth, f"for {item} in {var}:")
        self.walk(child, item, depth + 1, path, under_array=True)

    def _walk_member(
        self, step: PathStep, child: _Node, var: str, depth: int, path: str, under_array: bool
    ) -> None:
        """A record field (or its default) or a union member: go on when it is there."""
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

    # --- the fields: write each spec's fields from its values -----------------------------------

    def emit_fields(self, index: int, s: SearchableSpec) -> None:
        vals = f"s{index}"
        if not self._is_simple(s):
            emitter = self.const(_compile_emitter(s, self.dups))
            self.emit(1, f"{emitter}({vals}, out)")
            return
        self._emit_side_fields(vals, s)
        self._emit_main_field(vals, s)

    def _is_simple(self, s: SearchableSpec) -> bool:
        """Whether inline code can write the spec's fields (else its compiled emitter does)."""
        return (
            not s.sanitize_rich_text
            and not ({s.field_name, s.has_values_field_name, s.num_values_field_name} & self.dups)
            and s.field_type != "BROWSE_PATH_V2"
            and not (s.is_map and s.field_type in _OBJECT_FIELD_TYPES)
        )

    def _emit_side_fields(self, vals: str, s: SearchableSpec) -> None:
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

    def _emit_main_field(self, vals: str, s: SearchableSpec) -> None:
        textual = s.value_type in ("string", "enum", "bytes", "map")
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
