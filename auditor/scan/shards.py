"""Shard plans: N urn ranges of about equal rows, computed once, read by every shard job.

A shard of `--shard i/N` alone is every urn whose crc32 is i modulo N: right, but each job reads
the whole table and every index and keeps its share. With a plan (`auditor scan --plan-shards N
-o shards.json`, then `--shard i/N --shard-plan shards.json` in each job) shard i is the urn range
[bounds[i-1], bounds[i]) by code point, pushed down to the database (`urn >= a AND urn < b`) and
to the indices (a `range` on the urn keyword): N jobs together read the table and the indices
about once. The plan is a file, not a sample each job takes, so that jobs started at different
moments of a catalog being written agree on the bounds (a gap would be urns no job scans).

A bound is a urn with no control character that does not end in a space: PAD SPACE collations
(MySQL/MariaDB) order such urns as code points do, so the database's range and the index's agree
around it (the database reads from one character before the lower bound; the join keeps exactly
the range).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from auditor.errors import ConfigError

KIND = "auditor-shard-plan"
VERSION = 1


def usable_bound(urn: str) -> bool:
    """No control character, no trailing space (spaces inside are fine: PAD SPACE compares a
    shorter string as if padded with spaces, which only reorders what follows a common prefix
    with a control character, or nothing but spaces)."""
    return bool(urn) and not urn.endswith(" ") and all(ch >= " " for ch in urn)


@dataclass
class ShardPlan:
    """N - 1 increasing bounds; shard i is [bounds[i-1], bounds[i]) (open at both ends)."""

    shards: int
    bounds: list[str]
    rows: list[int]  # version-0 rows per shard when the plan was made
    entities: list[int]
    store: str = ""
    entity_types: list[str] = field(default_factory=list)
    made_at: str = ""
    kind: str = KIND
    version: int = VERSION

    def urn_range(self, i: int) -> tuple[str | None, str | None]:
        lo = self.bounds[i - 1] if i > 0 else None
        hi = self.bounds[i] if i < len(self.bounds) else None
        return lo, hi

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def load(cls, path: Path) -> ShardPlan:
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"shard plan {path} cannot be read: {exc}") from None
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise ConfigError(f"{path} is not a shard plan (made by `auditor scan --plan-shards N`)")
        if data.get("version") != VERSION:
            raise ConfigError(
                f"shard plan {path}: version {data.get('version')!r}, this auditor reads {VERSION}"
            )
        try:
            plan = cls(**data)
        except TypeError as exc:
            raise ConfigError(f"shard plan {path} is malformed: {exc}") from None
        bounds = plan.bounds
        if (
            len(bounds) != plan.shards - 1
            or not all(isinstance(b, str) and usable_bound(b) for b in bounds)
            or any(a >= b for a, b in zip(bounds, bounds[1:], strict=False))
        ):
            raise ConfigError(f"shard plan {path}: its bounds are not {plan.shards - 1} increasing urns")
        return plan


def plan_bounds(
    weights: Iterable[tuple[str, int]], n: int, total: int
) -> tuple[list[str], list[int], list[int]]:
    """Bounds splitting `weights` ((urn, rows) in urn order, `total` rows) into n shards of about
    total/n rows, each bound the first usable urn at or after its share; and the rows and
    entities each shard got. Urns that are not usable bounds (PAD SPACE orders them apart) are
    counted where they come but never start a shard."""
    if n < 1:
        raise ConfigError("--plan-shards N: need N >= 1")
    bounds: list[str] = []
    rows, entities = [0] * n, [0] * n
    shard, done = 0, 0
    for urn, weight in weights:
        # the next shard starts here once this one holds its share (and the urn can be a bound);
        # a share crossed by one heavy urn moves the next bound to the next usable urn
        full = shard < n - 1 and done >= total * (shard + 1) / n
        if full and usable_bound(urn) and (not bounds or urn > bounds[-1]):
            bounds.append(urn)
            shard += 1
        rows[shard] += weight
        entities[shard] += 1
        done += weight
    return bounds, rows, entities


def make_plan(store: Any, n: int, entity_types: tuple[str, ...] = ()) -> ShardPlan:
    """One pass over the table's urns (two: a count first) to a plan of n shards."""
    from auditor.core.model import Selection

    total = store.count_rows(Selection(entity_types=entity_types))
    bounds, rows, entities = plan_bounds(store.urn_weights(entity_types), n, total)
    # fewer usable urns than shards: the last shards stay empty (their range starts past the end)
    while len(bounds) < n - 1:
        bounds.append((bounds[-1] if bounds else "urn:") + "\U0010ffff")
    return ShardPlan(
        shards=n,
        bounds=bounds,
        rows=rows,
        entities=entities,
        store=store.description,
        entity_types=list(entity_types),
        made_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
