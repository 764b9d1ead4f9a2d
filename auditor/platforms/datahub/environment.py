"""DataHub's own environment, as the auditor's configuration reads it: the variables GMS and its
jobs are given, honoured after each setting's own AUDITOR_* name (auditor.settings), and the
rule of its per-hook consumer groups. Light on purpose: the configuration loads it for every
command (through the registry, `auditor.platforms.environments`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auditor.settings.model import MAE_CONSUMER_GROUP

# setting -> DataHub's own variables for it, most specific first
NAMES: dict[str, tuple[str, ...]] = {
    "store_password": ("EBEAN_DATASOURCE_PASSWORD",),
    "search_username": ("ELASTICSEARCH_USERNAME",),
    "search_password": ("ELASTICSEARCH_PASSWORD",),
    # Amazon OpenSearch Service with IAM (SigV4); the old setup job's name after it
    "search_aws_iam": ("OPENSEARCH_USE_AWS_IAM_AUTH", "USE_AWS_ELASTICSEARCH"),
    "index_prefix": ("INDEX_PREFIX", "ELASTICSEARCH_INDEX_PREFIX"),
    "kafka_bootstrap": ("KAFKA_BOOTSTRAP_SERVER",),
    "kafka_security_protocol": ("KAFKA_PROPERTIES_SECURITY_PROTOCOL",),
    "kafka_sasl_mechanism": ("KAFKA_PROPERTIES_SASL_MECHANISM",),
    "schema_registry_url": ("KAFKA_SCHEMAREGISTRY_URL",),
    "schema_registry_type": ("SCHEMA_REGISTRY_TYPE",),  # KAFKA | INTERNAL | AWS_GLUE
    "glue_registry_name": ("AWS_GLUE_SCHEMA_REGISTRY_NAME",),
    "glue_region": ("AWS_GLUE_SCHEMA_REGISTRY_REGION",),
    # RDS/Aurora IAM tokens: the newer switch (with EBEAN_CLOUD_PROVIDER=aws), then the older
    # PostgreSQL-only one
    "store_aws_iam": ("EBEAN_USE_IAM_AUTH", "EBEAN_POSTGRES_USE_AWS_IAM_AUTH"),
    # kafka | pgqueue (DataHub's Kafka-less transport: docs/pgqueue.md)
    "transport": ("DATAHUB_MESSAGING_TRANSPORT",),
    "pgqueue_schema": ("DATAHUB_PGQUEUE_SCHEMA",),
    "pgqueue_table_prefix": ("DATAHUB_PGQUEUE_TABLE_PREFIX",),
    "mcl_versioned_topic": ("METADATA_CHANGE_LOG_VERSIONED_TOPIC_NAME",),
    "mcl_timeseries_topic": ("METADATA_CHANGE_LOG_TIMESERIES_TOPIC_NAME",),
    "mae_consumer_group": ("METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID",),
    "gms_url": ("DATAHUB_GMS_URL",),
}


# the settings only DataHub uses (the store, the search cluster, AWS, the state and the judging
# are every platform's): given to another platform, they are refused (auditor/settings_rules.py)
SETTINGS = frozenset(
    {
        "store_table",
        "index_prefix",
        "gms_url",
        "kafka_bootstrap",
        "kafka_security_protocol",
        "kafka_sasl_mechanism",
        "kafka_sasl_username",
        "kafka_sasl_password",
        "kafka_ssl_ca_location",
        "kafka_ssl_certificate_location",
        "kafka_ssl_key_location",
        "kafka_ssl_key_password",
        "kafka_ssl_endpoint_identification",
        "kafka_oauthbearer_token_file",
        "kafka_aws_role_arn",
        "schema_registry_url",
        "schema_registry_type",
        "schema_registry_user_info",
        "schema_registry_ca",
        "glue_registry_name",
        "glue_region",
        "transport",
        "pgqueue_url",
        "pgqueue_schema",
        "pgqueue_table_prefix",
        "mcl_versioned_topic",
        "mcl_timeseries_topic",
        "mae_consumer_group",
        "sample_window_seconds",
        "scan_prefetch",
    }
)


def adjust(merged: dict[str, Any], environ: Mapping[str, str], from_file: set[str]) -> None:
    """DataHub's UpdateIndicesHook consumes as `<base>-<suffix>` (a per-hook group) when
    UPDATE_INDICES_CONSUMER_GROUP_SUFFIX is set: the MAE group becomes that, unless the group
    was given as the auditor's own (AUDITOR_MAE_CONSUMER_GROUP, or the file without DataHub's
    variable)."""
    # EBEAN_USE_IAM_AUTH means RDS IAM only with EBEAN_CLOUD_PROVIDER aws (or auto, the default);
    # GCP's Cloud SQL IAM is not one the auditor speaks: its store URL needs a password
    provider = (environ.get("EBEAN_CLOUD_PROVIDER") or "auto").strip().lower()
    if (
        provider in ("gcp", "traditional")
        and not environ.get("AUDITOR_STORE_AWS_IAM")
        and "store_aws_iam" not in from_file
    ):
        merged.pop("store_aws_iam", None)
    suffix = environ.get("UPDATE_INDICES_CONSUMER_GROUP_SUFFIX")
    own = environ.get("AUDITOR_MAE_CONSUMER_GROUP") or (
        "mae_consumer_group" in from_file and not environ.get("METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID")
    )
    if suffix and not own:
        merged["mae_consumer_group"] = f"{merged.get('mae_consumer_group') or MAE_CONSUMER_GROUP}-{suffix}"
