"""OpenMetadata's fully qualified names: quoting, splitting, `fqnHash` and `fqnParts`.

Follows openmetadata-service FullyQualifiedName.java (build, split, quoteName, buildHash,
getAllParts) and EntityUtil.hash (MD5 hex of each quoted part).
"""

from __future__ import annotations

import hashlib

SEPARATOR = "."


def quote_name(name: str) -> str:
    """A name as it appears in an FQN: quoted when it holds a dot, unquoted otherwise."""
    if len(name) >= 2 and name.startswith('"') and name.endswith('"') and '"' not in name[1:-1]:
        inner = name[1:-1]
        return name if SEPARATOR in inner else inner
    if '"' in name:
        raise ValueError(f"invalid name {name!r}: a double quote inside an unquoted name")
    return f'"{name}"' if SEPARATOR in name else name


def build(*names: str) -> str:
    """The FQN of the given names, each quoted as needed."""
    return SEPARATOR.join(quote_name(n) for n in names)


def split(fqn: str) -> list[str]:
    """The parts of an FQN, quoted parts kept with their quotes (as OM's FQN grammar does)."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in fqn:
        if ch == '"':
            quoted = not quoted
            current.append(ch)
        elif ch == SEPARATOR and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if quoted:
        raise ValueError(f"invalid FQN {fqn!r}: unbalanced quote")
    parts.append("".join(current))
    if any(p == "" for p in parts):
        raise ValueError(f"invalid FQN {fqn!r}: empty part")
    return parts


def md5_hex(text: str) -> str:
    """EntityUtil.hash: the MD5 of the UTF-8 text, lowercase hex."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def fqn_hash(fqn: str) -> str:
    """FullyQualifiedName.buildHash: each part hashed, joined with dots (`nameHash` for one part)."""
    if not fqn:
        return fqn
    return SEPARATOR.join(md5_hex(quote_name(p)) for p in split(fqn))


def all_parts(fqn: str) -> set[str]:
    """FullyQualifiedName.getAllParts: every contiguous run of parts, joined with dots."""
    parts = split(fqn)
    return {
        SEPARATOR.join(parts[start:end])
        for start in range(len(parts))
        for end in range(start + 1, len(parts) + 1)
    }


def fqn_parts(fqn: str) -> list[str]:
    """SearchIndex.getFQNParts: all parts except the entity's own name (sorted; OM's is a set)."""
    name = split(fqn)[-1]
    return sorted(p for p in all_parts(fqn) if p != name)
