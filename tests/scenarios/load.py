"""Live writes for scenarios: a GMS-like writer thread updating aspects that keep their fields."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from world import World

from sandbox.writer import GmsWriter

# entity types whose live aspects the load rewrites (each has globalTags, ownership, terms)
LOAD_TYPES = ("dataset", "chart", "dashboard", "dataJob")


@dataclass
class LoadStats:
    """What the load wrote."""

    writes: int = 0
    errors: int = 0
    urns: set[str] = field(default_factory=set)
    started: float = 0.0
    stopped: float = 0.0

    @property
    def rate(self) -> float:
        span = (self.stopped or time.monotonic()) - self.started
        return self.writes / span if span > 0 else 0.0


class LiveLoad:
    """Writes `rate` aspects per second to random live entities until stopped.

    The aspects (globalTags, ownership, glossaryTerms) are rewritten whole and keep all their
    fields, so a healthy consumer converges on every write: any `diverged` verdict is false.
    """

    def __init__(self, world: World, rate: float = 15.0, seed: int = 7, exclude: set[str] | None = None):
        self.world = world
        self.rate = rate
        self.rng = random.Random(seed)
        self.exclude = exclude or set()
        topics = dict(
            zip(("versioned_topic", "timeseries_topic"), world.topics, strict=False)
        )  # the world's own
        self.writer = GmsWriter(
            world.engine, world.endpoints, create_topics=False, ensure_schema=False, **topics
        )
        self.targets = [e.urn for t in LOAD_TYPES for e in world.of_type(t) if e.urn not in self.exclude]
        assert len(self.targets) >= 20, f"only {len(self.targets)} entities to write to"
        self.tags = [e.urn for e in world.of_type("tag")]
        self.users = [e.urn for e in world.of_type("corpuser")]
        self.terms = [e.urn for e in world.of_type("glossaryTerm")]
        self.stats = LoadStats()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _aspect(self) -> tuple[str, dict]:
        kind = self.rng.choice(("globalTags", "globalTags", "ownership", "glossaryTerms"))
        now = int(time.time() * 1000)
        stamp = {"time": now, "actor": "urn:li:corpuser:datahub"}
        if kind == "globalTags":
            picked = self.rng.sample(self.tags, k=min(len(self.tags), self.rng.randint(0, 3)))
            return kind, {"tags": [{"tag": t} for t in picked]}
        if kind == "ownership":
            picked = self.rng.sample(self.users, k=min(len(self.users), self.rng.randint(1, 2)))
            return kind, {
                "owners": [{"owner": u, "type": "TECHNICAL_OWNER"} for u in picked],
                "ownerTypes": {"urn:li:ownershipType:__system__none": sorted(picked)},
                "lastModified": stamp,
            }
        picked = self.rng.sample(self.terms, k=min(len(self.terms), self.rng.randint(0, 2)))
        return kind, {"terms": [{"urn": t} for t in picked], "auditStamp": stamp}

    def _run(self) -> None:
        interval = 1.0 / self.rate
        next_at = time.monotonic()
        while not self._stop.is_set():
            urn = self.rng.choice(self.targets)
            aspect, value = self._aspect()
            try:
                self.writer.write(urn, aspect, value)
                self.stats.writes += 1
                self.stats.urns.add(urn)
            except Exception:  # counted: a scenario asserts the load really ran
                self.stats.errors += 1
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)

    def __enter__(self) -> LiveLoad:
        self.stats.started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="live-load", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        self.stats.stopped = time.monotonic()
        self.writer.close()
