"""Work started now in a thread, its result (or its exception) taken later.

A repair waits on three servers in turn: the database for the next rows, the broker for
acknowledgements, the search cluster for a bulk. Each wait releases the GIL, so starting the
next read (or the current bulk) in a thread lets this process build the next batch meanwhile.
The caller takes the result in order and only then moves its checkpoint: what was read ahead
and not yet taken is simply read again by a resumed run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Ahead(Generic[T]):
    """`fn(*args)` running in a daemon thread (a run that fails elsewhere does not wait for it)."""

    def __init__(self, fn: Callable[..., T], *args: object, name: str = "auditor-ahead") -> None:
        self._result: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), name=name, daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[..., T], args: tuple[object, ...]) -> None:
        try:
            self._result = fn(*args)
        except BaseException as exc:  # handed to the taker, in its thread
            self._error = exc

    def result(self) -> T:
        """Wait for it; its exception is raised here, in the caller's thread."""
        self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return self._result  # type: ignore[return-value]
