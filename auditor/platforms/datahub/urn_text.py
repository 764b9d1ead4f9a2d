"""A urn as people paste it (quoted, URL-encoded, inside a DataHub URL), and its near variants.

Imports nothing heavy: the CLI reads and refuses a urn before it loads any backend.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote, unquote_plus

from auditor.platforms.datahub.urns import UrnError, entity_type, parse_urn

_QUOTES = "'\"`"
_ENCODED = re.compile(r"urn%3a", re.IGNORECASE)
_SPACE_AROUND_COMMA = re.compile(r"\s*,\s*")


def normalize(text: str) -> tuple[str, list[str]]:
    """The urn in `text`, and what was done to read it; UrnError with a clear message if none."""
    notes: list[str] = []
    urn = text.strip()
    if urn != text:
        notes.append("surrounding whitespace removed")
    while len(urn) >= 2 and urn[0] == urn[-1] and urn[0] in _QUOTES:
        urn = urn[1:-1].strip()
        notes.append("quotes removed")
    if urn.startswith(("http://", "https://")):
        found = _from_url(urn)
        if found is None:
            raise UrnError(f"no urn in the URL {urn!r}")
        urn = found
        notes.append("taken from the URL")
    if _ENCODED.match(urn):
        urn = unquote_plus(urn)
        notes.append("URL-decoded")
    if not urn:
        raise UrnError("the urn is empty")
    parse_urn(urn)
    entity_type(urn)
    return urn, notes


def _from_url(url: str) -> str | None:
    """`https://datahub/dataset/urn%3Ali%3Adataset%3A(...)/Schema?x=y` -> the urn."""
    path = url.split("?", 1)[0].split("#", 1)[0]
    for segment in path.split("/"):
        decoded = unquote(segment)
        if decoded.startswith("urn:"):
            return decoded
    return None


def variants(urn: str) -> dict[str, str]:
    """Urns that differ from `urn` the way a pasted or hand-written one often does -> how."""
    out: dict[str, str] = {}

    def add(candidate: str, how: str) -> None:
        if candidate != urn and candidate not in out:
            out[candidate] = how

    add(_SPACE_AROUND_COMMA.sub(",", urn).strip(), "whitespace")
    add(re.sub(r"\s+", "", urn), "whitespace")
    if "%" in urn:
        add(unquote(urn), "URL-decoded")
        add(unquote_plus(urn), "URL-decoded")
    prefix_end = urn.find(":", 7) + 1
    if prefix_end > 0:
        key = urn[prefix_end:]
        add(urn[:prefix_end] + quote(key, safe="(),:"), "URL-encoded")
        add(urn[:prefix_end] + key.replace("%20", " ").replace("+", " "), "URL-decoded")
    add(urn.lower(), "case")
    return out


def dataset_name(urn: str) -> str | None:
    """The name part of a dataset urn (`db.table` of `(urn:li:dataPlatform:hive,db.table,PROD)`)."""
    try:
        kind, parts = parse_urn(urn)
    except UrnError:
        return None
    return parts[1] if kind == "dataset" and len(parts) == 3 else None
