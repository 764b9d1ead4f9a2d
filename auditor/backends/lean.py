"""What the tool's own processes (the command line, a reader process) keep out of their imports.

The clients import asyncio transports the tool never uses, at every start: opensearch-py its
asyncio client when aiohttp is installed (about 0.1 s), elasticsearch's transport httpx for its
asyncio nodes (~0.05 s, and httpx its own command line: click, rich's progress bars, pygments).
Both fall back without them, and the schema registry is read with urllib. Only a process the
tool starts is affected, never a program using the Python API.
"""

from __future__ import annotations

import sys

UNUSED = ("aiohttp", "httpx")


def keep_out_unused() -> None:
    """Mark the unused packages as absent (an import of one raises ImportError)."""
    for name in UNUSED:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
