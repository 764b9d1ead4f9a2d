"""A TCP forwarder in front of a real (shared) server that a test can cut and restore, as a
restart looks from a client: `cut()` drops every open connection and then holds new ones
unanswered (a server gone or hung); `restore()` drops those held and forwards again. The shared
server itself is never touched."""

from __future__ import annotations

import socket
import threading


class TcpCut:
    def __init__(self, host: str, port: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.upstream = (host, port)
        self.live: list[socket.socket] = []
        self.held: list[socket.socket] = []
        self.down = False
        self.closed = False
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                if self.down:
                    self.held.append(client)  # accepted, never answered: a hung server
                    continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.live += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                _drop(s)

    def cut(self) -> None:
        with self.lock:
            self.down = True
            dropped, self.live = self.live, []
        for s in dropped:
            _drop(s)

    def restore(self) -> None:
        with self.lock:
            self.down = False
            held, self.held = self.held, []
        for s in held:
            _drop(s)

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        self.cut()
        self.restore()


def _drop(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass
