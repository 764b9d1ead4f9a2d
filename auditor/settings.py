"""Configuration: defaults < TOML file < environment (AUDITOR_* and each platform's own names) < flags."""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from auditor import platforms
from auditor.errors import ConfigError
from auditor.redact import redact_url as redact_url  # re-exported: where most callers import it

# One Settings serves every platform. Its defaults for the change log are DataHub's: its topics and
# its MAE consumer's group (auditor/platforms/datahub/naming.py takes them from here).
MCL_VERSIONED_TOPIC = "MetadataChangeLog_Versioned_v1"
MCL_TIMESERIES_TOPIC = "MetadataChangeLog_Timeseries_v1"
MAE_CONSUMER_GROUP = "generic-mae-consumer-job-client"

# the auditor's own environment variable for each setting; after it, each platform's own names
# for the same setting are honoured (platforms/<name>/environment.py, in the registry's order)
ENV_NAMES: dict[str, tuple[str, ...]] = {
    "store_url": ("AUDITOR_STORE_URL",),
    "store_password": ("AUDITOR_STORE_PASSWORD",),
    "store_table": ("AUDITOR_STORE_TABLE",),
    "search_url": ("AUDITOR_SEARCH_URL",),
    "search_kind": ("AUDITOR_SEARCH_KIND",),
    "search_username": ("AUDITOR_SEARCH_USERNAME",),
    "search_password": ("AUDITOR_SEARCH_PASSWORD",),
    "search_verify_certs": ("AUDITOR_SEARCH_VERIFY_CERTS",),
    "search_ca_certs": ("AUDITOR_SEARCH_CA_CERTS",),
    "search_timeout_seconds": ("AUDITOR_SEARCH_TIMEOUT",),
    "search_api_key": ("AUDITOR_SEARCH_API_KEY",),
    "search_bearer_token": ("AUDITOR_SEARCH_BEARER_TOKEN",),
    "search_cloud_id": ("AUDITOR_SEARCH_CLOUD_ID",),
    "search_client_cert": ("AUDITOR_SEARCH_CLIENT_CERT",),
    "search_client_key": ("AUDITOR_SEARCH_CLIENT_KEY",),
    "search_aws_iam": ("AUDITOR_SEARCH_AWS_IAM",),
    "search_aws_service": ("AUDITOR_SEARCH_AWS_SERVICE",),
    "aws_region": ("AUDITOR_AWS_REGION",),
    "search_retries": ("AUDITOR_SEARCH_RETRIES",),
    "index_prefix": ("AUDITOR_INDEX_PREFIX",),
    "kafka_bootstrap": ("AUDITOR_KAFKA_BOOTSTRAP",),
    "kafka_security_protocol": ("AUDITOR_KAFKA_SECURITY_PROTOCOL",),
    "kafka_sasl_mechanism": ("AUDITOR_KAFKA_SASL_MECHANISM",),
    "kafka_sasl_username": ("AUDITOR_KAFKA_SASL_USERNAME",),
    "kafka_sasl_password": ("AUDITOR_KAFKA_SASL_PASSWORD",),
    "kafka_ssl_ca_location": ("AUDITOR_KAFKA_SSL_CA_LOCATION",),
    "kafka_ssl_certificate_location": ("AUDITOR_KAFKA_SSL_CERTIFICATE_LOCATION",),
    "kafka_ssl_key_location": ("AUDITOR_KAFKA_SSL_KEY_LOCATION",),
    "kafka_ssl_key_password": ("AUDITOR_KAFKA_SSL_KEY_PASSWORD",),
    "kafka_ssl_endpoint_identification": ("AUDITOR_KAFKA_SSL_ENDPOINT_IDENTIFICATION",),
    "kafka_oauthbearer_token_file": ("AUDITOR_KAFKA_OAUTHBEARER_TOKEN_FILE",),
    "kafka_aws_role_arn": ("AUDITOR_KAFKA_AWS_ROLE_ARN",),
    "schema_registry_url": ("AUDITOR_SCHEMA_REGISTRY_URL",),
    "schema_registry_type": ("AUDITOR_SCHEMA_REGISTRY_TYPE",),
    "schema_registry_user_info": ("AUDITOR_SCHEMA_REGISTRY_USER_INFO",),
    "schema_registry_ca": ("AUDITOR_SCHEMA_REGISTRY_CA",),
    "glue_registry_name": ("AUDITOR_GLUE_REGISTRY_NAME",),
    "glue_region": ("AUDITOR_GLUE_REGION",),
    "store_aws_iam": ("AUDITOR_STORE_AWS_IAM",),
    "transport": ("AUDITOR_TRANSPORT",),  # kafka | pgqueue (docs/pgqueue.md)
    "pgqueue_url": ("AUDITOR_PGQUEUE_URL",),
    "pgqueue_schema": ("AUDITOR_PGQUEUE_SCHEMA",),
    "pgqueue_table_prefix": ("AUDITOR_PGQUEUE_TABLE_PREFIX",),
    "mcl_versioned_topic": ("AUDITOR_MCL_VERSIONED_TOPIC",),
    "mcl_timeseries_topic": ("AUDITOR_MCL_TIMESERIES_TOPIC",),
    "mae_consumer_group": ("AUDITOR_MAE_CONSUMER_GROUP",),
    "platform": ("AUDITOR_PLATFORM",),  # datahub | openmetadata (docs/openmetadata.md)
    "cluster_alias": ("AUDITOR_CLUSTER_ALIAS",),
    "platform_version": ("AUDITOR_PLATFORM_VERSION",),
    "gms_url": ("AUDITOR_GMS_URL",),
    "grace_seconds": ("AUDITOR_GRACE_SECONDS",),
    "sample_window_seconds": ("AUDITOR_SAMPLE_WINDOW_SECONDS",),
    "index_visibility_seconds": ("AUDITOR_INDEX_VISIBILITY_SECONDS",),
    "scan_prefetch": ("AUDITOR_SCAN_PREFETCH",),
    "scan_readers": ("AUDITOR_SCAN_READERS",),
    "state_file": ("AUDITOR_STATE_FILE",),
    "stores": ("AUDITOR_STORES",),  # a federation: "NAME=URL NAME=URL" (see docs/federation.md)
}

# after the auditor's own and before any platform's: the names every AWS SDK reads (one region
# for every AWS service the auditor signs for)
STANDARD_NAMES: dict[str, tuple[str, ...]] = {"aws_region": ("AWS_REGION", "AWS_DEFAULT_REGION")}


# a federation store's name: it labels findings, report columns and Prometheus series
STORE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}")


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
    # settings a platform or a combination does not use (auditor/settings_rules.py)
    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

    def source(self, name: str) -> str | None:
        """Where a setting was given ("the command line", a variable's name, "<file>: key"), or
        None when it was not (its default) or when these settings were not loaded from sources."""
        return self._sources.get(name)

    @field_validator("platform", mode="before")
    @classmethod
    def _known_platform(cls, value: Any) -> str:
        name = str(value or platforms.DEFAULT).strip().lower()
        if name not in platforms.names():
            raise ValueError(f"unknown platform {value!r} (one of: {', '.join(platforms.names())})")
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


# settings that may hold a secret: each can also be read from a file (`<VAR>_FILE` in the
# environment, `<key>_file` in the TOML file), as container secrets are mounted
SECRETS = (
    "store_url",
    "store_password",
    "search_password",
    "search_api_key",
    "search_bearer_token",
    "kafka_sasl_password",
    "kafka_ssl_key_password",
    "schema_registry_user_info",
    "schema_registry_url",
    "pgqueue_url",
)


def _flatten(data: dict[str, Any], prefix: str = "", spelled: dict[str, str] | None = None) -> dict[str, Any]:
    """`[store] url = ...` -> `store_url`; `spelled` keeps each flat key's own spelling for errors."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}".replace("-", "_")
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}_", spelled))
            if spelled is not None:
                for inner in list(spelled):
                    if inner.startswith(f"{name}_") and spelled[inner].count(".") == 0:
                        spelled[inner] = f"{key}.{spelled[inner]}"
        else:
            out[name] = value
            if spelled is not None:
                spelled[name] = str(key)
    return out


def _read_secret(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").rstrip("\r\n")
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read the secret file {path}: {exc.strerror}") from None


def _nearest(name: str) -> str | None:
    """The valid key closest to a misspelt one (`<secret>_file` keys included)."""
    from difflib import get_close_matches

    keys = [*Settings.model_fields, *(f"{k}_file" for k in SECRETS)]
    found = get_close_matches(name, keys, n=1, cutoff=0.6)
    return found[0] if found else None


def env_names(environments: Sequence[Any]) -> dict[str, tuple[str, ...]]:
    """Per setting, the environment variables read for it, most specific first: the auditor's
    own, then each platform's own (`NAMES` of its environment module)."""
    out = {name: list(names) for name, names in ENV_NAMES.items()}
    for name, names in STANDARD_NAMES.items():
        out.setdefault(name, []).extend(names)
    for environment in environments:
        for name, names in environment.NAMES.items():
            out.setdefault(name, []).extend(n for n in names if n not in out[name])
    return {name: tuple(names) for name, names in out.items()}


