"""Errors a user can hit: each is one clear line and carries the exit code it maps to
(auditor/exit_codes.py: one meaning per code)."""

from __future__ import annotations

from auditor.exit_codes import ExitCode


class AuditorError(Exception):
    """Base of every error the CLI reports as one line (traceback only with --debug)."""

    exit_code: int = ExitCode.INCOMPLETE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class ConfigError(AuditorError):
    """Bad flags, configuration file or environment."""

    exit_code = ExitCode.USAGE


class BackendUnavailable(AuditorError):
    """A backend (database, search cluster, Kafka, registry) could not be reached or failed."""

    exit_code = ExitCode.INCOMPLETE


class AccessRefused(BackendUnavailable):
    """A backend refused the credentials, or its certificate failed verification: a setting to
    fix, not an outage (the scan never carries on without that backend, as it may for Kafka)."""


class TargetLocked(AuditorError):
    """Another repair holds the target: nothing is wrong with the command, run it again once
    that repair ends (a lock its killed run left: --break-stale-lock)."""

    exit_code = ExitCode.LOCKED


class UnknownUrn(AuditorError):
    """No entity has the urn (id, fully qualified name) asked for: a typo, or another
    environment; not a usage error, the same command works with a known one."""

    exit_code = ExitCode.UNKNOWN_URN


class DeletionRefused(AuditorError):
    """A repair would delete more of an index than a repair deletes unasked (the store it reads
    may be the wrong database, or one restored without its rows): nothing is deleted until the
    number is given (`--allow-delete N`)."""

    exit_code = ExitCode.STORE_SMALLER


class ConsumerNotRunning(AuditorError):
    """A replay refused before it produced anything: the MAE consumer it would rely on has no
    member, or does not move, so nothing would apply what it produced."""

    exit_code = ExitCode.STALLED
