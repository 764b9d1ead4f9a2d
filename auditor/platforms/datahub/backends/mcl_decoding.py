"""An event log's MCL values as the scan sees them: decoded through the registry when one is
configured, and counted (once each) when they are not Confluent-framed or cannot be decoded."""

from __future__ import annotations

from datetime import UTC, datetime

from auditor.backends.avro_wire import WireDecoder, is_framed
from auditor.backends.registry import Registry, as_registry
from auditor.core.records import MclHit


class HitDecoding:
    """Mixed into the event logs (Kafka's and pgQueue's)."""

    _decode: WireDecoder | None
    decode_failures: int  # MCLs of interest whose value could not be decoded
    decode_error: str | None  # the first such failure, said
    not_mcl: int  # messages keyed by a urn of interest that are not Confluent-framed Avro
    _counted: set[tuple[str, int, int]]  # each such message counted once

    @property
    def decode_note(self) -> str | None:
        """What the report should say about the decoding (a Glue schema not read, say)."""
        return self._decode.note if self._decode is not None else None

    def _init_decoding(self, registry_url: Registry | str | None, timeout: float) -> str:
        """Set up the decoding; what to add to the log's description."""
        self._decode = None
        self.decode_failures = 0
        self.decode_error = None
        self.not_mcl = 0
        self._counted = set()
        registry = as_registry(registry_url)
        if registry is None:
            return ""
        self._decode = WireDecoder(registry, timeout)
        return f" (registry {registry.describe()})"

    def _hit(
        self, where: tuple[str, int, int], urn: str, when: datetime, value: bytes | None
    ) -> MclHit | None:
        """The MCL at `where` (topic, partition, offset) keyed by `urn`; None when no producer of
        MCLs wrote it (not framed: nothing to match by time)."""
        if not is_framed(value):
            self.not_mcl += where not in self._counted
            self._counted.add(where)
            return None
        aspect = change = payload = created = None
        if self._decode is not None:
            try:
                decoded = self._decode(value)
                aspect, change = decoded.get("aspectName"), decoded.get("changeType")
                payload = (decoded.get("aspect") or {}).get("value")
                stamp = (decoded.get("created") or {}).get("time")
                if isinstance(stamp, int) and stamp > 0:
                    created = datetime.fromtimestamp(stamp / 1000, UTC)
            except Exception as exc:  # undecoded: matched by time, and the scan says so
                self.decode_failures += where not in self._counted
                self._counted.add(where)
                self.decode_error = self.decode_error or str(exc)[:200]
        return MclHit(urn, where[2], when, aspect, change, payload, created)
