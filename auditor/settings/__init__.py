"""Configuration: defaults < TOML file < environment (AUDITOR_* and each platform's own names) < flags.

The names a user imports, handed on from where they live: the value (`model`), where each
setting may be given (`names`), the loading (`load`); `rules` refuses settings that would do
nothing. Below the face (the CLI), import from those modules: the registry and the platforms
read the value (`model`), which imports none of them, while the loading asks the registry for
each platform's own environment.
"""

from auditor.redact import redact_url as redact_url
from auditor.settings.load import load_settings as load_settings
from auditor.settings.model import Settings as Settings
from auditor.settings.model import StoreEntry as StoreEntry
from auditor.settings.names import ENV_NAMES as ENV_NAMES
from auditor.settings.names import env_names as env_names
