"""Index streams read in child processes: decoding where the cores are.

A full scan waits on the search engine for most of a page's time and then spends about as long
in Python on the page it got (measured on the 100k catalog: 63 s, of which 31 s of CPU). Threads
cannot overlap the two without fighting the join for the interpreter lock (the same scan took 51 s
of CPU with them); a child process can: it asks for the next page, waits, parses the JSON and
shapes each hit, while the parent joins and checks the page before. What crosses the pipe is the
shaped record the stream yields anyway (`(_id, _source)`, or the sort keys alone for the edges),
a page at a time; the pipe's own buffer is the bound (the child blocks on a full pipe), so memory
stays flat.

The child opens its own client from the parent's description of it (`SearchIndex.spec()`: the
URL, kind, engine version, credentials; an AWS signer is rebuilt there from the same chain) and
reads one or more streams in order, one after the other. An error in the child (a refusal, a
cluster gone) is raised in the parent as the same kind of error, with its words; a parent that
stops reading early closes the pipe, and the child, failing to send, closes its point in time and
exits.
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from auditor.errors import AuditorError, BackendUnavailable

log = logging.getLogger(__name__)

# hits a message carries: a page of the stream (the stream's own page size)
BATCH = 2000
# each finished reader's peak RSS in MiB, in the order they finished (for the benchmark)
PEAK_RSS_MIB: list[float] = []


@dataclass(frozen=True)
class StreamSpec:
    """One sorted stream, as `SearchIndex.stream` takes it."""

    index: str
    sort: tuple[str, ...]
    query: dict[str, Any] | None = None
    source: bool | tuple[str, ...] = True
    from_sort: bool = False
    page: int = BATCH


def reader_processes(setting: int | None) -> int:
    """How many streams get a process of their own: the setting, or by default the cores (none on
    one core, where a child only takes turns with the parent)."""
    if setting is not None:
        return max(0, setting)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores if cores > 1 else 0


def _serve(out: BinaryIO, spec: dict[str, Any], streams: list[StreamSpec]) -> None:
    """The child: read each stream in turn, writing ("page", n, items) then ("end", retried)."""
    from auditor.backends.search import SearchIndex

    def send(message: tuple[Any, ...]) -> None:
        pickle.dump(message, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()

    search = None
    try:
        search = SearchIndex(**spec)
        for n, s in enumerate(streams):
            batch: list[tuple[str, dict[str, Any]]] = []
            for item in search.stream(
                s.index, list(s.sort), query=s.query, source=s.source, page=s.page, from_sort=s.from_sort
            ):
                batch.append(item)
                if len(batch) >= s.page:
                    send(("page", n, batch))
                    batch = []
            if batch:
                send(("page", n, batch))
        send(("end", search.retried, _peak_rss_mib()))
    except (BrokenPipeError, KeyboardInterrupt):  # the parent stopped reading
        pass
    except AuditorError as exc:
        _send_error(send, type(exc).__name__, str(exc), exc.hint)
    except Exception as exc:  # anything else, in the parent's words
        _send_error(send, "BackendUnavailable", f"search cluster: a reader process failed: {exc!r}", None)
    finally:
        if search is not None:
            search.close()


def _peak_rss_mib() -> float:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _send_error(send: Any, kind: str, message: str, hint: str | None) -> None:
    try:
        send(("error", kind, message, hint))
    except OSError:
        pass


def _raise(kind: str, message: str, hint: str | None) -> None:
    import auditor.errors as errors

    cls = getattr(errors, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, AuditorError)):
        cls = BackendUnavailable
    raise cls(message, hint=hint)


def read_in_process(search: Any, streams: Sequence[StreamSpec]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """`(stream number, _id, _source)` of every hit of `streams`, read in that order by one
    child process; `search` (a SearchIndex) counts the documents and retries as if it had read
    them itself. The child is started on the first `next()` and ended however reading ends.

    The child is `python -m auditor.backends.search_readers`, its own pipes for the work (what
    to read in on stdin, pickled pages out on stdout) and nothing else: not a fork (the parent's
    threads and sockets stay the parent's), not multiprocessing's spawn (which imports the
    parent's main module again: the whole CLI, 50 MiB more a child)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "auditor.backends.search_readers"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # the screen is the tool's; errors come back as messages
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        pickle.dump((search.spec(), list(streams)), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        proc.stdin.close()
        while True:
            try:
                message = pickle.load(proc.stdout)
            except EOFError:
                code = proc.wait(5)
                raise BackendUnavailable(
                    f"search cluster {search.description}: a reader process ended without finishing "
                    f"(exit code {code})"
                ) from None
            if message[0] == "page":
                _, n, items = message
                search.docs_read += len(items)
                for doc_id, source in items:
                    yield n, doc_id, source
            elif message[0] == "end":
                search.retried += message[1]
                PEAK_RSS_MIB.append(message[2])
                return
            else:
                _raise(*message[1:])
    finally:
        proc.stdout.close()  # a child still writing gets a broken pipe and closes its point in time
        try:
            proc.wait(2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    """The child's side: what to read from stdin, the pages to stdout."""
    logging.disable(logging.CRITICAL)  # the parent's output is the tool's; the child says nothing
    spec, streams = pickle.load(sys.stdin.buffer)
    _serve(sys.stdout.buffer, spec, streams)


if __name__ == "__main__":
    main()
