"""The plan of `auditor config init`: a commented TOML configuration from DataHub's own environment variables.

Where DataHub reads each variable (datahub-project/datahub, looked up for this command):

* metadata-service/configuration/src/main/resources/application.yaml
  - `ebean.url: ${EBEAN_DATASOURCE_URL:jdbc:mysql://localhost:3306/datahub}` (a JDBC URL),
    `ebean.username: ${EBEAN_DATASOURCE_USERNAME:datahub}`, `ebean.password:
    ${EBEAN_DATASOURCE_PASSWORD:datahub}`, `ebean.driver: ${EBEAN_DATASOURCE_DRIVER:com.mysql.jdbc.Driver}`
  - `elasticsearch.host: ${ELASTICSEARCH_HOST:localhost}`, `port: ${ELASTICSEARCH_PORT:9200}`,
    `useSSL: ${ELASTICSEARCH_USE_SSL:false}`, `username/password: ${ELASTICSEARCH_USERNAME}` /
    `${ELASTICSEARCH_PASSWORD}`, `pathPrefix: ${ELASTICSEARCH_PATH_PREFIX}`, `implementation:
    ${ELASTICSEARCH_IMPLEMENTATION:elasticsearch}`, `sslContext.trustStoreFile:
    ${ELASTICSEARCH_SSL_TRUSTSTORE_FILE}`, `index.prefix: ${INDEX_PREFIX:}`
  - `kafka.bootstrapServers: ${KAFKA_BOOTSTRAP_SERVER:http://localhost:9092}`,
    `kafka.schemaRegistry.type: ${SCHEMA_REGISTRY_TYPE:KAFKA}` (INTERNAL, KAFKA or AWS_GLUE),
    `kafka.schemaRegistry.url: ${KAFKA_SCHEMAREGISTRY_URL:http://localhost:8081}`,
    `spring.kafka.security.protocol: ${KAFKA_PROPERTIES_SECURITY_PROTOCOL:PLAINTEXT}`
  - `updateIndices.consumerGroupSuffix: ${UPDATE_INDICES_CONSUMER_GROUP_SUFFIX:}`
* The topic names and the MAE consumer group are not in application.yaml but in `@Value`s, e.g.
  metadata-jobs/mae-consumer/src/main/java/com/linkedin/metadata/kafka/MCLKafkaListenerRegistrar.java:
  `${METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID:generic-mae-consumer-job-client}`,
  `${METADATA_CHANGE_LOG_VERSIONED_TOPIC_NAME:MetadataChangeLog_Versioned_v1}`,
  `${METADATA_CHANGE_LOG_TIMESERIES_TOPIC_NAME:MetadataChangeLog_Timeseries_v1}`; and
  metadata-jobs/common/src/main/java/com/linkedin/metadata/kafka/listener/AbstractKafkaListenerRegistrar.java
  groups the hooks by their consumerGroupSuffix, each group consuming as `<base>-<suffix>` (`<base>` for
  an empty suffix): the UpdateIndicesHook, which writes the search documents, is `base[-suffix]`.

No secret is ever written: the file names the variables the auditor reads them from at run time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from auditor.core.jdbc import env_bool, jdbc_to_sqlalchemy
from auditor.errors import ConfigError

# the placeholders of docs/auditor.example.toml, used for a variable that is not set
EXAMPLE = {
    "store_url": "mysql+pymysql://datahub@mysql:3306/datahub",
    "search_host": "opensearch",
    "search_port": "9200",
    "kafka_bootstrap": "broker:9092",
    "schema_registry_url": "http://schema-registry:8081",
    "state_file": "/var/lib/auditor/state.sqlite",
}
# DataHub's own defaults (application.yaml / the @Values above)
MCL_VERSIONED = "MetadataChangeLog_Versioned_v1"
MCL_TIMESERIES = "MetadataChangeLog_Timeseries_v1"
MAE_GROUP = "generic-mae-consumer-job-client"


@dataclass
class Entry:
    """One `key = value` line (commented out when value is None) and where it came from."""

    key: str
    value: str | bool | float | None
    source: str
    notes: list[str] = field(default_factory=list)
    example: str | bool | float | None = None  # shown for a commented-out entry


@dataclass(frozen=True)
class Secret:
    """A secret the file leaves out: the variable the auditor reads it from at run time."""

    what: str
    var: str
    also: str  # the other ways to give it
    is_set: bool  # set in the environment `config init` ran in


@dataclass
class Plan:
    sections: dict[str, list[Entry]]  # "" is the top level
    secrets: list[Secret]
    warnings: list[str]


def _get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _strip_userinfo(url: str) -> tuple[str, bool]:
    scheme, sep, rest = url.partition("://")
    authority = rest.split("/", 1)[0]
    if sep and "@" in authority:
        return f"{scheme}://{rest[authority.rindex('@') + 1 :]}", True
    return url, False


def plan(env: Mapping[str, str]) -> Plan:
    """What `config init` writes for this environment (nothing secret in it)."""
    sections: dict[str, list[Entry]] = {
        k: [] for k in ("", "store", "search", "kafka", "schema_registry", "mcl", "mae")
    }
    secrets: list[Secret] = []
    warnings: list[str] = []

    def secret(what: str, var: str, also: str) -> None:
        secrets.append(Secret(what, var, also, bool(_get(env, var) or _get(env, f"{var}_FILE"))))

    # top level
    state = _get(env, "AUDITOR_STATE_FILE")
    sections[""].append(
        Entry(
            "state_file",
            state,
            "AUDITOR_STATE_FILE"
            if state
            else "AUDITOR_STATE_FILE unset: the auditor's default, ~/.local/state/auditor/state.sqlite",
            example=EXAMPLE["state_file"],
        )
    )
    prefix = _get(env, "INDEX_PREFIX")
    sections[""].append(
        Entry(
            "index_prefix",
            prefix or "",
            "INDEX_PREFIX" if prefix else "INDEX_PREFIX unset: DataHub's default (none)",
        )
    )
    from auditor.settings import Settings

    for key in ("grace_seconds", "sample_window_seconds", "index_visibility_seconds"):
        default = Settings.model_fields[key].default
        sections[""].append(Entry(key, None, "the auditor's default", example=default))

    # store
    jdbc = _get(env, "EBEAN_DATASOURCE_URL")
    driver = _get(env, "EBEAN_DATASOURCE_DRIVER")
    username = _get(env, "EBEAN_DATASOURCE_USERNAME")
    if jdbc:
        target = jdbc_to_sqlalchemy(jdbc, username, driver)
        used = ["EBEAN_DATASOURCE_URL"] + [
            n for n, v in (("EBEAN_DATASOURCE_USERNAME", username), ("EBEAN_DATASOURCE_DRIVER", driver)) if v
        ]
        sections["store"].append(Entry("url", target.url, ", ".join(used), list(target.notes)))
    else:
        url = EXAMPLE["store_url"]
        if username:
            url = url.replace("//datahub@", f"//{username}@", 1)
        src = "EBEAN_DATASOURCE_URL unset: example default" + (
            ", user EBEAN_DATASOURCE_USERNAME" if username else ""
        )
        sections["store"].append(Entry("url", url, src))
        warnings.append("EBEAN_DATASOURCE_URL is not set: [store] url is the example's placeholder")
    sections["store"].append(Entry("table", "metadata_aspect_v2", "DataHub's aspect table"))
    secret(
        "database password",
        "EBEAN_DATASOURCE_PASSWORD",
        "AUDITOR_STORE_PASSWORD, EBEAN_DATASOURCE_PASSWORD_FILE=path, [store] password_file",
    )

    # search
    host, port = _get(env, "ELASTICSEARCH_HOST"), _get(env, "ELASTICSEARCH_PORT")
    use_ssl, path = _get(env, "ELASTICSEARCH_USE_SSL"), _get(env, "ELASTICSEARCH_PATH_PREFIX")
    notes = []
    scheme = "https" if env_bool(use_ssl) else "http"
    if host and "://" in host:
        scheme, _, host = host.partition("://")
        notes.append(f"ELASTICSEARCH_HOST names its scheme: {scheme}")
    if host:
        host, had_creds = _strip_userinfo(f"x://{host}")
        host = host[4:].rstrip("/")
        if had_creds:
            notes.append("ELASTICSEARCH_HOST carried credentials: not written")
    if port and not port.isdigit():
        raise ConfigError(f"ELASTICSEARCH_PORT is not a port number: {port!r}")
    search_url = f"{scheme}://{host or EXAMPLE['search_host']}:{port or EXAMPLE['search_port']}"
    if path:
        search_url += "/" + path.strip("/")
    search_src = [
        "ELASTICSEARCH_HOST" if host else "ELASTICSEARCH_HOST unset: example default",
        "ELASTICSEARCH_PORT" if port else "ELASTICSEARCH_PORT unset: 9200",
        "ELASTICSEARCH_USE_SSL" if use_ssl else "ELASTICSEARCH_USE_SSL unset: DataHub's default (false)",
    ] + (["ELASTICSEARCH_PATH_PREFIX"] if path else [])
    sections["search"].append(Entry("url", search_url, ", ".join(search_src), notes))
    if not host:
        warnings.append("ELASTICSEARCH_HOST is not set: [search] url is the example's placeholder")
    impl = _get(env, "ELASTICSEARCH_IMPLEMENTATION")
    sections["search"].append(
        Entry(
            "kind",
            "auto",
            "detected at run time",
            [f"ELASTICSEARCH_IMPLEMENTATION={impl}: DataHub's query dialect, not proof of the server's kind"]
            if impl
            else [],
        )
    )
    es_user = _get(env, "ELASTICSEARCH_USERNAME")
    sections["search"].append(
        Entry(
            "username",
            es_user,
            "ELASTICSEARCH_USERNAME" if es_user else "ELASTICSEARCH_USERNAME unset: no auth",
            example="datahub",
        )
    )
    if scheme == "https":
        truststore = _get(env, "ELASTICSEARCH_SSL_TRUSTSTORE_FILE")
        sections["search"].append(Entry("verify_certs", True, "https: certificates are verified"))
        sections["search"].append(
            Entry(
                "ca_certs",
                None,
                "the system's CAs unless set",
                ["ELASTICSEARCH_SSL_TRUSTSTORE_FILE is a Java truststore: export its CA as PEM here"]
                if truststore
                else [],
                example="/etc/ssl/certs/ca-certificates.crt",
            )
        )
    if es_user:
        secret(
            "search password",
            "ELASTICSEARCH_PASSWORD",
            "AUDITOR_SEARCH_PASSWORD, ELASTICSEARCH_PASSWORD_FILE=path, [search] password_file",
        )

    # kafka
    bootstrap = _get(env, "KAFKA_BOOTSTRAP_SERVER")
    notes = []
    if bootstrap:
        servers = [s.strip() for s in bootstrap.split(",") if s.strip()]
        bare = [s.split("://", 1)[-1] for s in servers]
        if bare != servers:
            notes.append("scheme prefixes dropped (librdkafka wants host:port)")
        bootstrap = ",".join(bare)
    sections["kafka"].append(
        Entry(
            "bootstrap",
            bootstrap or EXAMPLE["kafka_bootstrap"],
            "KAFKA_BOOTSTRAP_SERVER" if bootstrap else "KAFKA_BOOTSTRAP_SERVER unset: example default",
            notes,
        )
    )
    for key, names, example, unset in (
        (
            "security_protocol",
            ("KAFKA_PROPERTIES_SECURITY_PROTOCOL", "SPRING_KAFKA_PROPERTIES_SECURITY_PROTOCOL"),
            "SASL_SSL",
            "PLAINTEXT",
        ),
        (
            "sasl_mechanism",
            ("KAFKA_PROPERTIES_SASL_MECHANISM", "SPRING_KAFKA_PROPERTIES_SASL_MECHANISM"),
            "PLAIN",
            "no SASL",
        ),
    ):
        name = next((n for n in names if _get(env, n)), None)
        sections["kafka"].append(
            Entry(
                key,
                _get(env, name) if name else None,
                name or f"{names[0]} unset: {unset}",
                example=example,
            )
        )
    jaas_name = next(
        (
            n
            for n in ("SPRING_KAFKA_PROPERTIES_SASL_JAAS_CONFIG", "KAFKA_PROPERTIES_SASL_JAAS_CONFIG")
            if _get(env, n)
        ),
        None,
    )
    jaas_user = re.search(r'username\s*=\s*"([^"]*)"', _get(env, jaas_name) or "") if jaas_name else None
    sections["kafka"].append(
        Entry(
            "sasl_username",
            jaas_user.group(1) if jaas_user else None,
            f"{jaas_name} (its username only)" if jaas_user else "no SASL JAAS config set",
            example="auditor",
        )
    )
    if jaas_name:
        secret(
            "Kafka SASL password",
            "AUDITOR_KAFKA_SASL_PASSWORD",
            f"AUDITOR_KAFKA_SASL_PASSWORD_FILE=path, [kafka] sasl_password_file; {jaas_name} is not read",
        )

    # schema registry
    registry = _get(env, "KAFKA_SCHEMAREGISTRY_URL")
    registry_type = (_get(env, "SCHEMA_REGISTRY_TYPE") or "KAFKA").upper()
    if registry_type == "AWS_GLUE":
        sections["schema_registry"].append(
            Entry(
                "url",
                None,
                "SCHEMA_REGISTRY_TYPE=AWS_GLUE",
                [
                    "the auditor reads a Confluent-compatible registry only: "
                    "without one, MCL contents are not read"
                ],
                example=EXAMPLE["schema_registry_url"],
            )
        )
    else:
        notes = []
        if registry:
            registry, had_creds = _strip_userinfo(registry)
            if had_creds:
                notes.append(
                    "credentials in KAFKA_SCHEMAREGISTRY_URL not written: set the full URL at run time"
                )
                secret(
                    "schema registry URL with its credentials",
                    "KAFKA_SCHEMAREGISTRY_URL",
                    "KAFKA_SCHEMAREGISTRY_URL_FILE=path, [schema_registry] url_file",
                )
        elif registry_type == "INTERNAL":
            notes.append(
                "SCHEMA_REGISTRY_TYPE=INTERNAL: GMS serves it at http://GMS:8080/schema-registry/api/"
            )
        sections["schema_registry"].append(
            Entry(
                "url",
                registry or EXAMPLE["schema_registry_url"],
                "KAFKA_SCHEMAREGISTRY_URL" if registry else "KAFKA_SCHEMAREGISTRY_URL unset: example default",
                notes,
            )
        )

    # topics and the consumer group
    for key, name, datahub_default in (
        ("versioned_topic", "METADATA_CHANGE_LOG_VERSIONED_TOPIC_NAME", MCL_VERSIONED),
        ("timeseries_topic", "METADATA_CHANGE_LOG_TIMESERIES_TOPIC_NAME", MCL_TIMESERIES),
    ):
        value = _get(env, name)
        sections["mcl"].append(
            Entry(key, value or datahub_default, name if value else f"{name} unset: DataHub's default")
        )
    base = _get(env, "METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID")
    suffix = _get(env, "UPDATE_INDICES_CONSUMER_GROUP_SUFFIX")
    group = (base or MAE_GROUP) + (f"-{suffix}" if suffix else "")
    src = (
        "METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID"
        if base
        else "METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID unset: DataHub's default"
    )
    notes = ["the group of DataHub's UpdateIndicesHook: base[-UPDATE_INDICES_CONSUMER_GROUP_SUFFIX]"]
    if suffix:
        src += " + UPDATE_INDICES_CONSUMER_GROUP_SUFFIX"
        notes.append(
            "at run time METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID in the environment (the base) "
            "overrides this: run the auditor without it"
        )
    sections["mae"].append(Entry("consumer_group", group, src, notes))
    return Plan(sections, secrets, warnings)


def toml_value(value: str | bool | float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def render(p: Plan, now: datetime | None = None) -> str:
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        f"# auditor configuration, written by `auditor config init` on {stamp} from DataHub's",
        "# environment variables (as set for GMS / datahub-upgrade). Each line says where its value",
        "# came from; every key is described in docs/auditor.example.toml and docs/configuration.md.",
        "# Precedence at run time: flags > environment > this file > defaults.",
        "#",
        "# No secret is in this file. At run time the auditor reads them from the environment:",
        *(f"#   {s.what}: {s.var} (or {s.also})" for s in p.secrets),
        "",
    ]
    for section, entries in p.sections.items():
        if not entries:
            continue
        if section:
            out.append(f"[{section}]")
        for e in entries:
            out.extend(f"# {n}" for n in e.notes)
            if e.value is None:
                shown = f" = {toml_value(e.example)}" if e.example is not None else ""
                out.append(f"# {e.key}{shown}   # {e.source}")
            else:
                out.append(f"{e.key} = {toml_value(e.value)}   # {e.source}")
        out.append("")
    return "\n".join(out)
