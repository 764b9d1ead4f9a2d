"""JSON compared by meaning, outside the database: one canonical text per value, and the paths that differ.

The canonical text is `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)` of
the parsed value, with every number by its exact decimal value: an integral value (`1000`,
`1e3`, `1.0`, `-0.0`) is the integer, any other value the float whose shortest form is that
very decimal (`0.1`, `1E-7` = `0.0000001`); a value no float holds exactly (more than 17
significant digits, or out of range) stays a Decimal and the document is written by a slower
exact writer. So PostgreSQL's `jsonb` text (keys reordered, spaces, `1e3` -> `1000`) and
MySQL/MariaDB's text as written compare equal exactly when they hold the same JSON value.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

MAX_INT_DIGITS = 400  # an integral value with more digits stays a Decimal (no giant ints)
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
INVALID = "\x00invalid-json:"  # prefix of a text that does not parse (compared as it is)


class Canonical:
    """Parses JSON text into values with canonical numbers; one instance per thread."""

    def __init__(self) -> None:
        self._inexact = False

    def _number(self, text: str) -> Any:
        d = Decimal(text)
        if d == d.to_integral_value() and d.adjusted() < MAX_INT_DIGITS:
            return int(d)
        f = float(text)
        if f == f and abs(f) != float("inf") and Decimal(repr(f)) == d:
            return f
        self._inexact = True
        return _normal(d)

    def parse(self, text: str) -> tuple[Any, bool]:
        """The value and whether it holds a number only a Decimal keeps (raises ValueError)."""
        self._inexact = False
        # an integer literal is exact as a Python int; only fractions and exponents need a look
        value = json.loads(text, parse_float=self._number)
        return value, self._inexact

    def text(self, raw: str | None) -> tuple[str | None, Any]:
        """The canonical text of a JSON text (None stays None) and the parsed value."""
        if raw is None:
            return None, None
        try:
            value, inexact = self.parse(raw)
        except (ValueError, InvalidOperation, RecursionError):
            return INVALID + raw, _Unparsed(raw)
        if inexact:
            return _write(value), value
        return _ENCODER.encode(value), value


class _Unparsed(str):
    """A text that is not JSON (kept so a path diff can say the whole document differs)."""


def _normal(d: Decimal) -> Decimal:
    """A Decimal without trailing zeros, independent of any context's precision."""
    sign, digits, exp = d.as_tuple()
    ds = list(digits)
    e = int(exp)
    while len(ds) > 1 and ds[-1] == 0:
        ds.pop()
        e += 1
    return Decimal((sign, tuple(ds), e))


def _write(value: Any) -> str:
    """The canonical text, written by hand (a document with a Decimal)."""
    if isinstance(value, dict):
        items = sorted(value.items())
        return "{" + ",".join(f"{_dumps(k)}:{_write(v)}" for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_write(v) for v in value) + "]"
    if isinstance(value, Decimal):
        return str(value)
    return _dumps(value)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values (true is not 1, 1 is not "1")."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float | Decimal) and isinstance(b, int | float | Decimal):
        return Decimal(repr(a) if isinstance(a, float) else a) == Decimal(
            repr(b) if isinstance(b, float) else b
        )
    return type(a) is type(b) and a == b


def _key_path(path: str, key: str) -> str:
    if key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


MISSING: Any = object()  # a key one side does not have


def changed_paths(a: Any, b: Any, limit: int = 50) -> list[tuple[str, Any, Any]]:
    """Where two parsed values differ, as (JSONPath-like path, source value, target value): a key
    present on one side only (MISSING on the other), a scalar changed, an array whose length
    changed (the array itself). At most `limit` of them, in key order."""
    out: list[tuple[str, Any, Any]] = []
    _walk(a, b, "$", out, limit)
    return out


def _walk(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            _walk(a.get(key, MISSING), b.get(key, MISSING), _key_path(path, key), out, limit)
            if len(out) >= limit:
                return
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _walk(x, y, f"{path}[{i}]", out, limit)
        return
    if a is MISSING or b is MISSING or isinstance(a, dict | list) or isinstance(b, dict | list):
        if not (a is MISSING and b is MISSING):
            if a is MISSING or b is MISSING or type(a) is not type(b) or a != b:
                out.append((path, a, b))
        return
    if not _same(a, b):
        out.append((path, a, b))


def shown(value: Any) -> str | None:
    """A value at a path as evidence shows it: its canonical JSON text (None when absent)."""
    if value is MISSING:
        return None
    return _write(value)
