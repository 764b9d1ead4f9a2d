"""DataHub's entity registry, read from the acryl-datahub wheel's annotated .avsc schemas."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.core.urns import UrnError
from auditor.core.urns import entity_type as _urn_entity_type

log = logging.getLogger(__name__)

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED = frozenset({"record", "enum", "fixed"})
# Pegasus field-type defaults (SearchableAnnotation.getDefaultFieldType)
_DEFAULT_FIELD_TYPE = {"int": "COUNT", "map": "KEYWORD", "float": "DOUBLE", "double": "DOUBLE"}


class RegistryError(Exception):
    """The schemas cannot be read into a registry DataHub itself would accept."""


@dataclass(frozen=True)
class PathStep:
    """One step from an aspect's root to a leaf: a record field, array items or a union member."""

    kind: str  # "field" | "items" | "union"
    name: str  # field name, "*" or the Pegasus union member key
    has_default: bool = False
    default: Any = field(default=None, compare=False)
    # union member keys accepted in stored JSON (Pegasus key, and the pegasus2avro spelling)
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchableSpec:
    """A `@Searchable` leaf of an aspect: where its value sits and which doc fields it writes."""

    aspect: str
    path: tuple[str, ...]
    field_name: str
    field_type: str
    # Pegasus type of the leaf: string, int, long, float, double, boolean, bytes, enum, map
    value_type: str
    has_values_field_name: str | None = None
    num_values_field_name: str | None = None
    is_map: bool = False
    is_array: bool = False
    map_value_type: str | None = None
    sanitize_rich_text: bool = False
    system_modified_at_field_name: str | None = None
    field_name_aliases: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()  # enum symbols, for enum leaves
    steps: tuple[PathStep, ...] = field(default=(), compare=False, repr=False)

    @property
    def path_spec(self) -> str:
        """The Pegasus PathSpec string, e.g. `/owners/*/owner`."""
        return "/" + "/".join(self.path)


@dataclass(frozen=True)
class SearchableRefSpec:
    """A `@SearchableRef` leaf: a doc field built from another entity's aspects."""

    aspect: str
    path: tuple[str, ...]
    field_name: str
    field_type: str
    ref_type: str | None
    depth: int | None


