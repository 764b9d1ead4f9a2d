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
URL, kind, engine version, credentials): search_lean.py's, which sends the requests a job makes
as opensearch-py or the elasticsearch client sends them, over urllib3, without importing either
(their imports were 0.07-0.10 s of a child's 0.20-0.25 s start); requests signed by AWS SigV4
keep the full client (the signer is rebuilt there from the same chain). It runs a job:
`ReadStreams` (DataHub's sorted streams, one after the other), or any picklable job a platform
brings (OpenMetadata's whole-table spill: auditor/platforms/openmetadata/spill_apart.py). An
error in the child (a refusal, a cluster gone) is raised in the parent as the same kind of error,
with its words; a parent that stops reading early closes the pipe, and the child, failing to
send, closes its point in time and exits. The child imports neither the full search client nor
the settings (its "end" names any of the full clients' packages it imported, `CLIENT_IMPORTS`:
none): 32-33 MiB measured reading the system metadata or the edges of a 20k bench catalog (an
interpreter, the lean client and a page; 44-48 MiB with the full client), 70 MiB a page of
dataset docs with the full client.
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from auditor.errors import AuditorError, BackendUnavailable

# hits a message carries: a page of the stream (the stream's own page size)
BATCH = 2000
# a stream of fewer documents is read in the scan's process: a reader process cost 0.36-0.40 s to
# start here (an interpreter, its imports and a full client), about what a scan spends on 15,000
# documents; with the lean client 0.13-0.16 s of CPU (bench/reader_start_bench.py)
MIN_DOCS = 20_000
# each finished reader's peak RSS in MiB, in the order they finished (for the benchmark)
PEAK_RSS_MIB: list[float] = []
# each finished reader's imported packages of the full search clients (search_lean.CLIENT_PACKAGES;
# none where it read through the lean client), in the order they finished
CLIENT_IMPORTS: list[tuple[str, ...]] = []


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


class Job(Protocol):
    """What a reader process runs: given its own client and a way to send messages back (each
    pickled, in order), it reads; anything it raises goes back as an error."""

    def __call__(self, search: Any, send: Callable[[tuple[Any, ...]], None]) -> None: ...


@dataclass(frozen=True)
class ReadStreams:
    """The job of `read_in_process`: each stream in turn, a page a message ("page", n, items)."""

    streams: tuple[StreamSpec, ...]

    def __call__(self, search: Any, send: Callable[[tuple[Any, ...]], None]) -> None:
        for n, s in enumerate(self.streams):
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


def _serve(out: BinaryIO, spec: dict[str, Any], job: Job) -> None:
    """The child: run `job` with a client of its own (search_lean.py's), then ("end", retried,
    peak RSS, the full clients' packages it imported)."""
    from auditor.backends.search import SearchIndex
    from auditor.backends.search_lean import CLIENT_PACKAGES

    def send(message: tuple[Any, ...]) -> None:
        pickle.dump(message, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()

    search = None
    try:
        search = SearchIndex(**spec, lean=True)
        job(search, send)
        imported = tuple(name for name in CLIENT_PACKAGES if sys.modules.get(name) is not None)
        send(("end", search.retried, _peak_rss_mib(), imported))
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


def messages(search: Any, job: Job, stop: threading.Event | None = None) -> Iterator[tuple[Any, ...]]:
    """What `job`, run by a child process with a client like `search` (a SearchIndex), sends,
    in order; its errors raised here as the same kind of error; the retries it made added to
    `search`'s. The child is started on the first `next()` and ended however reading ends (a
    `stop` that is set ends it too, within a fifth of a second, and the messages with it).

    The child is `python -m auditor.backends.search_readers`, its own pipes for the work (the
    job on stdin, pickled messages on stdout) and nothing else: not a fork (the parent's threads
    and sockets stay the parent's), not multiprocessing's spawn (which imports the parent's main
    module again: the whole CLI, 50 MiB more a child)."""
    # the child imports this same auditor, not whichever one its working directory or the
    # environment would find first (a checkout beside an installed release)
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH")
    proc = subprocess.Popen(
        [sys.executable, "-m", "auditor.backends.search_readers"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # the screen is the tool's; errors come back as messages
    )
    assert proc.stdin is not None and proc.stdout is not None
    done = threading.Event()
    if stop is not None:  # the caller gave up: the child is ended, the reading below sees its end

        def watch() -> None:
            while not done.is_set():
                if stop.wait(0.2):
                    proc.kill()
                    return

        threading.Thread(target=watch, daemon=True, name="auditor-reader-stop").start()
    try:
        pickle.dump((search.spec(), job), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        proc.stdin.close()
        while True:
            try:
                message = pickle.load(proc.stdout)
            except EOFError:
                if stop is not None and stop.is_set():
                    return
                code = proc.wait(5)
                raise BackendUnavailable(
                    f"search cluster {search.description}: a reader process ended without finishing "
                    f"(exit code {code})"
                ) from None
            if message[0] == "end":
                search.retried += message[1]
                PEAK_RSS_MIB.append(message[2])
                CLIENT_IMPORTS.append(message[3])
                return
            if message[0] == "error":
                _raise(*message[1:])
            yield message
    finally:
        done.set()
        proc.stdout.close()  # a child still writing gets a broken pipe and closes its point in time
        try:
            proc.wait(2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def read_in_process(search: Any, streams: Sequence[StreamSpec]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """`(stream number, _id, _source)` of every hit of `streams`, read in that order by one
    child process; `search` (a SearchIndex) counts the documents as if it had read them."""
    for _, n, items in messages(search, ReadStreams(tuple(streams))):
        search.docs_read += len(items)
        for doc_id, source in items:
            yield n, doc_id, source


def main() -> None:
    """The child's side: what to read from stdin, the pages to stdout."""
    from auditor.backends.lean import quick_start

    quick_start()  # no unused asyncio transports, no collector passes over the imports
    logging.disable(logging.CRITICAL)  # the parent's output is the tool's; the child says nothing
    spec, job = pickle.load(sys.stdin.buffer)  # noqa: S301 (from the parent, through its own pipe)
    _serve(sys.stdout.buffer, spec, job)


if __name__ == "__main__":
    main()
