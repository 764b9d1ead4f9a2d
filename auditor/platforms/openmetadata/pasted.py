"""An OpenMetadata entity as people paste it: its FQN, its id, or a URL of OpenMetadata's UI.

The UI's entity pages are `/<entity type>/<FQN>[/<tab>...]`, the FQN one URL-encoded path
segment (`/table/sample_data.ecommerce_db.shopify.%22dim.address%22/schema`). Imports nothing
heavy (the console reads what was pasted before any backend is touched).
"""

from __future__ import annotations

from urllib.parse import unquote

_QUOTES = "'\"`"

# the UI's route names that differ from the entity type (settings pages and the like are not entities)
_ROUTES = {"tags": "tag", "users": "user", "glossaryterm": "glossaryTerm"}


def unwrap(text: str) -> tuple[str, list[str]]:
    """`text` without surrounding whitespace and the quotes a user put around the whole of it.

    OpenMetadata quotes every part of a name that holds a dot (`db."sales.v2"."daily.revenue"`,
    `"lake.prod".raw.x`): a quote is the user's only where a pair of the same quote wraps the
    whole text and none other of it is inside (`'db."a.b"'` loses its `'`, `"a.b"."c.d"` keeps
    every `"`: its first and last quotes belong to two parts of the name)."""
    notes: list[str] = []
    asked = text.strip()
    if asked != text:
        notes.append("surrounding whitespace removed")
    while len(asked) >= 2 and asked[0] == asked[-1] and asked[0] in _QUOTES and asked.count(asked[0]) == 2:
        asked = asked[1:-1].strip()
        notes.append("quotes removed")
    return asked, notes


def om_pasted(text: str, known: tuple[str, ...]) -> tuple[str, tuple[str, ...], list[str]]:
    """(FQN or id, entity types to look in (empty: every one), what was done to read it)."""
    asked, notes = unwrap(text)
    if not asked.startswith(("http://", "https://")):
        return asked, (), notes
    path = asked.split("?", 1)[0].split("#", 1)[0].split("/")[3:]  # after scheme://host
    by_name = {name.lower(): name for name in known}
    for i, segment in enumerate(path[:-1]):
        name = _ROUTES.get(segment.lower(), by_name.get(segment.lower()))
        if name is not None and path[i + 1]:
            notes.append(f"taken from the URL (a {name})")
            return unquote(path[i + 1]), (name,), notes
    raise ValueError(f"no OpenMetadata entity page in the URL {asked!r} (expected /<type>/<FQN>)")
