"""A platform's warm backends for a resident service (`auditor serve`): opened once, reused by the
requests that follow, one request at a time (a Kafka consumer is not thread-safe; a walk's
backends hold per-walk state). Each platform opens its own (`Platform.open_resident`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import ExitStack, closing

from auditor.backends.connect import open_search
from auditor.core.triage import TriageResult
from auditor.settings.model import Settings

log = logging.getLogger("auditor.serve")


class Resident:
    """One set of opened backends and what a triage on them needs."""

    def __init__(self) -> None:
        self.opened = ExitStack()
        self.warnings: list[str] = []

    @property
    def degraded(self) -> bool:
        """A backend is configured but could not be opened (the walk ran with weaker verdicts):
        the service opens fresh ones for the next request."""
        return False

    def triage(
        self, text: str, *, entity_types: Sequence[str] = (), grace: float | None = None, settle: float = 10.0
    ) -> TriageResult:
        raise NotImplementedError

    def close(self) -> None:
        try:
            self.opened.close()
        except Exception as exc:  # a pool that lost its server may fail to close: it is gone anyway
            log.debug("closing a session: %s", exc)


def search_probe(settings: Settings) -> str:
    """The search cluster's version on a fresh connection (raises when it is down)."""
    with closing(open_search(settings)) as opened:
        return str(opened.version())
