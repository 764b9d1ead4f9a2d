"""Kafka's finalized features (`metadata.version`, `kraft.version`) by one ApiVersions v3 request.

The nearest thing to a release a client can read: a KRaft cluster's `metadata.version` feature
level moves with each release (it is what `kafka-features describe` prints). Plaintext listeners
only; a TLS or SASL listener gets None (the caller says the release was not readable).
"""

from __future__ import annotations

import socket
import struct


def _uvarint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def _request() -> bytes:
    client = b"auditor"
    header = struct.pack(">hhih", 18, 3, 1, len(client)) + client + b"\x00"  # ApiVersions v3, header v2
    body = bytes([len(client) + 1]) + client + bytes([2]) + b"1" + b"\x00"  # software name, version
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _read(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise OSError("connection closed")
        out += chunk
    return out


def finalized_features(bootstrap: str, timeout: float = 5.0) -> dict[str, int] | None:
    """Feature name -> finalized max level, from the first bootstrap server; None if unreadable."""
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock:
            sock.sendall(_request())
            (size,) = struct.unpack(">i", _read(sock, 4))
            data = _read(sock, size)
        at = 4  # correlation id (response header v0)
        (error,) = struct.unpack_from(">h", data, at)
        if error:
            return None
        at += 2
        keys, at = _uvarint(data, at)
        for _ in range(max(keys - 1, 0)):
            at += 6  # api key, min, max
            tags, at = _uvarint(data, at)
            for _ in range(tags):
                _, at = _uvarint(data, at)
                size_, at = _uvarint(data, at)
                at += size_
        at += 4  # throttle time
        found: dict[str, int] = {}
        tags, at = _uvarint(data, at)
        for _ in range(tags):
            tag, at = _uvarint(data, at)
            size_, at = _uvarint(data, at)
            end = at + size_
            if tag == 2:  # FinalizedFeatures: [name, max_version_level, min_version_level]
                n, at = _uvarint(data, at)
                for _ in range(max(n - 1, 0)):
                    length, at = _uvarint(data, at)
                    name = data[at : at + length - 1].decode()
                    at += length - 1
                    (level,) = struct.unpack_from(">h", data, at)
                    at += 4
                    inner, at = _uvarint(data, at)
                    for _ in range(inner):
                        _, at = _uvarint(data, at)
                        s, at = _uvarint(data, at)
                        at += s
                    found[name] = level
            at = end
        return found
    except (OSError, ValueError, IndexError, struct.error):
        return None
