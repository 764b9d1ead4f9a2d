"""Which offsets of a partition are settled: what the watch may commit, and what a restart skips.

The committed offset is the lowest unsettled event's (or the next to read): nothing below it is
re-read. Events above it already settled are listed in the commit's metadata (Kafka keeps a
string per committed offset) as `next=<offset>;open=<ranges>`: on a restart every offset below
`next` that is not open was counted before and is skipped, so no event is counted twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_METADATA = 3500  # brokers keep 4096 bytes (offset.metadata.max.bytes) by default


def ranges(offsets: list[int]) -> str:
    """Sorted offsets as `a-b,c`: a partition's open events are mostly consecutive."""
    out: list[str] = []
    start = prev = None
    for o in offsets:
        if prev is not None and o == prev + 1:
            prev = o
            continue
        if start is not None:
            out.append(f"{start}-{prev}" if prev != start else str(start))
        start = prev = o
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else str(start))
    return ",".join(out)


def parse_ranges(text: str) -> set[int]:
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


@dataclass
class Resume:
    """What a committed offset's metadata says about the offsets above it."""

    next_offset: int  # below this, only the open offsets are still to be counted
    open: set[int]

    @classmethod
    def parse(cls, committed: int, metadata: str | None) -> Resume:
        parts = dict(p.split("=", 1) for p in (metadata or "").split(";") if "=" in p)
        try:
            return cls(int(parts.get("next", committed)), parse_ranges(parts.get("open", "")))
        except ValueError:  # not ours (another tool's commit): count from the offset on
            return cls(committed, set())

    def skip(self, offset: int) -> bool:
        """Was this offset settled before the restart?"""
        return offset < self.next_offset and offset not in self.open


@dataclass
class PartitionLedger:
    """The open (unsettled) offsets of one partition and how far it was read."""

    next_offset: int | None = None  # the offset after the last one read
    open: set[int] = field(default_factory=set)

    def read(self, offset: int, opened: bool) -> None:
        self.next_offset = offset + 1 if self.next_offset is None else max(self.next_offset, offset + 1)
        if opened:
            self.open.add(offset)

    def settle(self, offset: int) -> None:
        self.open.discard(offset)

    def commit(self) -> tuple[int, str] | None:
        """(offset to commit, its metadata); None before anything was read."""
        if self.next_offset is None:
            return None
        if not self.open:
            return self.next_offset, f"next={self.next_offset}"
        opened = sorted(self.open)
        text = ranges(opened)
        upto = self.next_offset
        while len(text) > MAX_METADATA:  # too scattered to list: list fewer, re-read the rest
            opened = opened[: len(opened) // 2]
            upto = opened[-1] + 1
            text = ranges(opened)
        return opened[0], f"next={upto};open={text}"
