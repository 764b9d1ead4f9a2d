"""A URL as it may be shown: its password masked (light on purpose: a reader process imports it
without the settings' pydantic)."""

from __future__ import annotations


def redact_url(url: str) -> str:
    """`scheme://user:secret@host/db` -> `scheme://user:***@host/db`."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    creds, _, host = rest.rpartition("@")
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in creds else f"{scheme}://{user}@{host}"
