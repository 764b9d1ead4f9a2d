"""RDS IAM authentication in front of the stack's MariaDB: what an RDS MySQL instance does with an
IAM token, as far as the machine allows.

On RDS an IAM user is `IDENTIFIED WITH AWSAuthenticationPlugin AS 'RDS'`: the server switches
the client to the `mysql_clear_password` plugin and takes the token in clear. Here, for each
client connection, the stand-in opens a connection to the real MariaDB, reads its greeting and
greets the client as that server (its version, connection id and capabilities, minus TLS) with a
scramble of its own; takes the client's HandshakeResponse41 (user, database, capabilities,
connection attributes), switches it to `mysql_clear_password`, takes the token and checks it as
the PostgreSQL front does (sandbox/rds_iam.py `RdsIamFront`: a SigV4 query signature for service
`rds-db`, action `connect`, the user it names and this front's host:port, within its 15
minutes). A refused token gets MySQL's own error 1045 and the connection is closed. An accepted
one: the stand-in logs in to MariaDB as the backend user (mysql_native_password with MariaDB's
scramble, or whatever plugin MariaDB switches it to: native or clear), hands the client
MariaDB's OK with the client's sequence number, then relays bytes both ways (each command starts
its sequence anew, so after the login nothing needs rewriting).

No TLS: the greeting does not offer CLIENT_SSL, so PyMySQL (TLS "preferred" unless the URL gives
`ssl_ca`) sends the token in clear. RDS refuses an IAM login without TLS; that part is not
stood in for here (the stack's MariaDB TLS is tested on its own).
"""

from __future__ import annotations

import hashlib
import secrets
import socket
import struct
from dataclasses import dataclass

from sandbox.aws_sigv4 import Verifier
from sandbox.rds_iam import RdsIamFront, recv_exactly

# capability flags (MySQL's include/mysql_com.h)
CONNECT_WITH_DB = 1 << 3
PROTOCOL_41 = 1 << 9
SSL = 1 << 11
SECURE_CONNECTION = 1 << 15
PLUGIN_AUTH = 1 << 19
CONNECT_ATTRS = 1 << 20
PLUGIN_AUTH_LENENC_CLIENT_DATA = 1 << 21

NATIVE = b"mysql_native_password"
CLEAR = b"mysql_clear_password"
OK, EOF, ERR = 0x00, 0xFE, 0xFF


class Protocol(Exception):
    """The other side said something this stand-in does not follow: the connection is dropped."""


def read_packet(sock: socket.socket) -> tuple[int, bytes]:
    """(sequence id, payload) of the next packet (a login's packets are all below 16 MiB)."""
    header = recv_exactly(sock, 4)
    return header[3], recv_exactly(sock, int.from_bytes(header[:3], "little"))


def packet(seq: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "little") + bytes([seq & 0xFF]) + payload


def error(code: int, state: str, message: str) -> bytes:
    """An ERR packet's payload (protocol 4.1: with the SQL state)."""
    return bytes([ERR]) + struct.pack("<H", code) + b"#" + state.encode() + message.encode()


def lenenc(n: int) -> bytes:
    if n < 0xFB:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def native_scramble(password: bytes, scramble: bytes) -> bytes:
    """mysql_native_password: SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password)))."""
    if not password:
        return b""
    stage1 = hashlib.sha1(password).digest()
    stage2 = hashlib.sha1(scramble + hashlib.sha1(stage1).digest()).digest()
    return bytes(a ^ b for a, b in zip(stage1, stage2, strict=True))


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.i = data, 0

    def take(self, n: int) -> bytes:
        if self.i + n > len(self.data):
            raise Protocol("a packet shorter than its fields")
        out = self.data[self.i : self.i + n]
        self.i += n
        return out

    def uint(self, n: int) -> int:
        return int.from_bytes(self.take(n), "little")

    def cstring(self) -> bytes:
        end = self.data.find(b"\0", self.i)
        end = len(self.data) if end < 0 else end
        out = self.data[self.i : end]
        self.i = min(end + 1, len(self.data))
        return out

    def lenenc_int(self) -> int:
        first = self.uint(1)
        if first < 0xFB:
            return first
        if first not in (0xFC, 0xFD, 0xFE):
            raise Protocol(f"0x{first:x} is not a length-encoded integer")
        return self.uint({0xFC: 2, 0xFD: 3, 0xFE: 8}[first])

    def rest(self) -> bytes:
        return self.take(len(self.data) - self.i)

    @property
    def more(self) -> bool:
        return self.i < len(self.data)


