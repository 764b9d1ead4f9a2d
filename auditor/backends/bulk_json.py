"""A document as the bulk API's JSON, whatever it holds: orjson for speed, the standard library
for what orjson refuses, and an encoder without recursion for what is nested past Python's
recursion limit (an OpenMetadata row may be up to 1,024 levels deep): the cluster, not the
auditor, says whether it takes a document that deep."""

from __future__ import annotations

import json
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii
from typing import Any

import orjson


def dumps(value: Any) -> bytes:
    """Compact JSON in UTF-8. orjson (measured on 50,007 projected docs: 0.16 s against the
    stdlib's 0.35 s, the same JSON once parsed); the stdlib for what orjson refuses: an integer
    past 64 bits, a lone surrogate (escaped, so the body stays valid UTF-8), a key that is not
    a string, a value nested deeper than orjson's 254 levels; and for one deeper than Python's
    recursion limit (the stdlib's encoder recurses), the same text written without recursion:
    the cluster, not the auditor, says whether it takes a document that deep."""
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        pass
    try:
        return json.dumps(value, separators=(",", ":")).encode("ascii")
    except RecursionError:
        return _flat_json(value).encode("ascii")


def _key(key: Any) -> str:
    """A mapping key as the stdlib's encoder writes it."""
    if isinstance(key, str):
        return key
    if key is True or key is False or key is None:
        return json.dumps(key)
    if isinstance(key, int | float):
        return _scalar(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if value is None or value is True or value is False:
        return json.dumps(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return json.dumps(value)  # repr, NaN, Infinity as the stdlib writes them
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _flat_json(value: Any) -> str:
    """`json.dumps(value, separators=(",", ":"))` with an explicit stack instead of recursion:
    a value any number of levels deep."""
    out: list[str] = []
    stack: list[list[Any]] = []  # [iterator, closing bracket, first item?, the container's id]
    open_ids: set[int] = set()

    def start(v: Any) -> None:
        if isinstance(v, dict | list | tuple):
            if id(v) in open_ids:
                raise ValueError("Circular reference detected")
            open_ids.add(id(v))
            items: Iterator[Any] = iter(v.items()) if isinstance(v, dict) else iter(v)
            close = "}" if isinstance(v, dict) else "]"
            out.append("{" if close == "}" else "[")
            stack.append([items, close, True, id(v)])
        else:
            out.append(_scalar(v))

    start(value)
    while stack:
        frame = stack[-1]
        item: Any = next(frame[0], _END)
        if item is _END:
            out.append(frame[1])
            open_ids.discard(frame[3])
            stack.pop()
            continue
        if not frame[2]:
            out.append(",")
        frame[2] = False
        if frame[1] == "}":
            out.append(encode_basestring_ascii(_key(item[0])) + ":")
            start(item[1])
        else:
            start(item)
    return "".join(out)


_END = object()
