"""Decoding stored JSON that may be hostile: too deep for a recursive decoder, or not JSON.

orjson refuses a document nested deeper than 1024 levels with a ValueError; the standard
library's decoder (the fallback for what orjson is stricter about, such as a lone surrogate)
recurses and raises RecursionError past Python's recursion limit. Both become a ValueError
here, so a caller that treats a ValueError as an unreadable row (reported `invalid`, the scan
goes on) is safe from either. OpenMetadata's own reader (Jackson) refuses more than 1000
levels, so such a row is one OpenMetadata cannot serve either.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

DEPTH_LIMIT = 1024  # orjson's


class TooDeep(ValueError):
    """The JSON nests deeper than a decoder can follow."""


def loads(text: str | bytes | bytearray) -> Any:
    """The decoded JSON; ValueError (TooDeep for a too-deep one) when it cannot be read."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc) or "recursion" in str(exc):
            raise TooDeep(f"the JSON nests deeper than {DEPTH_LIMIT} levels") from None
        first = exc
    try:  # orjson is stricter than the standard library (a lone surrogate): its reading
        return json.loads(text)
    except RecursionError:
        raise TooDeep(f"the JSON nests deeper than {DEPTH_LIMIT} levels") from None
    except ValueError:
        raise ValueError(str(first)) from None


def load_object(raw: Any) -> dict[str, Any] | None:
    """A JSON object from text, bytes or an already decoded value; None when it is not one."""
    if isinstance(raw, bytes | bytearray):
        raw = raw.decode("utf-8", "replace")
    if isinstance(raw, str):
        try:
            raw = loads(raw)
        except ValueError:
            return None
    return raw if isinstance(raw, dict) else None