@dataclass
class Greeting:
    """HandshakeV10: what a server says first."""

    version: bytes
    connection_id: int
    capabilities: int
    charset: int
    status: int
    reserved: bytes  # 10 bytes; MariaDB's extended capabilities in the last 4
    scramble: bytes
    plugin: bytes

    @classmethod
    def parse(cls, payload: bytes) -> Greeting:
        if payload[:1] == bytes([ERR]):  # e.g. too many connections (no SQL state before the login)
            raise Protocol("the server refused the connection: " + payload[3:].decode(errors="replace"))
        r = _Reader(payload)
        if r.uint(1) != 10:
            raise Protocol("not a HandshakeV10 greeting")
        version, connection_id, part1 = r.cstring(), r.uint(4), r.take(8)
        r.take(1)
        low, charset, status, high, auth_len = r.uint(2), r.uint(1), r.uint(2), r.uint(2), r.uint(1)
        capabilities = low | high << 16
        reserved = r.take(10)
        part2 = r.take(max(13, auth_len - 8)) if capabilities & SECURE_CONNECTION else b""
        plugin = r.cstring() if capabilities & PLUGIN_AUTH else b""
        scramble = part1 + (part2[:-1] if part2.endswith(b"\0") else part2)
        return cls(version, connection_id, capabilities, charset, status, reserved, scramble, plugin)

    def pack(self) -> bytes:
        caps = self.capabilities
        return (
            b"\x0a" + self.version + b"\0" + struct.pack("<I", self.connection_id)
            + self.scramble[:8] + b"\0"
            + struct.pack("<HBHHB", caps & 0xFFFF, self.charset, self.status, caps >> 16,
                          len(self.scramble) + 1 if caps & PLUGIN_AUTH else 0)
            + self.reserved + self.scramble[8:] + b"\0"
            + (self.plugin + b"\0" if caps & PLUGIN_AUTH else b"")
        )  # fmt: skip


@dataclass
class Response:
    """HandshakeResponse41: the client's login."""

    capabilities: int
    max_packet: int
    charset: int
    filler: bytes  # 23 bytes; MariaDB's extended client capabilities in the last 4
    user: bytes
    auth: bytes
    database: bytes | None
    plugin: bytes | None
    attrs: bytes | None  # the connection attributes as sent, without their length

    @classmethod
    def parse(cls, payload: bytes, server_capabilities: int) -> Response:
        r = _Reader(payload)
        capabilities, max_packet, charset, filler = r.uint(4), r.uint(4), r.uint(1), r.take(23)
        if not capabilities & PROTOCOL_41:
            raise Protocol("a pre-4.1 client")
        if capabilities & SSL:
            raise Protocol("the client asks for TLS, which was not offered")
        flags = capabilities & server_capabilities
        user = r.cstring()
        if flags & PLUGIN_AUTH_LENENC_CLIENT_DATA:
            auth = r.take(r.lenenc_int())
        elif flags & SECURE_CONNECTION:
            auth = r.take(r.uint(1))
        else:
            auth = r.cstring()
        database = r.cstring() if flags & CONNECT_WITH_DB and r.more else None
        plugin = r.cstring() if flags & PLUGIN_AUTH and r.more else None
        attrs = r.take(r.lenenc_int()) if flags & CONNECT_ATTRS and r.more else None
        return cls(capabilities, max_packet, charset, filler, user, auth, database, plugin, attrs)

    def pack(self) -> bytes:
        flags = self.capabilities
        if flags & PLUGIN_AUTH_LENENC_CLIENT_DATA:
            auth = lenenc(len(self.auth)) + self.auth
        elif flags & SECURE_CONNECTION:
            auth = bytes([len(self.auth)]) + self.auth
        else:
            auth = self.auth + b"\0"
        out = (
            struct.pack("<IIB", flags, self.max_packet, self.charset) + self.filler + self.user + b"\0" + auth
        )
        if flags & CONNECT_WITH_DB:
            out += (self.database or b"") + b"\0"
        if flags & PLUGIN_AUTH:
            out += (self.plugin or b"") + b"\0"
        if flags & CONNECT_ATTRS and self.attrs is not None:
            out += lenenc(len(self.attrs)) + self.attrs
        return out


