"""Java's String behaviour the consumer relies on: UTF-16 length, toString, split, sanitizing."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any


def _utf16_len(text: str) -> int:
    """Java's `String.length()` (UTF-16 code units)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _java_double(value: float) -> str:
    """Java's `Double.toString`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    sign, digits, exponent = Decimal(repr(magnitude)).as_tuple()
    digit_text = "".join(map(str, digits)).rstrip("0") or "0"
    sci = len(digits) + int(exponent) - 1
    mantissa = digit_text[0] + "." + (digit_text[1:] or "0")
    return ("-" if value < 0 else "") + f"{mantissa}E{sci}"


def _java_str(value: Any) -> str:
    """`Object.toString()` of a Pegasus data value."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _java_double(value)
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ", ".join(_java_str(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_java_str(v)}" for k, v in value.items()) + "}"
    return str(value)


def _java_split(text: str, sep: str) -> list[str]:
    """Java's `String.split(sep)` for a literal one-character separator."""
    if sep not in text:
        return [text]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


_WS = " \t\n\x0b\f\r"
_B64_MARKDOWN = re.compile(
    r"!\[([^\]]*)\]\(<?data:image/[^;]+;base64,[A-Za-z0-9+/=" + _WS + r"]*>?\)",
    re.DOTALL | re.MULTILINE,
)
_B64_HTML = re.compile(
    r"<img[^>]+src=[\"']data:image/[^;]+;base64,[A-Za-z0-9+/=" + _WS + r"]*[\"'][^>]*>",
    re.IGNORECASE | re.DOTALL,
)
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))


def sanitize_rich_text(value: str) -> str:
    """SearchDocumentSanitizer.sanitizeForIndexing: drop base64 images from long texts."""
    if len(value) < 1000 or "data:image" not in value:
        return value
    out = _B64_MARKDOWN.sub(lambda m: f"[Image: {m.group(1)}]" if m.group(1) else "", value)
    out = _B64_HTML.sub("[Image]", out)
    return out.strip(_JAVA_TRIM)
