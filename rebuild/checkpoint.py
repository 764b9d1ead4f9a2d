"""A repair's checkpoint (resume exactly after the last confirmed key) and its lock per target."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from auditor.errors import ConfigError, TargetLocked


class LockHeld(TargetLocked):
    """Another repair holds the target's lock file (exit 6, not a usage error: run again later)."""


def target_key(store: str, index_prefix: str, topic: str) -> str:
    """One repair at a time per store + index prefix + topic (the description, never a secret)."""
    return hashlib.sha256(f"{store}|{index_prefix}|{topic}".encode()).hexdigest()[:16]


@dataclass
class Checkpoint:
    """Where a repair is: the last (urn, aspect) whose batch was confirmed, and its counts."""

    mode: str
    scope: str  # a fingerprint of what the repair covers (the checkpoint file is named by it)
    part: int = 0  # which of the repair's selections it is walking
    last_urn: str | None = None
    last_aspect: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    produced: dict[str, int] = field(default_factory=dict)  # partition -> highest offset produced
    failed: list[str] = field(default_factory=list)  # urns whose writes failed for good
    why: dict[str, str] = field(default_factory=dict)  # urn -> why its write failed (the first reason)
    # urns written, kept only when the repair names its urns (a filter is verified by a scan of it,
    # so a checkpoint of a million-row replay stays small)
    touched: list[str] = field(default_factory=list)
    track_touched: bool = True
    # urns whose documents hold a later write than the store: what the index holds of it was kept
    # (urn -> why)
    kept: dict[str, str] = field(default_factory=dict)
    done: bool = False
    # the order the keys were walked in ("bytes"; "collation": PostgreSQL's own, see RowSource);
    # a checkpoint of an older version has none and was walked in byte order
    order: str = "bytes"

    def save(self, path: Path) -> None:
        """Atomically: a kill at any moment leaves the previous or the new checkpoint whole."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        # the fields as they are (asdict deep-copied every list at every page: 0.8 s of a profiled
        # 50,000-row replay whose touched urns grew page by page)
        tmp.write_text(json.dumps({f.name: getattr(self, f.name) for f in fields(self)}), encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> Checkpoint | None:
        if not path.exists():
            return None
        try:
            return cls(**json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, TypeError) as exc:
            raise ConfigError(
                f"checkpoint {path} cannot be read: {exc}", hint="remove it to start over"
            ) from None

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n


def scope_fingerprint(mode: str, what: Any) -> str:
    return hashlib.sha256(json.dumps([mode, what], sort_keys=True, default=str).encode()).hexdigest()[:16]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def shard_suffix(shard: tuple[int, int] | None) -> str:
    """What a shard adds to its checkpoint's and its lock's names ("-shard2of4"; "" unsharded)."""
    return f"-shard{shard[0]}of{shard[1]}" if shard is not None else ""


_HELD: set[Path] = set()  # the lock files this process holds


class Lock:
    """A lock file per target (per shard of it); a lock left by a killed run on this host is
    stale and is said so. A whole-target repair and a shard's exclude each other; shards of one
    target run side by side."""

    def __init__(self, directory: Path, key: str, shard: tuple[int, int] | None = None) -> None:
        self.path = directory / f"rebuild-{key}{shard_suffix(shard)}.lock"
        self.key, self.shard = key, shard
        self.held = False

    def _others(self) -> list[Path]:
        """The locks this one must not run beside: the whole target's (for a shard), or every
        shard's (for the whole target)."""
        directory = self.path.parent
        if self.shard is not None:
            return [directory / f"rebuild-{self.key}.lock"]
        return sorted(directory.glob(f"rebuild-{self.key}-shard*.lock"))

    def info(self) -> dict[str, Any] | None:
        try:
            return dict(json.loads(self.path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return None

    def stale(self) -> bool:
        info = self.info()
        if info is None:
            return False
        pid = int(info.get("pid", 0))
        # a pod retried under its old hostname (an Indexed Job's pod is <job>-<index>) may get the
        # dead run's pid for itself: a lock naming this very process was left by another one
        if pid == os.getpid():
            return self.path not in _HELD
        return info.get("host") == socket.gethostname() and not _alive(pid)

    def acquire(self, break_stale: bool = False) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if break_stale and self.stale():
            self.path.unlink(missing_ok=True)
        for other in self._others():
            held = Lock(other.parent, self.key)
            held.path = other
            if other.exists() and not held.stale():
                info = held.info() or {}
                raise LockHeld(
                    f"a repair of this target is running ({other.name}): pid {info.get('pid')} on "
                    f"{info.get('host')}; a whole-target repair and its shards exclude each other",
                    hint="wait for it; a stale lock is cleared with --break-stale-lock",
                )
        payload = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()})
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            info = self.info() or {}
            state = "stale (its process is gone)" if self.stale() else "held"
            raise LockHeld(
                f"another repair of this target is {state}: pid {info.get('pid')} on {info.get('host')}",
                hint="wait for it; a stale lock is cleared with --break-stale-lock",
            ) from None
        with os.fdopen(fd, "w") as handle:
            handle.write(payload)
        self.held = True
        _HELD.add(self.path)

    def release(self) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False
            _HELD.discard(self.path)
