"""Reads the acryl-datahub wheel's annotated .avsc schemas into a Registry.

Cached per process, and on disk (`$XDG_CACHE_HOME/auditor/`, else `~/.cache/auditor/`) keyed by
the schema files' names, sizes and times and by this code's own, so a one-shot command such as
`auditor triage` does not re-walk 270 schemas at every start (about 0.1 s saved).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import pickle
from pathlib import Path
from typing import Any

from auditor.platforms.datahub.registry.registry import (
    AspectSpec,
    EntitySpec,
    Registry,
    RegistryError,
    RelationshipSpec,
    SearchableRefSpec,
    SearchableSpec,
)
from auditor.platforms.datahub.registry.schema_walker import _key_fields, _Leaf, _Walker

log = logging.getLogger(__name__)

# Pegasus field-type defaults (SearchableAnnotation.getDefaultFieldType)
_DEFAULT_FIELD_TYPE = {"int": "COUNT", "map": "KEYWORD", "float": "DOUBLE", "double": "DOUBLE"}


def load_cached(schemas_dir: str | Path | None = None) -> Registry:
    """The registry of the installed wheel (or of `schemas_dir`), parsed once per process."""
    directory = Path(schemas_dir) if schemas_dir is not None else _wheel_schemas_dir()
    return _load_cached(str(directory.resolve()))


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
    path = _cache_path(Path(directory))
    if path is not None:
        try:
            with path.open("rb") as handle:
                cached = pickle.load(handle)  # written by this function, below, in the user's own cache
            if isinstance(cached, Registry):
                return cached
        except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            pass
    registry = load_registry(Path(directory))
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(pickle.dumps(registry, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only home: parse every time
    return registry


def _cache_path(directory: Path) -> Path | None:
    """Where the parsed registry of `directory` is kept (None: no usable cache directory)."""
    base = os.environ.get("XDG_CACHE_HOME") or (Path.home() / ".cache" if Path.home().exists() else None)
    if base is None:
        return None
    digest = hashlib.sha256()
    code = [
        Path(__file__),
        Path(__file__).with_name("registry.py"),
        Path(__file__).with_name("schema_walker.py"),
    ]
    try:
        for f in [*code, *sorted(directory.glob("*.avsc"))]:
            st = f.stat()
            digest.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    except OSError:
        return None
    return Path(base) / "auditor" / f"registry-{digest.hexdigest()[:24]}.pickle"


def load_registry(directory: Path) -> Registry:
    """Parse every `*.avsc` under `directory` (uncached; `Registry.load` caches)."""
    files = sorted(directory.glob("*.avsc"))
    if not files:
        raise RegistryError(f"no .avsc schemas in {directory}")
    aspects: dict[str, AspectSpec] = {}
    keys: list[tuple[str, dict[str, Any]]] = []
    for path in files:
        found = _read_aspect(path)
        if found is None:
            continue
        name, annotation, schema = found
        if name in aspects:
            raise RegistryError(f"aspect {name!r} is defined twice (second time in {path.name})")
        aspects[name] = _build_aspect(name, annotation, schema)
        if "keyForEntity" in annotation:
            keys.append((name, annotation))
    entities = {spec.name: spec for spec in (_entity(key, ann, aspects) for key, ann in keys)}
    return Registry(entities, aspects, source=str(directory))


def _read_aspect(path: Path) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """(aspect name, @Aspect annotation, schema) of one .avsc file; None when it is no aspect."""
    try:
        schema = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise RegistryError(f"cannot read schema {path}: {exc}") from exc
    if not isinstance(schema, dict):
        return None
    annotation = schema.get("Aspect")
    if not isinstance(annotation, dict) or "name" not in annotation:
        return None
    return annotation["name"], annotation, schema


def _entity(key_name: str, annotation: dict[str, Any], aspects: dict[str, AspectSpec]) -> EntitySpec:
    """The entity a key aspect's annotation declares, with the aspects that have a schema."""
    entity_name = annotation["keyForEntity"]
    listed = [a for a in annotation.get("entityAspects", ()) if a != key_name]
    missing = [a for a in listed if a not in aspects]
    if missing:
        log.warning("entity %s lists aspects without a schema: %s", entity_name, missing)
    return EntitySpec(
        name=entity_name,
        key_aspect=key_name,
        aspects=(key_name, *(a for a in dict.fromkeys(listed) if a in aspects)),
        # the wheel's codegen writes "_unset_" where entity-registry.yml names no category
        category=None
        if annotation.get("entityCategory") in (None, "_unset_")
        else annotation.get("entityCategory"),
        key_fields=_key_fields(aspects[key_name].schema),
    )


