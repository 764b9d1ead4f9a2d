"""The events waiting to show in the index: bounded (a cap; what does not fit is 'not checked')."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from auditor.platforms.datahub.watch.reflect import WatchedEvent


@dataclass(frozen=True)
class Older:
    """An event a newer one on the same (urn, aspect) replaced: settled when the newer shows."""

    topic: str
    partition: int
    offset: int
    produced_at: float
    counted: bool


class PendingEvents:
    """The newest event per (urn, aspect), with the older ones it replaced; at most `cap` events.

    A newer MCL for the same aspect overwrites the older one's fields in the index, so the
    older is reflected (by something at least as new) when the newer is: it settles then, with
    its own latency.
    """

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError("the pending cap must be at least 1")
        self.cap = cap
        self._events: dict[tuple[str, str], tuple[WatchedEvent, list[Older]]] = {}
        self.size = 0  # events held, replaced ones included

    def __len__(self) -> int:
        return self.size

    def add(self, event: WatchedEvent) -> bool:
        """Hold the event; False when the cap is reached (the caller counts it 'not checked')."""
        if self.size >= self.cap:
            return False
        held = self._events.get(event.key)
        older: list[Older] = []
        if held is not None:
            previous, older = held
            older.append(
                Older(
                    previous.topic,
                    previous.partition,
                    previous.offset,
                    previous.produced_at,
                    previous.counted,
                )
            )
        self._events[event.key] = (event, older)
        self.size += 1
        return True

    def items(self) -> Iterator[tuple[WatchedEvent, list[Older]]]:
        yield from list(self._events.values())

    def remove(self, event: WatchedEvent) -> list[Older]:
        """Drop the event (and the older ones it carries); returns those older ones."""
        _, older = self._events.pop(event.key)
        self.size -= 1 + len(older)
        return older
