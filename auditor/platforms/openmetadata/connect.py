"""Opening OpenMetadata's backends from the settings."""

from __future__ import annotations

from auditor.backends.connect import open_search
from auditor.backends.db_auth import store_engine
from auditor.backends.search_readers import reader_processes
from auditor.errors import ConfigError
from auditor.platforms.openmetadata.search import OmSearch
from auditor.platforms.openmetadata.store import OmStore
from auditor.settings.model import Settings


def open_om_store(settings: Settings) -> OmStore:
    """OpenMetadata's database (the entity tables, relationships, tag usages, retry queue)."""
    if settings.store_url is None:
        raise ConfigError(
            "no OpenMetadata database configured", hint="pass --store-url or set AUDITOR_STORE_URL"
        )
    url = settings.store_url.get_secret_value()
    return OmStore(url, engine=store_engine(url, settings))


def open_om_search(settings: Settings) -> OmSearch:
    """OpenMetadata's indices, named under the cluster alias (ELASTICSEARCH_CLUSTER_ALIAS)."""
    search = OmSearch(open_search(settings), settings.cluster_alias)
    search.readers = reader_processes(settings.scan_readers)
    return search


def om_state(settings: Settings) -> Settings:
    """The default state file is DataHub's: OpenMetadata's history is kept beside it."""
    if settings.state_file == Settings.model_fields["state_file"].default:
        own = settings.state_file.replace(".sqlite", "-openmetadata.sqlite")
        return settings.model_copy(update={"state_file": own})
    return settings