@dataclass(frozen=True)
class RelationshipSpec:
    """A `@Relationship` leaf: each urn found at `path` is an edge `name` to that urn."""

    aspect: str
    path: tuple[str, ...]
    name: str
    entity_types: tuple[str, ...]
    is_lineage: bool = False
    is_upstream: bool = True
    steps: tuple[PathStep, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class AspectSpec:
    """One aspect: its annotations and its Avro record (the .avsc dict, pegasus2avro names)."""

    name: str
    timeseries: bool
    searchable: tuple[SearchableSpec, ...]
    relationships: tuple[RelationshipSpec, ...]
    schema: dict[str, Any] = field(compare=False, repr=False)
    searchable_refs: tuple[SearchableRefSpec, ...] = ()
    key_for_entity: str | None = None

    @property
    def record_fields(self) -> tuple[str, ...]:
        """Top-level field names in schema order."""
        return tuple(f["name"] for f in self.schema.get("fields", ()))


@dataclass(frozen=True)
class KeyField:
    """One field of a key aspect, in schema order (urn key parts bind to them by position)."""

    name: str
    value_type: str  # string | enum | int | long | ...
    is_urn: bool = False
    optional: bool = False
    symbols: tuple[str, ...] = ()  # enum symbols


@dataclass(frozen=True)
class EntitySpec:
    """One entity type: its key aspect first, then the aspects the registry allows it."""

    name: str
    key_aspect: str
    aspects: tuple[str, ...]
    category: str | None = None
    key_fields: tuple[KeyField, ...] = ()


class Registry:
    """The entity registry: entity types, their aspects and the annotations of each aspect."""

    def __init__(
        self,
        entities: Mapping[str, EntitySpec],
        aspects: Mapping[str, AspectSpec],
        source: str = "",
    ) -> None:
        self._entities = dict(entities)
        self._aspects = dict(aspects)
        self._entities_lower = {name.lower(): spec for name, spec in self._entities.items()}
        self._entity_aspects = {name: frozenset(spec.aspects) for name, spec in self._entities.items()}
        self.source = source

    @classmethod
    def load(cls, schemas_dir: str | Path | None = None) -> Registry:
        """The registry of the installed wheel (or of `schemas_dir`), parsed once per process."""
        directory = Path(schemas_dir) if schemas_dir is not None else _wheel_schemas_dir()
        return _load_cached(str(directory.resolve()))

    @property
    def entity_names(self) -> tuple[str, ...]:
        return tuple(self._entities)

    @property
    def aspect_names(self) -> tuple[str, ...]:
        return tuple(self._aspects)

    def entities(self) -> Iterator[EntitySpec]:
        return iter(self._entities.values())

    def aspects(self) -> Iterator[AspectSpec]:
        return iter(self._aspects.values())

    def entity(self, name: str) -> EntitySpec:
        """The entity spec by name (DataHub looks entity names up case-insensitively)."""
        spec = self._entities.get(name) or self._entities_lower.get(name.lower())
        if spec is None:
            raise KeyError(f"unknown entity type {name!r}")
        return spec

    def has_entity(self, name: str) -> bool:
        return name in self._entities or name.lower() in self._entities_lower

    def aspect(self, name: str) -> AspectSpec:
        try:
            return self._aspects[name]
        except KeyError:
            raise KeyError(f"unknown aspect {name!r}") from None

    def has_aspect(self, name: str) -> bool:
        return name in self._aspects

    def entity_aspects(self, entity_type: str) -> tuple[AspectSpec, ...]:
        """The aspect specs of an entity, key aspect first."""
        return tuple(self._aspects[a] for a in self.entity(entity_type).aspects)

    @staticmethod
    def entity_type_of_urn(urn: str) -> str:
        """`urn:li:dataset:(...)` -> `dataset` (raises `UrnError`, a ValueError, otherwise)."""
        if not urn.startswith("urn:li:"):
            raise UrnError(f"not a DataHub urn: {urn!r}")
        if urn.find(":", 7) == -1 and len(urn) > 7:
            return urn[7:]
        return _urn_entity_type(urn)

    @staticmethod
    def index_name(entity_type: str, prefix: str = "") -> str:
        """`[prefix_]<entity lowercased>index_v2`."""
        base = f"{entity_type.lower()}index_v2"
        return f"{prefix}_{base}" if prefix else base

    def is_known(self, entity_type: str, aspect: str) -> bool:
        """Whether the registry lets `entity_type` carry `aspect` (its key aspect included)."""
        spec = self._entities.get(entity_type) or self._entities_lower.get(entity_type.lower())
        return spec is not None and aspect in self._entity_aspects[spec.name]


def _wheel_schemas_dir() -> Path:
    try:
        import datahub.metadata.schemas as schemas_pkg
    except ImportError as exc:  # pragma: no cover - acryl-datahub is a hard dependency
        raise RegistryError("acryl-datahub is not installed (pip install acryl-datahub)") from exc
    paths = list(getattr(schemas_pkg, "__path__", []))
    if not paths:  # pragma: no cover
        raise RegistryError("datahub.metadata.schemas has no directory")
    return Path(paths[0])


@functools.lru_cache(maxsize=8)
def _load_cached(directory: str) -> Registry:
    return load_registry(Path(directory))


def load_registry(directory: Path) -> Registry:
    """Parse every `*.avsc` under `directory` (uncached; `Registry.load` caches)."""
    files = sorted(directory.glob("*.avsc"))
    if not files:
        raise RegistryError(f"no .avsc schemas in {directory}")
    aspects: dict[str, AspectSpec] = {}
    keys: list[tuple[str, dict[str, Any]]] = []
    for path in files:
        try:
            schema = json.loads(path.read_bytes())
        except (OSError, ValueError) as exc:
            raise RegistryError(f"cannot read schema {path}: {exc}") from exc
        if not isinstance(schema, dict):
            continue
        annotation = schema.get("Aspect")
        if not isinstance(annotation, dict) or "name" not in annotation:
            continue
        name = annotation["name"]
        if name in aspects:
            raise RegistryError(f"aspect {name!r} is defined twice (second time in {path.name})")
        aspects[name] = _build_aspect(name, annotation, schema)
        if "keyForEntity" in annotation:
            keys.append((name, annotation))
    entities: dict[str, EntitySpec] = {}
    for key_name, annotation in keys:
        entity_name = annotation["keyForEntity"]
        listed = [a for a in annotation.get("entityAspects", ()) if a != key_name]
        missing = [a for a in listed if a not in aspects]
        if missing:
            log.warning("entity %s lists aspects without a schema: %s", entity_name, missing)
        entities[entity_name] = EntitySpec(
            name=entity_name,
            key_aspect=key_name,
            aspects=(key_name, *(a for a in dict.fromkeys(listed) if a in aspects)),
            # the wheel's codegen writes "_unset_" where entity-registry.yml names no category
            category=None
            if annotation.get("entityCategory") in (None, "_unset_")
            else annotation.get("entityCategory"),
            key_fields=_key_fields(aspects[key_name].schema),
        )
    return Registry(entities, aspects, source=str(directory))


def _key_fields(schema: dict[str, Any]) -> tuple[KeyField, ...]:
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


# --- schema walking -----------------------------------------------------------------------------


_DISABLED = object()  # an override of `null`: switches an inner annotation off


def _build_aspect(name: str, annotation: dict[str, Any], schema: dict[str, Any]) -> AspectSpec:
    walker = _Walker(schema)
    searchable = _searchable_specs(name, walker.leaves("Searchable"))
    refs = tuple(
        SearchableRefSpec(
            aspect=name,
            path=leaf.path,
            field_name=leaf.annotation.get("fieldName") or _default_field_name(leaf.path),
            field_type=leaf.annotation.get("fieldType") or "URN",
            ref_type=leaf.annotation.get("refType"),
            depth=leaf.annotation.get("depth"),
        )
        for leaf in walker.leaves("SearchableRef")
        if isinstance(leaf.annotation, dict)
    )
    relationships = tuple(
        RelationshipSpec(
            aspect=name,
            path=leaf.path,
            name=leaf.annotation["name"],
            entity_types=tuple(leaf.annotation.get("entityTypes", ())),
            is_lineage=bool(leaf.annotation.get("isLineage", False)),
            is_upstream=bool(leaf.annotation.get("isUpstream", True)),
            steps=leaf.steps,
        )
        for leaf in walker.leaves("Relationship")
        if isinstance(leaf.annotation, dict)
        and "name" in leaf.annotation
        and leaf.value_type in ("string", "enum")
    )
    return AspectSpec(
        name=name,
        timeseries=annotation.get("type") == "timeseries",
        searchable=searchable,
        relationships=relationships,
        schema=schema,
        searchable_refs=refs,
        key_for_entity=annotation.get("keyForEntity"),
    )


@dataclass(frozen=True)
class _Leaf:
    path: tuple[str, ...]
    steps: tuple[PathStep, ...]
    value_type: str
    annotation: Any
    map_value_type: str | None = None
    symbols: tuple[str, ...] = ()


def _default_field_name(path: tuple[str, ...]) -> str:
    """FieldSpecUtils.getSchemaFieldName: the last component, or the one before a trailing `*`."""
    if path[-1] == "*" and len(path) > 1:
        return path[-2]
    return path[-1]


def _searchable_specs(aspect: str, leaves: list[_Leaf]) -> tuple[SearchableSpec, ...]:
    """SearchableFieldSpecExtractor: defaults, duplicate renaming, then the `__` filter."""
    specs: list[SearchableSpec] = []
    seen: dict[str, str] = {}  # field name -> path spec that took it
    for leaf in leaves:
        ann = leaf.annotation
        if not isinstance(ann, dict):
            continue
        path_spec = "/" + "/".join(leaf.path)
        name = ann.get("fieldName") or _default_field_name(leaf.path)
        if name in seen and seen[name] != path_spec:
            renamed = path_spec.replace("/", "_").replace("*", "")
            if renamed.startswith("_"):
                renamed = renamed[1:]
            if renamed in seen and seen[renamed] != path_spec:
                raise RegistryError(
                    f"aspect {aspect}: several searchable fields named {name!r} ({path_spec})"
                )
            name = renamed
        seen[name] = path_spec
        value_type = leaf.value_type
        field_type = ann.get("fieldType") or _DEFAULT_FIELD_TYPE.get(value_type, "TEXT")
        modified_at = None
        if ann.get("includeSystemModifiedAt"):
            modified_at = ann.get("systemModifiedAtFieldName") or f"{name}SystemModifiedAt"
        specs.append(
            SearchableSpec(
                aspect=aspect,
                path=leaf.path,
                field_name=name,
                field_type=field_type,
                value_type=value_type,
                has_values_field_name=ann.get("hasValuesFieldName"),
                num_values_field_name=ann.get("numValuesFieldName"),
                is_map=value_type == "map",
                is_array="*" in leaf.path,
                map_value_type=leaf.map_value_type,
                sanitize_rich_text=bool(ann.get("sanitizeRichText", False)),
                system_modified_at_field_name=modified_at,
                field_name_aliases=tuple(ann.get("fieldNameAliases", ())),
                symbols=leaf.symbols,
                steps=leaf.steps,
            )
        )
    return tuple(s for s in specs if "__" not in s.field_name)


def _pegasus_name(avro_fullname: str) -> str:
    """`com.linkedin.pegasus2avro.common.Foo` -> `com.linkedin.common.Foo`."""
    return avro_fullname.replace(".pegasus2avro.", ".")


def _is_v3_only(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and set(value) <= {"v3"}


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
        pending: dict[tuple[str, ...], Any],
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
            sub = {rest[1:]: ann for rest, ann in pending.items() if rest and rest[0] == name}
            ann = f.get(key)
            if ann is not None:
                if isinstance(ann, dict) and ann and all(k.startswith("/") for k in ann):
                    for rel, value in ann.items():
                        if key == "Searchable" and _is_v3_only(value):
                            continue  # a v3-only override leaves the v2 annotation as it is
                        parts = tuple(p for p in rel.split("/") if p)
                        sub.setdefault(parts, _DISABLED if value is None else value)
                else:
                    sub.setdefault((), ann)
            ftype = f.get("type")
            has_default = "default" in f and f["default"] is not None
            step = PathStep("field", name, has_default=has_default, default=f.get("default"))
            self._type(ftype, namespace, (*path, name), (*steps, step), sub, stack, key, out)

    def _type(
        self,
        node: Any,
        namespace: str,
        path: tuple[str, ...],
        steps: tuple[PathStep, ...],
        pending: dict[tuple[str, ...], Any],
        stack: tuple[str, ...],
        key: str,
        out: list[_Leaf],
    ) -> None:
        node, namespace = self._resolve(node, namespace)
        if isinstance(node, list):  # union
            members = [m for m in node if m != "null"]
            if len(members) == 1 and len(node) == 2:  # an optional field: stored plain
                self._type(members[0], namespace, path, steps, pending, stack, key, out)
                return
            for member in members:
                resolved, member_ns = self._resolve(member, namespace)
                member_key, avro_key = self._member_key(resolved, namespace)
                sub = {r[1:]: a for r, a in pending.items() if r and r[0] == member_key}
                step = PathStep("union", member_key, keys=tuple(dict.fromkeys((member_key, avro_key))))
                self._type(resolved, member_ns, (*path, member_key), (*steps, step), sub, stack, key, out)
            return
        kind = node if isinstance(node, str) else node.get("type")
        if kind == "record":
            self._record(node, namespace, path, steps, pending, stack, key, out)
        elif kind == "array":
            sub = {r[1:]: a for r, a in pending.items() if r and r[0] == "*"}
            self._type(
                node.get("items"),
                namespace,
                (*path, "*"),
                (*steps, PathStep("items", "*")),
                sub,
                stack,
                key,
                out,
            )
        elif kind == "map":
            # SearchableFieldSpecExtractor: a map takes its key's, else its values', annotation
            ann = pending.get(("$key",), pending.get(("*",)))
            if ann is not None and ann is not _DISABLED:
                values, _ = self._resolve(node.get("values"), namespace)
                vtype = values if isinstance(values, str) else values.get("type")
                out.append(_Leaf(path, steps, "map", ann, map_value_type=_type_name(vtype)))
        elif kind == "enum" or kind == "fixed" or kind in _PRIMITIVES:
            ann = pending.get(())
            if ann is not None and ann is not _DISABLED and path:
                symbols = tuple(node.get("symbols", ())) if kind == "enum" else ()
                value_type = "bytes" if kind == "fixed" else str(kind)
                out.append(_Leaf(path, steps, value_type, ann, symbols=symbols))

    def _member_key(self, member: Any, namespace: str) -> tuple[str, str]:
        if isinstance(member, str):
            return member, member
        kind = member.get("type")
        if kind in _NAMED:
            avro = self._fullname(member, namespace)
            return _pegasus_name(avro), avro
        return str(kind), str(kind)


def _type_name(kind: Any) -> str:
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list):
        return "union"
    return "record"