def _build_aspect(name: str, annotation: dict[str, Any], schema: dict[str, Any]) -> AspectSpec:
    """One aspect's spec: its Searchable, SearchableRef and Relationship leaves."""
    walker = _Walker(schema)
    searchable = _searchable_specs(name, walker.leaves("Searchable"))
    refs = _searchable_ref_specs(name, walker.leaves("SearchableRef"))
    relationships = _relationship_specs(name, walker.leaves("Relationship"))
    return AspectSpec(
        name=name,
        timeseries=annotation.get("type") == "timeseries",
        searchable=searchable,
        relationships=relationships,
        schema=schema,
        searchable_refs=refs,
        key_for_entity=annotation.get("keyForEntity"),
    )


def _searchable_ref_specs(aspect: str, leaves: list[_Leaf]) -> tuple[SearchableRefSpec, ...]:
    return tuple(
        SearchableRefSpec(
            aspect=aspect,
            path=leaf.path,
            field_name=leaf.annotation.get("fieldName") or _default_field_name(leaf.path),
            field_type=leaf.annotation.get("fieldType") or "URN",
            ref_type=leaf.annotation.get("refType"),
            depth=leaf.annotation.get("depth"),
        )
        for leaf in leaves
        if isinstance(leaf.annotation, dict)
    )


def _relationship_specs(aspect: str, leaves: list[_Leaf]) -> tuple[RelationshipSpec, ...]:
    return tuple(
        RelationshipSpec(
            aspect=aspect,
            path=leaf.path,
            name=leaf.annotation["name"],
            entity_types=tuple(leaf.annotation.get("entityTypes", ())),
            is_lineage=bool(leaf.annotation.get("isLineage", False)),
            is_upstream=bool(leaf.annotation.get("isUpstream", True)),
            steps=leaf.steps,
        )
        for leaf in leaves
        if isinstance(leaf.annotation, dict)
        and "name" in leaf.annotation
        and leaf.value_type in ("string", "enum")
    )


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
        if not isinstance(leaf.annotation, dict):
            continue
        path_spec = "/" + "/".join(leaf.path)
        name = _unique_field_name(aspect, leaf, path_spec, seen)
        seen[name] = path_spec
        specs.append(_searchable_spec(aspect, leaf, name))
    return tuple(s for s in specs if "__" not in s.field_name)


def _unique_field_name(aspect: str, leaf: _Leaf, path_spec: str, seen: dict[str, str]) -> str:
    """The annotation's field name, or the path spelled with `_` when another path took it."""
    name: str = leaf.annotation.get("fieldName") or _default_field_name(leaf.path)
    if name in seen and seen[name] != path_spec:
        renamed = path_spec.replace("/", "_").replace("*", "")
        if renamed.startswith("_"):
            renamed = renamed[1:]
        if renamed in seen and seen[renamed] != path_spec:
            raise RegistryError(f"aspect {aspect}: several searchable fields named {name!r} ({path_spec})")
        name = renamed
    return name


def _searchable_spec(aspect: str, leaf: _Leaf, name: str) -> SearchableSpec:
    ann = leaf.annotation
    value_type = leaf.value_type
    modified_at = None
    if ann.get("includeSystemModifiedAt"):
        modified_at = ann.get("systemModifiedAtFieldName") or f"{name}SystemModifiedAt"
    return SearchableSpec(
        aspect=aspect,
        path=leaf.path,
        field_name=name,
        field_type=ann.get("fieldType") or _DEFAULT_FIELD_TYPE.get(value_type, "TEXT"),
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