class RdsIamMysqlProxy(RdsIamFront):
    """`with RdsIamMysqlProxy(host, port, user, password, verifier) as rds:` an IAM-authenticating
    MySQL-protocol front at `rds.port` for the MariaDB at host:port, logging in there as `user`."""

    def __init__(
        self,
        backend_host: str,
        backend_port: int,
        backend_user: str,
        backend_password: str,
        verifier: Verifier,
    ) -> None:
        super().__init__(verifier)
        self.backend = (backend_host, backend_port)
        self.backend_user = backend_user.encode()
        self.backend_password = backend_password.encode()
        # the plugin the login to the backend names first: MariaDB switches it to the user's own
        # when they differ (a test names another to see the switch followed: backend_switches)
        self.backend_plugin = NATIVE
        self.backend_switches: list[str] = []

    def _session(self, client: socket.socket) -> None:
        server: socket.socket | None = None
        try:
            server = socket.create_connection(self.backend, timeout=30)
            seq, payload = read_packet(server)
            backend = Greeting.parse(payload)
            front = Greeting(
                backend.version, backend.connection_id, backend.capabilities & ~SSL, backend.charset,
                backend.status, backend.reserved, _scramble(), NATIVE,
            )  # fmt: skip
            client.sendall(packet(0, front.pack()))
            seq, payload = read_packet(client)
            login = Response.parse(payload, front.capabilities)
            user = login.user.decode(errors="replace")
            client.sendall(packet(seq + 1, bytes([EOF]) + CLEAR + b"\0"))  # AuthSwitchRequest
            seq, payload = read_packet(client)
            token = payload.rstrip(b"\0").decode(errors="replace")
            if not self._admit(token, user):
                host = client.getpeername()[0]
                denied = f"Access denied for user '{user}'@'{host}' (using password: YES)"
                client.sendall(packet(seq + 1, error(1045, "28000", denied)))
                return
            reply = self._login(server, backend, login)
            client.sendall(packet(seq + 1, reply))
            if reply[0] != OK:
                return
            server.settimeout(None)
            self._relay(client, server)
        except (ConnectionError, OSError, Protocol):
            pass
        finally:
            for s in (client, server):
                if s is not None:
                    s.close()

    def _login(self, server: socket.socket, greeting: Greeting, login: Response) -> bytes:
        """Log in to the backend as its user with the client's options: its OK (or its ERR)."""
        # the client's options (compression too: the relay passes it through), without TLS
        flags = login.capabilities & greeting.capabilities & ~SSL | PROTOCOL_41
        if greeting.capabilities & PLUGIN_AUTH:
            flags |= PLUGIN_AUTH
        if login.database:
            flags |= CONNECT_WITH_DB & greeting.capabilities
        scrambled = native_scramble(self.backend_password, greeting.scramble[:20])
        response = Response(
            flags, login.max_packet, login.charset, login.filler, self.backend_user, scrambled,
            login.database, self.backend_plugin, login.attrs,
        )  # fmt: skip
        server.sendall(packet(1, response.pack()))
        switched = False
        while True:
            seq, reply = read_packet(server)
            if reply[:1] in (bytes([OK]), bytes([ERR])):
                return reply
            if reply[:1] == bytes([EOF]) and not switched:  # AuthSwitchRequest: another plugin
                switched = True
                r = _Reader(reply[1:])
                plugin, data = r.cstring(), r.rest()
                self.backend_switches.append(plugin.decode(errors="replace"))
                if plugin == NATIVE:
                    answer = native_scramble(self.backend_password, data.rstrip(b"\0")[:20])
                elif plugin == CLEAR:
                    answer = self.backend_password + b"\0"
                else:
                    raise Protocol(f"the backend asks for {plugin.decode(errors='replace')}")
                server.sendall(packet(seq + 1, answer))
                continue
            raise Protocol(f"unexpected packet 0x{reply[:1].hex()} while logging in to the backend")


def _scramble() -> bytes:
    """20 printable bytes, no NUL (as MySQL makes them)."""
    return bytes(33 + secrets.randbelow(94) for _ in range(20))
