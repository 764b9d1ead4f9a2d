"""Whether an entity doc holds what the aspect rows predict: the field-by-field comparison."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditor.platforms.datahub.documents.emit import MAX_ARRAY_LENGTH, MAX_OBJECT_KEYS
from auditor.platforms.datahub.documents.expected import ExpectedDocument


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
