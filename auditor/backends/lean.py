"""How the tool's own processes (the command line, a reader process) start: lean and quick.

- The clients import asyncio transports the tool never uses, at every start: opensearch-py its
  asyncio client when aiohttp is installed (about 0.1 s), elasticsearch's transport httpx for its
  asyncio nodes (66 ms under `-X importtime` on a loaded machine, its command line loading click,
  rich's progress bars and pygments). Both fall back without them, and the schema registry is
  read with urllib.
- The garbage collector is off for the first seconds, which are the imports: every object they
  make lives as long as the process, and the collector's passes over them cost 0.05-0.13 s of a
  cold start (a triage's imports, four alternated runs: 0.62-0.70 s on, 0.53-0.57 s off). Then
  those objects are frozen (never traversed again: later collections are cheaper too) and the
  collector is on again. Reference counting frees everything without a cycle meanwhile; a cold
  triage ends before the collector would have run at all.
- Then the collector runs every 20,000 objects kept, not Python's 700: a scan makes and drops
  pages of containers (parsed rows, documents, keys) at a rate that had the collector pass over
  everything alive hundreds of times a scan, full passes included. Measured on the OpenMetadata
  bench (20,000 entities): 0.26-0.34 s of a 2.2-2.5 s scan in 565-573 collections, 4-5 of them
  full; at 20,000 about 7, none full, 0.06-0.07 s. What a cycle holds waits at most that many
  allocations longer.

Only a process the tool starts is affected, never a program using the Python API.
"""

from __future__ import annotations

import gc
import sys
import threading

UNUSED = ("aiohttp", "httpx")
COLLECTOR_AFTER = 2.0  # seconds: a cold start's imports are done well before
YOUNGEST = 20_000  # objects kept between two collections of the youngest generation (Python: 700)


def quick_start(collector_after: float = COLLECTOR_AFTER) -> None:
    """Mark the unused packages as absent (an import of one raises ImportError); the collector
    off until `collector_after` seconds from now."""
    for name in UNUSED:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
    if not gc.isenabled():  # someone chose to run without it: theirs to keep
        return
    gc.disable()
    timer = threading.Timer(collector_after, collector_on)
    timer.daemon = True
    timer.start()


def collector_on() -> None:
    """What was made so far frozen (the imports: it lives as long as the process), the collector
    on, its youngest generation collected every YOUNGEST objects kept."""
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNGEST, middle, oldest)
    gc.enable()
