"""Before a replay produces: is the MAE consumer that would apply it there and moving?

A replay only writes to the change log; DataHub's MAE consumer writes the index. Produced into a
group with no member (or one that does not move), the MCLs wait unapplied while the repair
reports its work done. So the group is judged first, the way the scan judges it (Burrow's rules
over a short window: `auditor.core.consumer`), from one describe of the group and two samples
of its offsets (more only while a partition with a backlog has not moved yet, up to
MAX_WINDOW): cheap next to the replay's own wait.

On Kafka the members are the group's (DescribeGroups) and the commits its committed offsets,
read back by the broker's log of commits for a partition that looks stalled; on pgQueue the
member is the group's registration, fresh while its heartbeat is under a minute old, and the
commits its acked watermark (`auditor/platforms/datahub/backends/pgqueue.py`).
"""

from __future__ import annotations

from auditor.backends.protocols import Events
from auditor.core.model import PartitionHealth, PartitionPosition
from auditor.errors import ConsumerNotRunning
from auditor.platforms.datahub.scan.evidence import close_window, start_window

MIN_WINDOW = 1.0  # seconds between the two samples
MAX_WINDOW = 5.0  # a partition with a backlog that has not moved is sampled again up to this
OVERRIDE = "--allow-stopped-consumer"
HINT = (
    "repair with `auditor rebuild reindex` and the same selection (it writes the documents from "
    "the rows: no consumer needed), or start the MAE consumer and replay again; "
    f"{OVERRIDE} produces anyway, for a consumer you know will start soon (the replay then ends "
    "with exit 4 until it has applied everything)"
)


def refuse_unless_consuming(events: Events, topic: str, group: str) -> list[PartitionPosition]:
    """The group's positions on `topic` when a member consumes it; ConsumerNotRunning (exit 4)
    when it has no member, or a partition with a backlog did not move over the window."""
    view = close_window(events, start_window(events, [topic], group), [topic], MIN_WINDOW, {}, MAX_WINDOW)
    positions = sorted(view.positions.values(), key=lambda p: p.partition)
    if not positions:  # no such topic: the producer says so, with its own words
        return positions
    members = max(s.members for s in view.last)
    if members == 0:
        raise ConsumerNotRunning(
            f"replay refused: the MAE group {group} has no running member on {topic} "
            f"({_where(positions, health=False)}): nothing would apply the MCLs it produced",
            hint=HINT,
        )
    stalled = [p for p in positions if p.health == PartitionHealth.STALLED]
    if stalled:
        raise ConsumerNotRunning(
            f"replay refused: the MAE group {group} has {members} member(s) but does not move on "
            f"{topic} ({_where(stalled)}, unchanged over {stalled[0].window_seconds:.1f}s): "
            "it would not apply the MCLs it produced",
            hint=HINT,
        )
    return positions


def _where(positions: list[PartitionPosition], health: bool = True) -> str:
    """Each partition's state in a few words: `partition 0 stalled at offset 93, lag 1` (without
    `health`: `partition 0 at offset 93, lag 0`; a group with no member is `ok` where it lags 0)."""
    said = []
    for p in positions[:8]:
        at = f"at offset {p.committed}" if p.committed is not None else "never committed"
        state = f" {p.health.value}" if health else ""
        said.append(f"partition {p.partition}{state} {at}, lag {p.lag}")
    more = f", and {len(positions) - 8} more" if len(positions) > 8 else ""
    return "; ".join(said) + more
