"""Errors a user can hit: each is one clear line and carries the exit code it maps to."""

from __future__ import annotations


class AuditorError(Exception):
    """Base of every error the CLI reports as one line (traceback only with --debug)."""

    exit_code = 3

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


class ConfigError(AuditorError):
    """Bad flags, configuration file or environment."""

    exit_code = 2


class BackendUnavailable(AuditorError):
    """A backend (database, search cluster, Kafka, registry) could not be reached or failed."""

    exit_code = 3


class AccessRefused(BackendUnavailable):
    """A backend refused the credentials, or its certificate failed verification: a setting to
    fix, not an outage (the scan never carries on without that backend, as it may for Kafka)."""
