"""What a failed search request means: the index is not there, the request is worth sending again
(429/5xx, a timeout, a dropped connection; never a bad certificate), and the whole text of its
causes for the message. The readers and the bulk writer retry on these rules."""

from __future__ import annotations

from typing import Any

RETRIES = 5  # a read request is sent at most this many more times (at most 15.5 s of backoff in all)
BACKOFF_CAP = 8.0
RETRY_STATUSES = frozenset({429, 502, 503, 504})
# the clients' exceptions for a timeout or a connection that failed or dropped (no HTTP status)
RETRY_ERRORS = frozenset({"ConnectionError", "ConnectionTimeout"})


def status_of(exc: Exception) -> Any:
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(getattr(exc, "meta", None), "status", None)
    return status if isinstance(status, int) else type(exc).__name__


def not_found(exc: Exception) -> bool:
    """The cluster answered that the index (or alias, or pattern) asked for does not exist."""
    return status_of(exc) == 404 or "index_not_found" in str(exc)


def retryable(exc: Exception) -> bool:
    """A request worth sending again: 429/502/503/504, a timeout, a dropped connection."""
    status = status_of(exc)
    if isinstance(status, int):
        return status in RETRY_STATUSES
    names = {c.__name__ for c in type(exc).__mro__}
    return "SSLError" not in names and bool(names & RETRY_ERRORS)  # a bad certificate stays bad


def chain_text(exc: BaseException) -> str:
    """An error's text with its causes' (a client's "TLS error" wraps the SSL alert that says
    which: urllib3's, then ssl's), a few levels deep."""
    parts: list[str] = []
    todo: list[Any] = [exc]
    while todo and len(parts) < 8:
        e = todo.pop(0)
        if e is None or not isinstance(e, BaseException):
            continue
        parts.append(f"{getattr(e, 'reason', '')} {e}")
        todo += [e.__cause__, e.__context__, *(getattr(e, "errors", ()) or ())]
    return " ".join(parts)
