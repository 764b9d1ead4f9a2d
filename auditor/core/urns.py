"""DataHub's identities: entity type of a urn, search doc ids, and GMS's Kafka partitioner."""

from __future__ import annotations

import base64
import hashlib

_URL_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*_")


class UrnError(ValueError):
    """A string that is not a `urn:li:<type>:<id>` urn."""


def entity_type(urn: str) -> str:
    """`urn:li:dataset:(...)` -> `dataset`."""
    if not urn.startswith("urn:li:"):
        raise UrnError(f"not a DataHub urn: {urn!r}")
    end = urn.find(":", 7)
    if end <= 7:
        raise UrnError(f"urn has no entity type: {urn!r}")
    return urn[7:end]


def document_id(urn: str) -> str:
    """The entity doc `_id`: Java's `URLEncoder.encode(urn, "UTF-8")`."""
    out: list[str] = []
    for byte in urn.encode("utf-8"):
        if byte in _URL_SAFE:
            out.append(chr(byte))
        elif byte == 0x20:
            out.append("+")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def _md5_b64(raw: str) -> str:
    return base64.b64encode(hashlib.md5(raw.encode("utf-8")).digest()).decode("ascii")


def system_metadata_id(urn: str, aspect: str) -> str:
    """`_id` of a `system_metadata_service_v1` doc: base64(md5(urn--aspect))."""
    return _md5_b64(f"{urn}--{aspect}")


def edge_id(source: str, relationship: str, destination: str, owner: str | None = None) -> str:
    """`_id` of a `graph_service_v1` doc: base64(md5(src--relType--dst[--owner]))."""
    raw = f"{source}--{relationship}--{destination}"
    if owner:
        raw += f"--{owner}"
    return _md5_b64(raw)


def murmur2(data: bytes) -> int:
    """Kafka's Java `Utils.murmur2` (signed 32-bit result)."""
    m = 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    tail = length & ~3
    for i in range(0, tail, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def urn_partition(urn: str, partitions: int) -> int:
    """The partition GMS's producer (Kafka's default partitioner) sends a urn-keyed MCL to."""
    if partitions <= 0:
        raise ValueError("partitions must be positive")
    return (murmur2(urn.encode("utf-8")) & 0x7FFFFFFF) % partitions
