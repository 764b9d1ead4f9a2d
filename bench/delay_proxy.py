"""A delaying TCP proxy for the benchmarks: a server as if it were some milliseconds away.

This machine's kernel has no netem, so the distance is made in user space: the proxy listens on
an ephemeral loopback port, forwards every connection to the server, and holds each piece of
data for half the round-trip time in each direction. The data is delayed, not throttled: each
direction is a FIFO queue of (delivery time, bytes), so a burst of segments costs one delay, not
one each, as on a long link with room to spare.

It counts connections and round trips. A round trip is a turn of the conversation: the client
sends after the server last answered (or sends first on a new connection). That is what a
request-response protocol pays one RTT for; data the client streams without waiting is one turn.

    with DelayProxy("127.0.0.1", 15432, rtt_ms=5) as proxy:
        ...  # connect to 127.0.0.1:proxy.port
        proxy.counts()  # {"connections": ..., "round_trips": ...}

Stdlib only (threads); not for the test suite.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

CHUNK = 65536


class _Turns:
    """Who spoke last on one connection; a client send after the server spoke is a round trip."""

    def __init__(self, count: Callable[[bytes], None]) -> None:
        self.last = "server"  # the client's first send is a turn
        self.count = count

    def client_sent(self, data: bytes) -> None:
        if self.last == "server":
            self.count(data)
        self.last = "client"

    def server_sent(self, _data: bytes) -> None:
        self.last = "server"


class DelayProxy:
    """One server behind an added round-trip time; start() / stop(), or a context manager.

    Threads, not asyncio: an event loop's timers wake on the selector's millisecond ticks
    (epoll rounds a timeout up), which added up to a millisecond a direction; time.sleep wakes
    within tens of microseconds."""

    def __init__(self, host: str, port: int, rtt_ms: float = 0.0, name: str = "") -> None:
        self.host, self.target_port = host, port
        self.rtt_ms = rtt_ms
        self.name = name or f"{host}:{port}"
        self.port = 0
        self._lock = threading.Lock()
        self._connections = 0
        self._round_trips = 0
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._stopping = False
        self._ended: set[frozenset[socket.socket]] = set()
        # a list: each turn's time and first bytes kept in it (what the round trips are)
        self.trace: list[tuple[float, bytes]] | None = None

    # -- counters ------------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {"connections": self._connections, "round_trips": self._round_trips}

    def _turn(self, data: bytes) -> None:
        with self._lock:
            self._round_trips += 1
            if self.trace is not None:
                self.trace.append((time.monotonic(), data[:300]))

    # -- life ----------------------------------------------------------------------------------

    def start(self) -> DelayProxy:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept_all, name=f"proxy {self.name}", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopping = True
        if self._listener is not None:
            self._listener.close()
        with self._lock:
            for sock in list(self._open):
                _close(sock)

    def __enter__(self) -> DelayProxy:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def set_rtt(self, rtt_ms: float) -> None:
        """The delay for data read from now on (the bench's next level, on the same proxy)."""
        self.rtt_ms = rtt_ms

    # -- forwarding ----------------------------------------------------------------------------

    def _accept_all(self) -> None:
        assert self._listener is not None
        while not self._stopping:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection((self.host, self.target_port), timeout=10)
            except OSError:
                _close(client)
                continue
            server.settimeout(None)
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._connections += 1
                self._open.update((client, server))
            turns = _Turns(self._turn)
            self._pipe(client, server, turns.client_sent)
            self._pipe(server, client, turns.server_sent)

    def _pipe(self, src: socket.socket, dst: socket.socket, spoke: Callable[[bytes], None]) -> None:
        """Read as it comes, deliver each piece half a round trip after it was read, in order."""
        pending: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

        def read() -> None:
            while True:
                try:
                    data = src.recv(CHUNK)
                except OSError:
                    data = b""
                if data:
                    spoke(data)
                pending.put((time.monotonic() + self.rtt_ms / 2000.0, data))
                if not data:
                    return

        def deliver() -> None:
            while True:
                due, data = pending.get()
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                if not data:
                    break
                try:
                    dst.sendall(data)
                except OSError:
                    break
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self._done(src, dst)

        for work in (read, deliver):
            threading.Thread(target=work, daemon=True).start()

    def _done(self, src: socket.socket, dst: socket.socket) -> None:
        """Both sockets closed once both directions have ended."""
        with self._lock:
            pair = frozenset((src, dst))
            if pair not in self._ended:
                self._ended.add(pair)
                return
            self._ended.discard(pair)
            self._open.difference_update(pair)
        for sock in pair:
            _close(sock)


def _close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass


def added_delay_ms(proxy: DelayProxy, probe: Callable[[int], Any], runs: int = 20) -> dict[str, float]:
    """What the proxy adds to one round trip, measured: `probe(port)` makes one trivial request
    (a connection kept open by the probe) straight to the server and through the proxy, the
    medians' difference. Checks the delay is the one asked for, not assumed."""
    import statistics

    def median_ms(port: int) -> float:
        probe(port)  # the connection made and warmed
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            probe(port)
            times.append((time.perf_counter() - began) * 1000)
        return statistics.median(times)

    straight = median_ms(proxy.target_port)
    through = median_ms(proxy.port)
    return {
        "straight_ms": round(straight, 3),
        "through_ms": round(through, 3),
        "added_ms": round(through - straight, 3),
    }
