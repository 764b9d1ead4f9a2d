"""Streaming merge-join of urn-ordered streams: O(1) memory, byte-order keys, order enforced."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any, TypeVar

from auditor.errors import AuditorError
from auditor.exit_codes import ExitCode

T = TypeVar("T")
_DONE = object()


class JoinOrderError(AuditorError):
    """A stream was not sorted as the join needs: going on would report false differences."""

    exit_code = ExitCode.INCOMPLETE  # the scan could not complete (it is not a divergence)


URN_ORDER = (
    'check the collation (binary on MySQL, COLLATE "C" on PostgreSQL) and that `urn` is a keyword field'
)


def _out_of_order(name: str, key: str, last: str, what: str = "urn", hint: str = URN_ORDER) -> JoinOrderError:
    return JoinOrderError(
        f"{name} is not in {what} byte order ({key!r} after {last!r}): the scan stopped", hint=hint
    )


def ordered(
    stream: Iterable[T], key: Callable[[T], str], name: str, *, what: str = "urn", hint: str = URN_ORDER
) -> Iterator[T]:
    """Pass items through, failing loudly if their keys ever go backwards (`what` the key is and
    `hint`, what to check, as the platform names them)."""
    last: str | None = None
    for item in stream:
        k = key(item)
        if last is not None and k < last:
            raise _out_of_order(name, k, last, what, hint)
        last = k
        yield item


def ordered_groups(pairs: Iterable[tuple[str, T]], name: str) -> Iterator[tuple[str, list[T]]]:
    """Consecutive `(key, item)` pairs with the same key as `(key, items)`, in one pass, failing
    loudly if the keys ever go backwards."""
    current: str | None = None
    items: list[T] = []
    for k, item in pairs:
        if k != current:
            if current is not None:
                if k < current:
                    raise _out_of_order(name, k, current)
                yield current, items
            current, items = k, []
        items.append(item)
    if current is not None:
        yield current, items


def merge_join(streams: dict[str, Iterator[tuple[str, Any]]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Full outer join of key-sorted `(key, value)` streams: `(key, {stream name: value})`.

    Each stream must be sorted by key with unique keys (group first with `ordered_groups`).
    """
    heads: dict[str, tuple[str, Any]] = {}
    for name, stream in streams.items():
        first = next(stream, None)
        if first is not None:
            heads[name] = first
    while heads:
        key = min(k for k, _ in heads.values())
        row: dict[str, Any] = {}
        for name in list(heads):
            k, value = heads[name]
            if k == key:
                row[name] = value
                following = next(streams[name], None)
                if following is None:
                    del heads[name]
                else:
                    heads[name] = following
        yield key, row


L = TypeVar("L")
R = TypeVar("R")


def outer_pairs(
    left: Iterable[L], right: Iterable[R], key_left: Callable[[L], str], key_right: Callable[[R], str]
) -> Iterator[tuple[L | None, R | None]]:
    """Full outer join of two key-ordered streams (check their order with `ordered`): the left's
    keys unique, any number of right items per key, each paired with its left item (a document
    under two indices meets its row twice). Lean: two streams, no grouping (the scan's hot loop)."""
    lefts, rights = iter(left), iter(right)
    a, b = next(lefts, None), next(rights, None)
    paired = False  # the current left item met a right one already
    while a is not None or b is not None:
        if b is None or (a is not None and key_left(a) < key_right(b)):
            if not paired:
                yield a, None
            a, paired = next(lefts, None), False
        elif a is None or key_right(b) < key_left(a):
            yield None, b
            b = next(rights, None)
        else:
            yield a, b
            paired = True
            b = next(rights, None)


def prefetch(stream: Iterable[T], depth: int = 8, chunk: int = 1000) -> Generator[T, None, None]:
    """Run `stream` in a thread so its I/O overlaps the consumer's work; errors re-raised here."""
    buffer: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def pump() -> None:
        try:
            batch: list[T] = []
            for item in stream:
                batch.append(item)
                if len(batch) >= chunk:
                    if stop.is_set():
                        return
                    buffer.put(batch)
                    batch = []
            if batch:
                buffer.put(batch)
            buffer.put(_DONE)
        except BaseException as exc:  # handed over to the consumer
            buffer.put(exc)
        finally:  # a generator holding a cursor is closed by the thread that runs it, at once
            close = getattr(stream, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=pump, daemon=True, name="prefetch")
    thread.start()
    try:
        while True:
            item = buffer.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield from item
    finally:
        stop.set()
        while thread.is_alive():
            try:
                buffer.get_nowait()
            except queue.Empty:
                thread.join(0.05)
