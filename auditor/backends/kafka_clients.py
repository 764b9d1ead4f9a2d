"""Every Kafka client a process of the tool opens is closed before the interpreter finalizes;
and how a client's error reads (`error_of`).

librdkafka's destroy serves what the client still has pending: log lines for the Python logger,
the error callback, an admin request's future. Run while the interpreter is being torn down
(a client left to the garbage collector's last pass, or to a module's teardown), those calls
land in a half-finalized interpreter and can crash the process after its work is done, its
outcome lost in stdout's buffer (confluent-kafka-python issues 358 and 265). Each owner of
clients (the event log, the MCL producer, the watch's tail) registers here when it opens them;
whatever is still open when the process exits is closed by an `atexit` hook, which
runs before the finalization. An owner closed by its user, or collected, drops out by itself
(the set holds weak references).
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from typing import Protocol


class Closable(Protocol):
    def close(self) -> None: ...


_open: weakref.WeakSet[Closable] = weakref.WeakSet()
_lock = threading.Lock()
_hooked = False


def track(owner: Closable) -> None:
    """`owner.close()` (idempotent) runs at the latest when the process exits."""
    global _hooked
    with _lock:
        if not _hooked:
            atexit.register(close_all)
            _hooked = True
        _open.add(owner)


def untrack(owner: Closable) -> None:
    with _lock:
        _open.discard(owner)


def close_all() -> int:
    """Close every client still open; the number closed. (The command line flushes what it
    printed before this runs: a client that crashes in its destroy cannot take it along.)"""
    with _lock:
        owners = list(_open)
        _open.clear()
    for owner in owners:
        try:
            owner.close()
        except Exception:  # the broker gone, say: closing is all that is left to do
            logging.getLogger("auditor.kafka").debug("closing %r at exit failed", owner, exc_info=True)
    return len(owners)


def error_of(exc: BaseException) -> tuple[int | None, str]:
    """The code and the text of a KafkaException's KafkaError (None and the text for another)."""
    error = exc.args[0] if exc.args else exc
    code = error.code() if hasattr(error, "code") else None
    return code, error.str() if hasattr(error, "str") else str(error)
