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
  - `datahub.messaging.transport: ${DATAHUB_MESSAGING_TRANSPORT:kafka}` (`pgqueue`: no Kafka, the
    change log and the consumer offsets in PostgreSQL tables, docs/pgqueue-design.md), with
    `postgres.pgQueue.schema: ${DATAHUB_PGQUEUE_SCHEMA:queue}` and `tablePrefix:
    ${DATAHUB_PGQUEUE_TABLE_PREFIX:metadata_queue}`
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

import re
from collections.abc import Mapping
from datetime import datetime

from auditor.core.config_plan import Entry, Plan, Planning
from auditor.core.config_plan import render as render_plan
from auditor.errors import ConfigError
from auditor.platforms.datahub.jdbc import env_bool, jdbc_to_sqlalchemy
from auditor.platforms.datahub.naming import MAE_CONSUMER_GROUP, MCL_TIMESERIES_TOPIC, MCL_VERSIONED_TOPIC

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
MCL_VERSIONED = MCL_VERSIONED_TOPIC
MCL_TIMESERIES = MCL_TIMESERIES_TOPIC
MAE_GROUP = MAE_CONSUMER_GROUP


SECTIONS = ("", "aws", "store", "search", "kafka", "pgqueue", "schema_registry", "glue", "mcl", "mae")


class _Planning(Planning):
    """What `plan` builds while it reads the environment, in DataHub's sections."""

    def __init__(self, env: Mapping[str, str]) -> None:
        super().__init__(env, {k: [] for k in SECTIONS})


def _strip_userinfo(url: str) -> tuple[str, bool]:
    scheme, sep, rest = url.partition("://")
    authority = rest.split("/", 1)[0]
    if sep and "@" in authority:
        return f"{scheme}://{rest[authority.rindex('@') + 1 :]}", True
    return url, False


def plan(env: Mapping[str, str]) -> Plan:
    """What `config init` writes for this environment (nothing secret in it), section by section."""
    b = _Planning(env)
    for section in (_top_level, _store, _search, _kafka, _schema_registry, _topics_and_group):
        section(b)
    from auditor.platforms.datahub.config.pgqueue import transport

    transport(b)
    from auditor.platforms.datahub.config.cloud import cloud

    cloud(b)
    return b.plan()


def _top_level(b: _Planning) -> None:
    """The top level: the state file, the index prefix, the judging defaults."""
    state = b.get("AUDITOR_STATE_FILE")
    b.sections[""].append(
        Entry(
            "state_file",
            state,
            "AUDITOR_STATE_FILE"
            if state
            else "AUDITOR_STATE_FILE unset: the auditor's default, ~/.local/state/auditor/state.sqlite",
            example=EXAMPLE["state_file"],
        )
    )
    prefix = b.get("INDEX_PREFIX")
    b.sections[""].append(
        Entry(
            "index_prefix",
            prefix or "",
            "INDEX_PREFIX" if prefix else "INDEX_PREFIX unset: DataHub's default (none)",
        )
    )
    from auditor.settings.model import Settings

    for key in ("grace_seconds", "sample_window_seconds", "index_visibility_seconds"):
        default = Settings.model_fields[key].default
        b.sections[""].append(Entry(key, None, "the auditor's default", example=default))


def _store(b: _Planning) -> None:
    """[store]: the JDBC URL read as a SQLAlchemy URL; its password left in the environment."""
    jdbc = b.get("EBEAN_DATASOURCE_URL")
    driver = b.get("EBEAN_DATASOURCE_DRIVER")
    username = b.get("EBEAN_DATASOURCE_USERNAME")
    if jdbc:
        target = jdbc_to_sqlalchemy(jdbc, username, driver)
        used = ["EBEAN_DATASOURCE_URL"] + [
            n for n, v in (("EBEAN_DATASOURCE_USERNAME", username), ("EBEAN_DATASOURCE_DRIVER", driver)) if v
        ]
        b.sections["store"].append(Entry("url", target.url, ", ".join(used), list(target.notes)))
    else:
        url = EXAMPLE["store_url"]
        if username:
            url = url.replace("//datahub@", f"//{username}@", 1)
        src = "EBEAN_DATASOURCE_URL unset: example default" + (
            ", user EBEAN_DATASOURCE_USERNAME" if username else ""
        )
        b.sections["store"].append(Entry("url", url, src))
        b.warnings.append("EBEAN_DATASOURCE_URL is not set: [store] url is the example's placeholder")
    b.sections["store"].append(Entry("table", "metadata_aspect_v2", "DataHub's aspect table"))
    b.secret(
        "database password",
        "EBEAN_DATASOURCE_PASSWORD",
        "AUDITOR_STORE_PASSWORD, EBEAN_DATASOURCE_PASSWORD_FILE=path, [store] password_file",
    )


