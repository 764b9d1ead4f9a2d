"""RDS IAM authentication in front of the stack's PostgreSQL: what an RDS instance does with an
IAM token, as far as the machine allows.

A client connects over TCP; the stand-in asks for a clear-text password (as RDS does for an
IAM-enabled user), takes the token, checks it (sandbox/aws_sigv4.py: a SigV4 query signature for
service `rds-db`, action `connect`, the user it names and the host:port it was made for, within
its 15 minutes), and only then opens the real session on PostgreSQL's Unix socket (trusted) with
the same startup message and relays bytes both ways. A wrong key, another user's token or an
expired one is refused with PostgreSQL's own error message. No TLS: the test's clients say
`sslmode=disable` (RDS would require TLS; that part is PostgreSQL's own, tested elsewhere).

`RdsIamFront` is what this front and the MySQL one (sandbox/rds_iam_mysql.py) share: the
listener, the token's check and the relay.
"""

from __future__ import annotations

import socket
import struct
import threading
from typing import Self
from urllib.parse import parse_qsl, urlsplit

from sandbox.aws_sigv4 import Refused, Verifier

SSL_REQUEST = 80877103
GSS_REQUEST = 80877104


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    """Exactly n bytes from the socket (ConnectionError if it closes first)."""
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def _error(message: str) -> bytes:
    fields = b"SFATAL\x00C28P01\x00M" + message.encode() + b"\x00\x00"
    return b"E" + struct.pack("!I", len(fields) + 4) + fields


class RdsIamFront:
    """What the stand-ins for RDS share (this PostgreSQL one, sandbox/rds_iam_mysql.py's MySQL
    one): a loopback listener, a thread per client connection, the token's check and the relay.
    A subclass speaks its protocol's authentication in `_session`."""

    def __init__(self, verifier: Verifier) -> None:
        self.verifier = verifier
        self.accepted: list[str] = []  # the users let in, one per connection
        self.refused: list[str] = []  # why each refused token was refused
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._closed = False

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed = True
        self.listener.close()

    def _serve(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._session, args=(client,), daemon=True).start()

    def _session(self, client: socket.socket) -> None:
        raise NotImplementedError

    def _admit(self, token: str, user: str) -> bool:
        """True (the user recorded as let in) if the token opens a session for `user` here;
        False (the reason recorded) if not."""
        try:
            self._check(token, user)
        except Refused as refused:
            self.refused.append(refused.message)
            return False
        except (KeyError, ValueError):  # a password, not a presigned URL
            self.refused.append("not an RDS IAM token")
            return False
        self.accepted.append(user)
        return True

    def _check(self, token: str, user: str) -> None:
        url = "https://" + token
        key = self.verifier.check_presigned(url, action="connect")
        params = dict(parse_qsl(urlsplit(url).query))
        if params.get("DBUser") != user:
            raise Refused(403, f"the token is for {params.get('DBUser')!r}, not {user!r}")
        if urlsplit(url).netloc != f"127.0.0.1:{self.port}":
            raise Refused(403, f"the token is for {urlsplit(url).netloc}, not this instance")
        self.verifier.allow(key, "rds-db:connect")

    @staticmethod
    def _relay(a: socket.socket, b: socket.socket) -> None:
        def pump(src: socket.socket, dst: socket.socket) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        threading.Thread(target=pump, args=(b, a), daemon=True).start()
        pump(a, b)


class RdsIamProxy(RdsIamFront):
    """`with RdsIamProxy(socket_path, verifier) as rds:` an IAM-authenticating front at `rds.port`."""

    def __init__(self, unix_socket: str, verifier: Verifier) -> None:
        super().__init__(verifier)
        self.unix_socket = unix_socket

    def _session(self, client: socket.socket) -> None:
        try:
            while True:
                length = struct.unpack("!I", recv_exactly(client, 4))[0]
                body = recv_exactly(client, length - 4)
                code = struct.unpack("!I", body[:4])[0]
                if code in (SSL_REQUEST, GSS_REQUEST):
                    client.sendall(b"N")
                    continue
                break
            startup = struct.pack("!I", length) + body
            params = body[4:].split(b"\x00")
            options = dict(zip(params[0::2], params[1::2], strict=False))
            user = options.get(b"user", b"").decode()
            client.sendall(b"R" + struct.pack("!II", 8, 3))  # AuthenticationCleartextPassword
            kind = recv_exactly(client, 1)
            size = struct.unpack("!I", recv_exactly(client, 4))[0]
            password = recv_exactly(client, size - 4).rstrip(b"\x00").decode()
            if kind != b"p":
                raise ConnectionError("no password message")
            if not self._admit(password, user):
                client.sendall(_error(f'PAM authentication failed for user "{user}"'))
                client.close()
                return
            server = socket.socket(socket.AF_UNIX)
            server.connect(self.unix_socket)
            server.sendall(startup)
            self._relay(client, server)
        except (ConnectionError, OSError):
            client.close()