def load_settings(
    config_file: str | Path | None = None,
    env: dict[str, str] | None = None,
    **flags: Any,
) -> Settings:
    """Merge defaults < file (`[store] url = ...` or flat keys) < environment < flags.

    A secret may come from a file instead: `AUDITOR_STORE_URL_FILE=/run/secrets/db` (any of a
    secret's variables with `_FILE`), or `url_file = "..."` in the TOML file. The database
    password may be kept apart from the URL: EBEAN_DATASOURCE_PASSWORD (or AUDITOR_STORE_PASSWORD,
    either with `_FILE`) or `[store] password_file`, for a URL that names only the user.
    """
    merged: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    environ = os.environ if env is None else env
    path = config_file or environ.get("AUDITOR_CONFIG")
    if path:
        try:
            with open(path, "rb") as handle:
                merged.update(_flatten(tomllib.load(handle), spelled=spelled))
        except FileNotFoundError:
            raise ConfigError(f"configuration file not found: {path}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"configuration file {path} is not valid TOML: {exc}") from None
        for name in SECRETS:
            file_key = f"{name}_file"
            if file_key in merged:
                merged[name] = _read_secret(
                    str(merged.pop(file_key)), f"{path}: {spelled.get(file_key, file_key)}"
                )
        unknown = sorted(k for k in merged if k not in Settings.model_fields)
        if unknown:
            hints = []
            for key in unknown:
                near = _nearest(key)
                shown = spelled.get(key, key)
                hints.append(
                    f"{shown!r}" + (f" (did you mean {_spell_like(near, shown)!r}?)" if near else "")
                )
            raise ConfigError(
                f"configuration file {path}: unknown key {', '.join(hints)}",
                hint="every key is listed in docs/auditor.example.toml",
            )
    from_file = set(merged)
    sources = {k: f"{path}: {spelled.get(k, k)}" for k in merged}
    environments = platforms.environments()
    for name, names in env_names(environments).items():
        for var in names:
            if environ.get(var):
                merged[name], sources[name] = environ[var], var
                break
            if name in SECRETS and environ.get(f"{var}_FILE"):
                merged[name] = _read_secret(environ[f"{var}_FILE"], f"{var}_FILE")
                sources[name] = f"{var}_FILE"
                break
    for environment in environments:  # a platform's own rules (DataHub's per-hook group)
        adjust = getattr(environment, "adjust", None)
        if adjust is not None:
            adjust(merged, environ, from_file)
    given = {k: v for k, v in flags.items() if v is not None}
    merged.update(given)
    sources.update(dict.fromkeys(given, "the command line"))
    if merged.get("stores"):
        merged["stores"] = store_entries(merged["stores"], environ)
        if merged.get("store_url"):
            raise ConfigError(
                "both a store URL and a federation of stores are configured",
                hint="give either --store-url / [store] url or --store NAME=URL / [[stores]], not both",
            )
    try:
        settings = Settings(**merged)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid configuration: {problems}") from None
    settings._sources.update({k: v for k, v in sources.items() if k in settings.model_fields_set})
    from auditor.settings_rules import refuse_idle_combinations

    refuse_idle_combinations(settings)
    return settings


def _spell_like(field: str, shown: str) -> str:
    """`store_url` shown as `store.url` when the user wrote a section."""
    if "." in shown:
        section = shown.split(".", 1)[0]
        if field.startswith(f"{section}_"):
            return f"{section}.{field[len(section) + 1 :]}"
    return field


def store_entries(value: Any, environ: Any) -> list[StoreEntry]:
    """A federation's stores from `[[stores]]` tables or `NAME=URL` texts (a flag, AUDITOR_STORES):
    names checked (a simple identifier, unique), each `password_env` read from the environment."""
    items = value.split() if isinstance(value, str) else list(value)
    out: list[StoreEntry] = []
    for item in items:
        if isinstance(item, str):
            name, sep, url = item.partition("=")
            if not sep or not url:
                raise ConfigError(
                    f"a store must be given as NAME=URL, not {redact_url(item)!r}",
                    hint="e.g. --store teama=postgresql+psycopg://user@host/datahub",
                )
            item = {"name": name, "url": url}
        if not isinstance(item, dict):
            raise ConfigError("[[stores]]: each store is a table with name and url")
        name = str(item.get("name", ""))
        if not STORE_NAME.fullmatch(name):
            raise ConfigError(
                f"store name {name!r} is not a simple identifier",
                hint="a letter, then letters, digits, '_' or '-' (at most 63): it labels findings",
            )
        if any(e.name == name for e in out):
            raise ConfigError(f"store name {name!r} is given twice", hint="each store needs its own name")
        try:
            entry = StoreEntry(**item)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"store {name!r}: {problems}") from None
        if entry.password_env:
            password = environ.get(entry.password_env)
            if not password:
                raise ConfigError(
                    f"store {name!r}: the environment variable {entry.password_env} is not set",
                    hint="password_env names the variable that holds the store's password",
                )
            url = with_password(entry.url.get_secret_value(), password)
            entry = entry.model_copy(update={"url": SecretStr(url)})
        out.append(entry)
    return out