def _search(b: _Planning) -> None:
    """[search]: the URL from host, port, TLS and path prefix; kind, user, CA."""
    host, port = b.get("ELASTICSEARCH_HOST"), b.get("ELASTICSEARCH_PORT")
    use_ssl, path = b.get("ELASTICSEARCH_USE_SSL"), b.get("ELASTICSEARCH_PATH_PREFIX")
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
    b.sections["search"].append(Entry("url", search_url, ", ".join(search_src), notes))
    if not host:
        b.warnings.append("ELASTICSEARCH_HOST is not set: [search] url is the example's placeholder")
    impl = b.get("ELASTICSEARCH_IMPLEMENTATION")
    b.sections["search"].append(
        Entry(
            "kind",
            "auto",
            "detected at run time",
            [f"ELASTICSEARCH_IMPLEMENTATION={impl}: DataHub's query dialect, not proof of the server's kind"]
            if impl
            else [],
        )
    )
    es_user = b.get("ELASTICSEARCH_USERNAME")
    b.sections["search"].append(
        Entry(
            "username",
            es_user,
            "ELASTICSEARCH_USERNAME" if es_user else "ELASTICSEARCH_USERNAME unset: no auth",
            example="datahub",
        )
    )
    if scheme == "https":
        b.search_tls("ELASTICSEARCH_SSL_TRUSTSTORE_FILE")
    if es_user:
        b.secret(
            "search password",
            "ELASTICSEARCH_PASSWORD",
            "AUDITOR_SEARCH_PASSWORD, ELASTICSEARCH_PASSWORD_FILE=path, [search] password_file",
        )


def _kafka(b: _Planning) -> None:
    """[kafka]: the bootstrap servers, the security protocol and SASL (its user only)."""
    bootstrap = b.get("KAFKA_BOOTSTRAP_SERVER")
    notes = []
    if bootstrap:
        servers = [s.strip() for s in bootstrap.split(",") if s.strip()]
        bare = [s.split("://", 1)[-1] for s in servers]
        if bare != servers:
            notes.append("scheme prefixes dropped (librdkafka wants host:port)")
        bootstrap = ",".join(bare)
    b.sections["kafka"].append(
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
        name = next((n for n in names if b.get(n)), None)
        b.sections["kafka"].append(
            Entry(
                key,
                b.get(name) if name else None,
                name or f"{names[0]} unset: {unset}",
                example=example,
            )
        )
    jaas_name = next(
        (
            n
            for n in ("SPRING_KAFKA_PROPERTIES_SASL_JAAS_CONFIG", "KAFKA_PROPERTIES_SASL_JAAS_CONFIG")
            if b.get(n)
        ),
        None,
    )
    jaas_user = re.search(r'username\s*=\s*"([^"]*)"', b.get(jaas_name) or "") if jaas_name else None
    b.sections["kafka"].append(
        Entry(
            "sasl_username",
            jaas_user.group(1) if jaas_user else None,
            f"{jaas_name} (its username only)" if jaas_user else "no SASL JAAS config set",
            example="auditor",
        )
    )
    if jaas_name:
        b.secret(
            "Kafka SASL password",
            "AUDITOR_KAFKA_SASL_PASSWORD",
            f"AUDITOR_KAFKA_SASL_PASSWORD_FILE=path, [kafka] sasl_password_file; {jaas_name} is not read",
        )


def _schema_registry(b: _Planning) -> None:
    """[schema_registry]: a Confluent-compatible registry's URL (credentials left out)."""
    registry = b.get("KAFKA_SCHEMAREGISTRY_URL")
    registry_type = (b.get("SCHEMA_REGISTRY_TYPE") or "KAFKA").upper()
    if registry_type == "AWS_GLUE":
        return  # [schema_registry] type and [glue]: config/cloud.py
    notes = []
    if registry:
        registry, had_creds = _strip_userinfo(registry)
        if had_creds:
            notes.append("credentials in KAFKA_SCHEMAREGISTRY_URL not written: set the full URL at run time")
            b.secret(
                "schema registry URL with its credentials",
                "KAFKA_SCHEMAREGISTRY_URL",
                "KAFKA_SCHEMAREGISTRY_URL_FILE=path, [schema_registry] url_file",
            )
    elif registry_type == "INTERNAL":
        notes.append("SCHEMA_REGISTRY_TYPE=INTERNAL: GMS serves it at http://GMS:8080/schema-registry/api/")
    b.sections["schema_registry"].append(
        Entry(
            "url",
            registry or EXAMPLE["schema_registry_url"],
            "KAFKA_SCHEMAREGISTRY_URL" if registry else "KAFKA_SCHEMAREGISTRY_URL unset: example default",
            notes,
        )
    )


def _topics_and_group(b: _Planning) -> None:
    """[mcl] and [mae]: the change-log topics and the UpdateIndicesHook's group."""
    for key, name, datahub_default in (
        ("versioned_topic", "METADATA_CHANGE_LOG_VERSIONED_TOPIC_NAME", MCL_VERSIONED),
        ("timeseries_topic", "METADATA_CHANGE_LOG_TIMESERIES_TOPIC_NAME", MCL_TIMESERIES),
    ):
        value = b.get(name)
        b.sections["mcl"].append(
            Entry(key, value or datahub_default, name if value else f"{name} unset: DataHub's default")
        )
    base = b.get("METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID")
    suffix = b.get("UPDATE_INDICES_CONSUMER_GROUP_SUFFIX")
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
    b.sections["mae"].append(Entry("consumer_group", group, src, notes))


def render(p: Plan, now: datetime | None = None) -> str:
    return render_plan(p, "DataHub's environment variables (as set for GMS / datahub-upgrade)", now)
