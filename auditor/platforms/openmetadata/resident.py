"""OpenMetadata's warm backends for `auditor serve`: its database and search; a triage takes the
entity as pasted (its FQN, its id, or a URL of OpenMetadata's UI)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing

from auditor.core.triage import TriageResult
from auditor.errors import ConfigError
from auditor.platforms.openmetadata.connect import om_state, open_om_search, open_om_store
from auditor.platforms.openmetadata.naming import ENTITIES, entities
from auditor.platforms.openmetadata.pasted import om_pasted, unwrap
from auditor.platforms.resident import Resident
from auditor.settings.model import Settings


class OpenMetadataResident(Resident):
    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
        try:
            self.store = self.opened.enter_context(closing(open_om_store(settings)))
            self.search = self.opened.enter_context(closing(open_om_search(settings)))
        except BaseException:
            self.close()
            raise

    def triage(
        self, text: str, *, entity_types: Sequence[str] = (), grace: float | None = None, settle: float = 10.0
    ) -> TriageResult:
        from auditor.backends.state import ScanState
        from auditor.platforms.openmetadata.scan import OmScanOptions
        from auditor.platforms.openmetadata.triage import om_walk

        try:
            asked, types, read_as = om_pasted(text, tuple(ENTITIES))
        except ValueError as exc:
            raise ConfigError(str(exc), hint="paste the entity's FQN, its id, or its page's URL") from None
        if not asked:
            raise ConfigError("nothing to look up", hint="paste the entity's FQN, its id, or its page's URL")
        chosen = entities(tuple(entity_types) or types)
        settings = om_state(self.settings)
        options = OmScanOptions(
            grace=settings.grace_seconds if grace is None else grace,
            visibility=settings.index_visibility_seconds,
            use_state=False,
        )
        with closing(ScanState(settings.state_file, read_only=True)) as state:
            # the walk unwraps the text itself (a name of one quoted part, `"lake.prod"`, is
            # tried as pasted too); a URL's FQN is handed over as the URL held it
            url = asked != unwrap(text)[0]
            result = om_walk(self.store, self.search, state, chosen, asked if url else text, options)
        result.asked, result.read_as = text, read_as + result.read_as
        return result
