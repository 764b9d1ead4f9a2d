"""The canonical JSON text a cross-engine drill compares: equal exactly when the JSON values are."""

from __future__ import annotations

import pytest

from auditor.drill.canonical_json import MISSING, Canonical, changed_paths

PG = '{"a": "é☃ x", "b": [1, {"a": 1000, "z": 1.0, "aa": 0.1}], "c": 0.0000001, "ab": 0.0}'
MY = '{"b":[1,{"z":1.0,"a":1e3,"aa":1E-1}],"a":"\\u00e9\\u2603 x","ab":-0.0,"c":1E-7}'


def canon(text: str) -> str | None:
    return Canonical().text(text)[0]


def test_jsonb_text_and_text_as_written_are_equal() -> None:
    assert canon(PG) == canon(MY) == '{"a":"é☃ x","ab":0,"b":[1,{"a":1000,"aa":0.1,"z":1}],"c":1e-07}'


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("0.1", "0.10000000000000001"),  # the same float, not the same decimal
        ("12345678901234567890123", "12345678901234567890124"),
        ("true", "1"),
        ('"1"', "1"),
        ("[1, 2]", "[2, 1]"),
        ('{"a": null}', "{}"),
        ("1e400", "1e401"),
    ],
)
def test_different_values_differ(a: str, b: str) -> None:
    assert canon(a) != canon(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("0.12345678901234567890123", "0.123456789012345678901230"),  # past a float, still exact
        ("1e400", "10e399"),
        ("100000000000000000000000000001", "1.00000000000000000000000000001E29"),
        ('{"a": 1, "a": 2}', '{"a": 2}'),  # the last duplicate wins, as jsonb keeps it
    ],
)
def test_same_values_are_equal(a: str, b: str) -> None:
    assert canon(a) == canon(b)


def test_not_json_is_compared_as_text() -> None:
    assert canon("{oops") != canon("{oops ") and canon("{oops") == canon("{oops")
    assert canon(None) is None


def test_changed_paths_name_every_difference_and_only_those() -> None:
    c = Canonical()
    a = c.parse('{"a": 1, "b": {"c": [1, 2], "d": true, "e.f": 0.1}, "e": "x", "g": [1]}')[0]
    b = c.parse('{"a": 1.0, "b": {"c": [1, 3], "d": 1, "e.f": 1E-1}, "f": "x", "g": [1, 2]}')[0]
    assert changed_paths(a, b) == [
        ("$.b.c[1]", 2, 3),
        ("$.b.d", True, 1),
        ("$.e", "x", MISSING),
        ("$.f", MISSING, "x"),
        ("$.g", [1], [1, 2]),
    ]
