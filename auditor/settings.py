"""Configuration: defaults < TOML file < environment (AUDITOR_* and DataHub's own names) < flags."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from auditor.errors import ConfigError

# environment variables, most specific first; DataHub's own names are honoured
ENV_NAMES: dict[str, tuple[str, ...]] = {
    "store_url": ("AUDITOR_STORE_URL",),
    "store_table": ("AUDITOR_STORE_TABLE",),
    "search_url": ("AUDITOR_SEARCH_URL",),
    "search_kind": ("AUDITOR_SEARCH_KIND",),
    "search_username": ("AUDITOR_SEARCH_USERNAME", "ELASTICSEARCH_USERNAME"),
    "search_password": ("AUDITOR_SEARCH_PASSWORD", "ELASTICSEARCH_PASSWORD"),
    "search_verify_certs": ("AUDITOR_SEARCH_VERIFY_CERTS",),
    "search_ca_certs": ("AUDITOR_SEARCH_CA_CERTS",),
    "index_prefix": ("AUDITOR_INDEX_PREFIX", "INDEX_PREFIX", "ELASTICSEARCH_INDEX_PREFIX"),
    "kafka_bootstrap": ("AUDITOR_KAFKA_BOOTSTRAP", "KAFKA_BOOTSTRAP_SERVER"),
    "kafka_security_protocol": ("AUDITOR_KAFKA_SECURITY_PROTOCOL", "KAFKA_PROPERTIES_SECURITY_PROTOCOL"),
    "kafka_sasl_mechanism": ("AUDITOR_KAFKA_SASL_MECHANISM", "KAFKA_PROPERTIES_SASL_MECHANISM"),
    "kafka_sasl_username": ("AUDITOR_KAFKA_SASL_USERNAME",),
    "kafka_sasl_password": ("AUDITOR_KAFKA_SASL_PASSWORD",),
    "kafka_ssl_ca_location": ("AUDITOR_KAFKA_SSL_CA_LOCATION",),
    "schema_registry_url": ("AUDITOR_SCHEMA_REGISTRY_URL", "KAFKA_SCHEMAREGISTRY_URL"),
    "mcl_versioned_topic": (
        "AUDITOR_MCL_VERSIONED_TOPIC",
        "METADATA_CHANGE_LOG_VERSIONED_TOPIC_NAME",
    ),
    "mcl_timeseries_topic": (
        "AUDITOR_MCL_TIMESERIES_TOPIC",
        "METADATA_CHANGE_LOG_TIMESERIES_TOPIC_NAME",
    ),
    "mae_consumer_group": ("AUDITOR_MAE_CONSUMER_GROUP", "METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID"),
    "grace_seconds": ("AUDITOR_GRACE_SECONDS",),
    "sample_window_seconds": ("AUDITOR_SAMPLE_WINDOW_SECONDS",),
    "index_visibility_seconds": ("AUDITOR_INDEX_VISIBILITY_SECONDS",),
    "state_file": ("AUDITOR_STATE_FILE",),
}


class Settings(BaseModel):
    """Everything a scan needs to reach the backends and judge what it sees."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    store_url: SecretStr | None = None
    store_table: str = "metadata_aspect_v2"
    search_url: str | None = None
    search_kind: Literal["auto", "opensearch", "elasticsearch"] = "auto"
    search_username: str | None = None
    search_password: SecretStr | None = None
    search_verify_certs: bool = True
    search_ca_certs: str | None = None
    index_prefix: str = ""
    kafka_bootstrap: str | None = None
    kafka_security_protocol: str | None = None
    kafka_sasl_mechanism: str | None = None
    kafka_sasl_username: str | None = None
    kafka_sasl_password: SecretStr | None = None
    kafka_ssl_ca_location: str | None = None
    schema_registry_url: str | None = None
    mcl_versioned_topic: str = "MetadataChangeLog_Versioned_v1"
    mcl_timeseries_topic: str = "MetadataChangeLog_Timeseries_v1"
    mae_consumer_group: str = "generic-mae-consumer-job-client"
    grace_seconds: float = Field(300.0, ge=0)
    sample_window_seconds: float = Field(10.0, ge=0)
    # a write the consumer committed is searchable this much later: DataHub's bulk processor
    # flushes every second (ES_BULK_FLUSH_PERIOD) and the index refreshes every second
    index_visibility_seconds: float = Field(3.0, ge=0)
    state_file: str = str(Path.home() / ".local" / "state" / "auditor" / "state.sqlite")

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            if name in ("search_url", "schema_registry_url") and isinstance(value, str):
                value = redact_url(value)
            yield name, value

    def describe(self) -> dict[str, str]:
        """Where the scan looked, safe to print: no password ever leaves this method."""
        out: dict[str, str] = {}
        if self.store_url is not None:
            out["store"] = redact_url(self.store_url.get_secret_value())
        if self.search_url:
            out["search"] = redact_url(self.search_url)
        if self.kafka_bootstrap:
            out["kafka"] = self.kafka_bootstrap
        if self.schema_registry_url:
            out["schema_registry"] = redact_url(self.schema_registry_url)
        return out


def redact_url(url: str) -> str:
    """`scheme://user:secret@host/db` -> `scheme://user:***@host/db`."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    creds, _, host = rest.rpartition("@")
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in creds else f"{scheme}://{user}@{host}"


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}".replace("-", "_")
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}_"))
        else:
            out[name] = value
    return out


def load_settings(
    config_file: str | Path | None = None,
    env: dict[str, str] | None = None,
    **flags: Any,
) -> Settings:
    """Merge defaults < file (`[store] url = ...` or flat keys) < environment < flags."""
    merged: dict[str, Any] = {}
    path = config_file or (env or os.environ).get("AUDITOR_CONFIG")
    if path:
        try:
            with open(path, "rb") as handle:
                merged.update(_flatten(tomllib.load(handle)))
        except FileNotFoundError:
            raise ConfigError(f"configuration file not found: {path}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"configuration file {path} is not valid TOML: {exc}") from None
    environ = os.environ if env is None else env
    for name, names in ENV_NAMES.items():
        for var in names:
            if environ.get(var):
                merged[name] = environ[var]
                break
    merged.update({k: v for k, v in flags.items() if v is not None})
    try:
        return Settings(**merged)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid configuration: {problems}") from None
