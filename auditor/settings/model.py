"""The settings as a value: every field, its default and its validation, and how it is said safely.

One `Settings` serves every platform and is read by every layer above the kernel. It imports no
platform and no registry: a platform owns the settings it alone uses (its `environment` module
names them and their variables), and the loading (`auditor.settings.load`) asks the registry for
them. Whether a platform name is one the registry knows is checked there too, when the settings
are loaded from their sources (`load_settings`); a `Settings` made directly is checked when the
registry is asked for its platform (`auditor.platforms.get`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from auditor.redact import redact_url

# One Settings serves every platform. Its defaults for the change log are DataHub's: its topics and
# its MAE consumer's group (auditor/platforms/datahub/naming.py takes them from here).
MCL_VERSIONED_TOPIC = "MetadataChangeLog_Versioned_v1"
MCL_TIMESERIES_TOPIC = "MetadataChangeLog_Timeseries_v1"
MAE_CONSUMER_GROUP = "generic-mae-consumer-job-client"


class StoreEntry(BaseModel):
    """One metadata store of a federation: its name and where its aspect table is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    url: SecretStr
    table: str = "metadata_aspect_v2"
    # the environment variable that holds its password (a URL naming a user only)
    password_env: str | None = None


class Settings(BaseModel):
    """Everything a scan needs to reach the backends and judge what it sees."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    store_url: SecretStr | None = None
    # the database password apart from the URL (DataHub's EBEAN_DATASOURCE_PASSWORD): it goes
    # into a store URL that names no password of its own; a password in the URL wins
    store_password: SecretStr | None = None
    store_table: str = "metadata_aspect_v2"
    search_url: str | None = None
    search_kind: Literal["auto", "opensearch", "elasticsearch"] = "auto"
    search_username: str | None = None
    search_password: SecretStr | None = None
    search_verify_certs: bool = True
    search_ca_certs: str | None = None
    # one request's timeout; a 429/5xx, timeout or dropped connection is retried with backoff
    search_timeout_seconds: float = Field(60.0, gt=0)
    search_retries: int = Field(5, ge=0, le=20)
    # other ways to authenticate than basic auth (docs/cloud.md): one of them at most
    search_api_key: SecretStr | None = None  # Elasticsearch: the encoded key, or id:key
    search_bearer_token: SecretStr | None = None
    search_cloud_id: str | None = None  # Elastic Cloud: stands for search_url
    search_client_cert: str | None = None  # PEM files for a cluster asking for client certificates
    search_client_key: str | None = None
    # AWS SigV4 (Amazon OpenSearch Service `es`, OpenSearch Serverless `aoss`), credentials from
    # the standard AWS chain (environment, profile, web identity / IRSA, instance role)
    search_aws_iam: bool = False
    search_aws_service: Literal["es", "aoss"] = "es"
    aws_region: str | None = None
    index_prefix: str = ""
    # which catalog the truth and the indices belong to; OpenMetadata's indices are named
    # `<cluster_alias>_<entity>_search_index` (elasticsearch.clusterAlias, empty by default)
    platform: str = "datahub"  # a name the platform registry knows (auditor.platforms)
    cluster_alias: str = ""
    # which release of the platform wrote the data (None: found from the data, docs/versions.md)
    platform_version: str | None = None
    # DataHub's GMS (its /config names the server's version); never required
    gms_url: str | None = None
    kafka_bootstrap: str | None = None
    kafka_security_protocol: str | None = None
    kafka_sasl_mechanism: str | None = None
    kafka_sasl_username: str | None = None
    kafka_sasl_password: SecretStr | None = None
    kafka_ssl_ca_location: str | None = None
    # mTLS: the client's certificate and key (PEM files), the key's password if it has one
    kafka_ssl_certificate_location: str | None = None
    kafka_ssl_key_location: str | None = None
    kafka_ssl_key_password: SecretStr | None = None
    kafka_ssl_endpoint_identification: bool = True  # check the broker's host name in its certificate
    # OAUTHBEARER with a token a sidecar keeps fresh in a file (re-read at every refresh); with
    # sasl_mechanism AWS_MSK_IAM the token is MSK's IAM one instead (aws-msk-iam-sasl-signer)
    kafka_oauthbearer_token_file: str | None = None
    kafka_aws_role_arn: str | None = None  # MSK IAM: a role to assume for the token
    schema_registry_url: str | None = None
    # kafka: a Confluent-compatible registry (DataHub's INTERNAL one is too, at GMS);
    # aws_glue: Glue-framed messages, schemas from the Glue registry
    schema_registry_type: Literal["kafka", "internal", "aws_glue"] = "kafka"
    schema_registry_user_info: SecretStr | None = None  # basic.auth.user.info: key:secret
    schema_registry_ca: str | None = None
    glue_registry_name: str | None = None
    glue_region: str | None = None  # the Glue registry's region (else aws_region, else us-east-1)
    # RDS/Aurora IAM: a fresh authentication token is each new connection's password
    store_aws_iam: bool = False
    # where the change log and the consumer offsets are: Kafka, or DataHub's pgQueue tables in
    # PostgreSQL (`<pgqueue_schema>.<pgqueue_table_prefix>_*`, in the store's database unless
    # pgqueue_url names another)
    transport: Literal["kafka", "pgqueue"] = "kafka"
    pgqueue_url: SecretStr | None = None
    pgqueue_schema: str = Field("queue", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
    pgqueue_table_prefix: str = Field("metadata_queue", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,40}$")
    mcl_versioned_topic: str = MCL_VERSIONED_TOPIC
    mcl_timeseries_topic: str = MCL_TIMESERIES_TOPIC
    mae_consumer_group: str = MAE_CONSUMER_GROUP
    grace_seconds: float = Field(300.0, ge=0)
    sample_window_seconds: float = Field(10.0, ge=0)
    # a write the consumer committed is searchable this much later: DataHub's bulk processor
    # flushes every second (ES_BULK_FLUSH_PERIOD) and the index refreshes every second
    index_visibility_seconds: float = Field(3.0, ge=0)
    # read the table and the indices in threads beside the join: overlaps the round trips to a
    # distant search cluster, but costs more than it saves where CPU is short (measured: the 100k
    # join 27 s with the threads, 18 s without, servers on the same 2 cores)
    scan_prefetch: bool = False
    # index streams a full scan reads in processes of their own, which fetch and decode the pages
    # while the scan checks the page before (None: as many as the cores, none on one core; 0: off)
    scan_readers: int | None = Field(None, ge=0)
    state_file: str = str(Path.home() / ".local" / "state" / "auditor" / "state.sqlite")
    # a federation: several stores feeding one index (`[[stores]]`, --store NAME=URL)
    stores: tuple[StoreEntry, ...] = ()
    # where each setting given came from (a flag, a variable, the file's key): for the refusals of
    # settings a platform or a combination does not use (auditor/settings/rules.py)
    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

    def source(self, name: str) -> str | None:
        """Where a setting was given ("the command line", a variable's name, "<file>: key"), or
        None when it was not (its default) or when these settings were not loaded from sources."""
        return self._sources.get(name)

    @field_validator("platform", mode="before")
    @classmethod
    def _known_platform(cls, value: Any, info: ValidationInfo) -> str:
        """A platform's name as the registry spells it; one it does not know is refused when the
        loading gives the registry's names (`platforms` in the validation's context)."""
        name = str(value or cls.model_fields["platform"].default).strip().lower()
        known = (info.context or {}).get("platforms")
        if known is not None and name not in known:
            raise ValueError(f"unknown platform {value!r} (one of: {', '.join(known)})")
        return name

    @field_validator("schema_registry_type", mode="before")
    @classmethod
    def _registry_type(cls, value: Any) -> Any:
        return str(value).strip().lower() if value is not None else "kafka"

    @field_validator("search_aws_service", mode="before")
    @classmethod
    def _aws_service(cls, value: Any) -> Any:
        return str(value).strip().lower() if value is not None else "es"

    @field_validator("platform_version", mode="before")
    @classmethod
    def _release_number(cls, value: Any) -> Any:
        """A release number (`1.4.0`, `v1.7.0.1`, `1.12.1-collate`): refused before anything connects."""
        if value is None or str(value).strip() == "":
            return None
        text_value = str(value).strip()
        if not re.match(r"^v?\d+(\.\d+)*([.-]?[A-Za-z0-9.]+)*$", text_value):
            raise ValueError(f"not a release number: {text_value!r} (e.g. 1.4.0 or v1.7.0.1)")
        return text_value

    @model_validator(mode="before")
    @classmethod
    def _password_into_url(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("transport"), str):  # DataHub writes it either way
            data = {**data, "transport": data["transport"].strip().lower()}
        if isinstance(data, dict) and data.get("store_url") and data.get("store_password"):
            url, password = (
                v.get_secret_value() if isinstance(v, SecretStr) else str(v)
                for v in (data["store_url"], data["store_password"])
            )
            data = {**data, "store_url": with_password(url, password)}
        return data

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            if name in ("search_url", "schema_registry_url", "gms_url") and isinstance(value, str):
                value = redact_url(value)
            yield name, value

    def describe(self) -> dict[str, str]:
        """Where the scan looked, safe to print: no password ever leaves this method."""
        out: dict[str, str] = {}
        if self.store_url is not None:
            out["store"] = redact_url(self.store_url.get_secret_value())
        for entry in self.stores:
            out[f"store.{entry.name}"] = redact_url(entry.url.get_secret_value())
        if self.search_url or self.search_cloud_id:
            cloud = (self.search_cloud_id or "").split(":", 1)[0]
            where = redact_url(self.search_url) if self.search_url else f"Elastic Cloud {cloud}"
            if self.search_aws_iam:
                where += f" (AWS SigV4, {self.search_aws_service}, {self.aws_region or 'no region'})"
            elif self.search_api_key:
                where += " (API key)"
            elif self.search_bearer_token:
                where += " (bearer token)"
            elif self.search_client_cert:
                where += " (client certificate)"
            out["search"] = where
        if self.transport == "pgqueue":
            url = self.pgqueue_url or self.store_url
            where = redact_url(url.get_secret_value()) if url is not None else "the store's database"
            out["pgqueue"] = f"{where} {self.pgqueue_schema}.{self.pgqueue_table_prefix}_*"
        elif self.kafka_bootstrap:
            out["kafka"] = self.kafka_bootstrap
        if self.schema_registry_type == "aws_glue":
            region = self.glue_region or self.aws_region or "us-east-1"
            out["schema_registry"] = f"AWS Glue registry {self.glue_registry_name or '(default)'} in {region}"
        elif self.schema_registry_url:
            out["schema_registry"] = redact_url(self.schema_registry_url)
        return out


def with_password(url: str, password: str) -> str:
    """`scheme://user@host/db` -> `scheme://user:<password, %-escaped>@host/db`; a URL that
    already names a password (or is no URL) is returned as it is."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority = rest.split("/", 1)[0].split("?", 1)[0]
    creds, at, _ = authority.rpartition("@")
    if at and ":" in creds:
        return url
    user = creds if at else ""
    host_and_path = rest[len(creds) + 1 :] if at else rest
    return f"{scheme}://{user}:{quote(password, safe='')}@{host_and_path}"
